package storeimpl

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/tollgate-dev/tollgate/internal/layerstore"
	"github.com/tollgate-dev/tollgate/store"
)

// Sealer seals decisions with a store's decision key and checks them, for
// implementations: a store seals every approval it writes decided
// ([Sealer.Seal]) and checks every approval it reads ([Sealer.Check]). The
// MAC is HMAC-SHA256 (RFC 2104) over a versioned JSON encoding of what a
// resume trusts: the approval's tenant, run, ID, call, tool, kind and
// arguments digest, its status, who decided and who acted for them, the
// reason, the answer's data and the expiry (to the microsecond). The
// decision's and use's times are not covered.
type Sealer struct{ key []byte }

// processKey is the decision key of stores opened without one.
var processKey = sync.OnceValue(func() []byte {
	k := make([]byte, keySize)
	if _, err := rand.Read(k); err != nil {
		panic(err) // crypto/rand does not fail on Linux (Go 1.24+)
	}
	return k
})

// NewSealer returns the sealer of a store opened with o: its DecisionKey,
// or this process's random key when there is none. Errors:
// [store.ErrInvalid] for a key that is not 32 bytes.
func NewSealer(o *store.Options) (*Sealer, error) {
	if o == nil || o.DecisionKey == nil {
		return &Sealer{key: processKey()}, nil
	}
	if len(o.DecisionKey) != keySize {
		return nil, fmt.Errorf("%w: the decision key is %d bytes, want %d", store.ErrInvalid, len(o.DecisionKey), keySize)
	}
	return &Sealer{key: append([]byte(nil), o.DecisionKey...)}, nil
}

// sealed is what a MAC covers. The field order is the encoding's; a change
// of it or of a field's meaning needs a new V.
type sealed struct {
	V         int    `json:"v"`
	Tenant    string `json:"tenant"`
	RunID     string `json:"runId"`
	ID        string `json:"id"`
	CallID    string `json:"callId"`
	Tool      string `json:"tool"`
	Kind      string `json:"kind"`
	Digest    string `json:"digest"`
	Status    string `json:"status"`
	DecidedBy string `json:"decidedBy"`
	Actor     string `json:"actor"`
	Reason    string `json:"reason"`
	Data      string `json:"data"`
	ExpiresAt int64  `json:"expiresAt"`
}

func (s *Sealer) mac(a store.Approval) string {
	v := sealed{V: 1, Tenant: a.Tenant, RunID: a.RunID, ID: a.ID, CallID: a.CallID, Tool: a.Tool, Kind: string(a.Kind),
		Digest: a.Digest, Status: string(a.Status), DecidedBy: PrincipalText(a.DecidedBy), Actor: PrincipalText(a.Actor),
		Reason: a.Reason, Data: string(a.Data)}
	if a.ExpiresAt != nil {
		v.ExpiresAt = a.ExpiresAt.UnixMicro()
	}
	b, _ := json.Marshal(v) // strings and numbers only: cannot fail
	h := hmac.New(sha256.New, s.key)
	h.Write([]byte("tollgate approval decision\x00"))
	h.Write(b)
	return base64.RawStdEncoding.EncodeToString(h.Sum(nil))
}

// Seal returns next, the approval a step of the state machine made of prev
// (as the store read and checked it), with its MAC: a pending one gets
// none, a decided one (approved, denied, expired, used) a MAC of its
// current fields. A step from an unverified approval stays unverified and
// keeps the MAC it had: sealing never makes a decision tollgate did not
// make valid.
func (s *Sealer) Seal(prev, next store.Approval) store.Approval {
	switch {
	case prev.Unverified && prev.Status != store.StatusPending:
		next.MAC, next.Unverified = prev.MAC, true
	case next.Status == store.StatusPending:
		next.MAC, next.Unverified = "", false
	default:
		next.MAC, next.Unverified = s.mac(next), false
	}
	return next
}

// Check returns a as read from the store, with Unverified set when it is
// decided and its MAC is missing or wrong.
func (s *Sealer) Check(a store.Approval) store.Approval {
	a.Unverified = a.Status != store.StatusPending && !hmac.Equal([]byte(a.MAC), []byte(s.mac(a)))
	return a
}

// sealedRule is what a layer rule's MAC covers. The field order is the
// encoding's; a change of it or of a field's meaning needs a new V.
type sealedRule struct {
	V          int    `json:"v"`
	Tenant     string `json:"tenant"`
	ID         string `json:"id"`
	Text       string `json:"text"`
	Effect     string `json:"effect"`
	Status     string `json:"status"`
	AcceptedBy string `json:"acceptedBy"`
	Version    int64  `json:"version"`
}

func (s *Sealer) ruleMAC(r layerstore.LayerRule) string {
	b, _ := json.Marshal(sealedRule{V: 1, Tenant: r.Tenant, ID: r.ID, Text: r.Text, Effect: r.Effect, Status: string(r.Status),
		AcceptedBy: PrincipalText(r.AcceptedBy), Version: r.Version}) // strings and numbers only: cannot fail
	h := hmac.New(sha256.New, s.key)
	h.Write([]byte("tollgate layer rule\x00"))
	h.Write(b)
	return base64.RawStdEncoding.EncodeToString(h.Sum(nil))
}

// SealLayerRule returns r with its MAC: an accepted rule gets the MAC of
// its tenant, ID, text, effect, status, who accepted it and the version
// its acceptance made; a proposed or removed one gets none.
func (s *Sealer) SealLayerRule(r layerstore.LayerRule) layerstore.LayerRule {
	r.MAC = ""
	if r.Status == layerstore.LayerAccepted {
		r.MAC = s.ruleMAC(r)
	}
	return r
}

// CheckLayerRule reports whether r, an accepted rule as read from the
// store, carries a valid MAC: false for a rule written into the database
// directly, altered there, accepted by a process with another store key,
// or accepted before tollgate sealed the layer. A rule that is not
// accepted is not checked (it applies to nothing).
func (s *Sealer) CheckLayerRule(r layerstore.LayerRule) bool {
	return r.Status != layerstore.LayerAccepted || hmac.Equal([]byte(r.MAC), []byte(s.ruleMAC(r)))
}

// SplitSealed is for implementations of [layerstore.Layers.GetLayer]: it moves the
// accepted rules of l whose MAC is missing or wrong ([Sealer.CheckLayerRule])
// from Rules to Unsealed, so that they apply to nothing.
func (s *Sealer) SplitSealed(l layerstore.Layer) layerstore.Layer {
	rules := l.Rules[:0:0]
	for _, r := range l.Rules {
		if s.CheckLayerRule(r) {
			rules = append(rules, r)
		} else {
			l.Unsealed = append(l.Unsealed, r)
		}
	}
	l.Rules = rules
	return l
}

// keySize is the size of a decision key, in bytes: 32, the size of an
// HMAC-SHA256 key that is as strong as the hash (RFC 2104, section 3).
const keySize = 32
