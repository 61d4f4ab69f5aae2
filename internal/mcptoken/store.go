// Package mcptoken keeps the OAuth logins to MCP servers that package
// mcptool's OAuth handler makes (mcptool.OAuthOptions.Dir): one 0600 file per
// server URL in a 0700 directory, and a directory of its own per tenant
// for a host that runs for many.
package mcptoken

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/oauth2"
)

// maxLoginBytes bounds a stored login file.
const maxLoginBytes = 64 << 10

// Login is an OAuth login to one MCP server, as [Store] keeps it: the
// client the authorization server knows tollgate as, and the token it gave.
type Login struct {
	// Resource is the URL of the MCP server the token was issued for; the
	// token is sent nowhere else.
	Resource string `json:"resource"`
	// TokenURL is the authorization server's token endpoint, for refreshes.
	TokenURL string `json:"tokenUrl"`
	// AuthURL is the authorization server's authorization endpoint.
	AuthURL string `json:"authUrl,omitempty"`
	// AuthStyle is how the client authenticates at the token endpoint
	// (golang.org/x/oauth2.AuthStyle: 0 auto, 1 in the body, 2 HTTP Basic).
	AuthStyle oauth2.AuthStyle `json:"authStyle,omitempty"`
	// ClientID and ClientSecret are the client's (pre-registered, dynamic
	// or a metadata document's URL); the secret may be empty.
	ClientID     string `json:"clientId"`
	ClientSecret string `json:"clientSecret,omitempty"`
	// Scopes are the scopes asked for.
	Scopes []string `json:"scopes,omitempty"`
	// Token is the access token with its refresh token and expiry.
	Token *oauth2.Token `json:"token"`
}

// LoginOf is the login of resource that the client cfg got with tok.
func LoginOf(resource string, cfg *oauth2.Config, tok *oauth2.Token) *Login {
	return &Login{Resource: resource, TokenURL: cfg.Endpoint.TokenURL, AuthURL: cfg.Endpoint.AuthURL,
		AuthStyle: cfg.Endpoint.AuthStyle, ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret,
		Scopes: cfg.Scopes, Token: tok}
}

// Config is the oauth2 configuration that refreshes l's token.
func (l *Login) Config() *oauth2.Config {
	return &oauth2.Config{ClientID: l.ClientID, ClientSecret: l.ClientSecret, Scopes: l.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: l.AuthURL, TokenURL: l.TokenURL, AuthStyle: l.AuthStyle}}
}

// Store keeps OAuth logins in a directory, one file per MCP server URL
// (named by the SHA-256 of the URL): the directory is made 0700 and each
// file is written 0600 through a new file renamed into place, so that a
// link planted at its name is replaced, never written through. A login is
// found only under the URL it was issued for. The files hold secrets: they
// are never logged and the directory must be outside every workspace a tool
// can read (tollgate keeps it in its state directory).
type Store struct {
	// Dir is the directory of the files.
	Dir string
}

// Path is the file of the login of resource.
func (s *Store) Path(resource string) string {
	sum := sha256.Sum256([]byte(resource))
	return filepath.Join(s.Dir, hex.EncodeToString(sum[:16])+".json")
}

// Load returns the login saved for the server at resource, or nil when there
// is none. It fails on a file that is not a login for resource, over 64 KiB,
// or readable by others than its owner (whose token may have leaked: log in
// again).
func (s *Store) Load(resource string) (*Login, error) {
	f, err := os.Open(s.Path(resource))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("OAuth login: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("OAuth login: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("OAuth login %s: mode %v lets others read it; delete it and log in again", f.Name(), fi.Mode().Perm())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxLoginBytes+1))
	if err != nil {
		return nil, fmt.Errorf("OAuth login: %w", err)
	}
	if len(b) > maxLoginBytes {
		return nil, fmt.Errorf("OAuth login %s: over %d bytes", f.Name(), maxLoginBytes)
	}
	var l Login
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("OAuth login %s: %v", f.Name(), err)
	}
	if l.Resource != resource || l.Token == nil || l.TokenURL == "" {
		return nil, fmt.Errorf("OAuth login %s: not a login for %s; delete it and log in again", f.Name(), resource)
	}
	return &l, nil
}

// Save writes l under l.Resource, replacing what was there.
func (s *Store) Save(l *Login) error {
	if l == nil || l.Resource == "" {
		return errors.New("OAuth login: no resource")
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(s.Dir, ".login-*")
	if err != nil {
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), s.Path(l.Resource))
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

// Delete removes the login saved for resource; none is not an error.
func (s *Store) Delete(resource string) error {
	err := os.Remove(s.Path(resource))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// TenantDir returns the directory of the OAuth logins of tenant under dir: a
// directory of its own (named by the SHA-256 of the tenant's name, under
// dir/tenants), so that one tenant's runs never find another's tokens. A
// server or worker that runs for many tenants keeps their logins so
// (tollgate serve, tollgate worker).
func TenantDir(dir, tenant string) string {
	sum := sha256.Sum256([]byte(tenant))
	return filepath.Join(dir, "tenants", hex.EncodeToString(sum[:16]))
}
