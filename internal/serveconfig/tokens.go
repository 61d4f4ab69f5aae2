package serveconfig

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/tollgate-dev/tollgate/server"
)

// TokenPrefix starts every token [NewToken] makes, so that a leaked one is
// easy to find with a secret scanner.
const TokenPrefix = "tg_"

// NewToken returns a new random bearer token (TokenPrefix and 64 hex
// digits, 256 bits) and its SHA-256 as [HashToken] gives it: the hash goes
// in the tokens file, the token to its holder only.
func NewToken() (token, hash string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	token = TokenPrefix + hex.EncodeToString(b)
	return token, HashToken(token), nil
}

// HashToken returns the lowercase hex SHA-256 of a token, as the tokens file
// stores it (the same as `printf %s TOKEN | sha256sum`).
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Tokens maps the SHA-256 of bearer tokens to principals. The tokens
// themselves are never kept. Build one with [NewTokens] or [LoadTokens].
type Tokens struct {
	byHash map[string]server.Principal
}

// TokenEntry is one token of a tokens file: the SHA-256 of the token (64
// hex digits) and the principal it stands for.
type TokenEntry struct {
	SHA256 string        `yaml:"sha256" json:"sha256"`
	Name   string        `yaml:"name" json:"name"`
	Tenant string        `yaml:"tenant" json:"tenant"`
	Roles  []server.Role `yaml:"roles" json:"roles"`
}

// NewTokens checks entries and returns the token table. Errors name the entry
// (from 0): a hash that is not 64 hex digits, an empty name, no role or an
// unknown one, a hash listed twice.
func NewTokens(entries []TokenEntry) (*Tokens, error) {
	t := &Tokens{byHash: map[string]server.Principal{}}
	for i, e := range entries {
		h := strings.ToLower(e.SHA256)
		if b, err := hex.DecodeString(h); err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("tokens[%d]: sha256: want the 64 hex digits of the token's SHA-256 (tollgate serve token makes one)", i)
		}
		if e.Name == "" || strings.ContainsFunc(e.Name, isControlOrSpace) {
			return nil, fmt.Errorf("tokens[%d]: name: want a non-empty name without spaces or control characters", i)
		}
		if strings.ContainsFunc(e.Tenant, isControlOrSpace) {
			return nil, fmt.Errorf("tokens[%d]: tenant %q: no spaces or control characters", i, e.Tenant)
		}
		if len(e.Roles) == 0 {
			return nil, fmt.Errorf("tokens[%d]: roles: want at least one of viewer, approver, operator, admin, agent", i)
		}
		for _, r := range e.Roles {
			if !validRole(r) {
				return nil, fmt.Errorf("tokens[%d]: roles: unknown role %q (want viewer, approver, operator, admin or agent)", i, r)
			}
		}
		if _, dup := t.byHash[h]; dup {
			return nil, fmt.Errorf("tokens[%d]: the same token hash is listed twice", i)
		}
		t.byHash[h] = server.Principal{Name: e.Name, Tenant: e.Tenant, Roles: slices.Clone(e.Roles)}
	}
	return t, nil
}

func isControlOrSpace(r rune) bool { return r <= ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0) }

// Lookup returns the principal of a bearer token.
func (t *Tokens) Lookup(token string) (server.Principal, bool) {
	if t == nil || token == "" || len(token) > maxTokenLen {
		return server.Principal{}, false
	}
	p, ok := t.byHash[HashToken(token)]
	return p, ok
}

// Len returns how many tokens the table holds.
func (t *Tokens) Len() int {
	if t == nil {
		return 0
	}
	return len(t.byHash)
}

// Tenants returns the tenants of the table's principals, sorted, each
// once ("" is the default tenant).
func (t *Tokens) Tenants() []string {
	if t == nil {
		return nil
	}
	var out []string
	for _, p := range t.byHash {
		if !slices.Contains(out, p.Tenant) {
			out = append(out, p.Tenant)
		}
	}
	slices.Sort(out)
	return out
}

// maxTokenLen bounds a token Lookup hashes.
const maxTokenLen = 512

// validRole reports whether r is one of the server's five roles.
func validRole(r server.Role) bool {
	switch r {
	case server.RoleViewer, server.RoleApprover, server.RoleOperator, server.RoleAdmin, server.RoleAgent:
		return true
	}
	return false
}
