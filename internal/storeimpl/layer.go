package storeimpl

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tollgate-dev/tollgate/internal/layerstore"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// Limits on the rule layer.
const (
	// MaxLayerRuleText is the longest rule text, in bytes.
	MaxLayerRuleText = 16 << 10
	// MaxLayerRuleID is the longest rule ID, in bytes.
	MaxLayerRuleID = 128
	// MaxLayerRules is how many rules (proposed and accepted) one tenant's
	// layer holds at most; a proposal past it is [store.ErrInvalid].
	MaxLayerRules = 1000
)

// CheckLayerRule validates a proposal, for implementations ([store.ErrInvalid]).
func CheckLayerRule(r layerstore.LayerRule) error {
	switch {
	case r.ID == "" || len(r.ID) > MaxLayerRuleID || strings.IndexFunc(r.ID, badIDRune) >= 0:
		return fmt.Errorf("%w: layer rule ID %q: want 1 to %d letters, digits, '-', '_' or '.'", store.ErrInvalid, r.ID, MaxLayerRuleID)
	case r.Text == "" || len(r.Text) > MaxLayerRuleText || !utf8.ValidString(r.Text):
		return fmt.Errorf("%w: layer rule %s: text must be UTF-8, 1 to %d bytes", store.ErrInvalid, r.ID, MaxLayerRuleText)
	case r.Effect != "allow" && r.Effect != "deny":
		return fmt.Errorf("%w: layer rule %s: effect %q is not allow or deny", store.ErrInvalid, r.ID, r.Effect)
	case len(r.Tool) > 256 || len(r.Source) > 512:
		return fmt.Errorf("%w: layer rule %s: tool or source too long", store.ErrInvalid, r.ID)
	}
	return checkLayerPrincipal("ProposedBy", r.ProposedBy)
}

func badIDRune(r rune) bool {
	return !(r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' || r == '.'))
}

// CheckLayerPrincipal validates who changes a layer, for implementations
// ([store.ErrInvalid]).
func CheckLayerPrincipal(by tool.Principal) error { return checkLayerPrincipal("by", by) }

func checkLayerPrincipal(field string, by tool.Principal) error {
	if err := checkAnswer(store.Answer{By: by}); err != nil {
		return fmt.Errorf("%w (layer change %s)", err, field)
	}
	return nil
}

// ApplyLayerChange is the state machine of [layerstore.Layers.AcceptLayerRule] and
// [layerstore.Layers.RemoveLayerRule], for implementations: given the stored rule,
// the layer's current version and the time, it returns the rule as it
// must be stored and the change to append, or the error to return.
func ApplyLayerChange(r layerstore.LayerRule, action layerstore.LayerAction, version int64, by tool.Principal, now time.Time) (layerstore.LayerRule, layerstore.LayerChange, error) {
	if err := CheckLayerPrincipal(by); err != nil {
		return r, layerstore.LayerChange{}, err
	}
	switch {
	case action == layerstore.LayerAccept && r.Status != layerstore.LayerProposed:
		return r, layerstore.LayerChange{}, fmt.Errorf("%w: layer rule %s is %s, not proposed", store.ErrDecided, r.ID, r.Status)
	case action == layerstore.LayerRemove && r.Status == layerstore.LayerRemoved:
		return r, layerstore.LayerChange{}, fmt.Errorf("%w: layer rule %s was removed already", store.ErrDecided, r.ID)
	case action != layerstore.LayerAccept && action != layerstore.LayerRemove:
		return r, layerstore.LayerChange{}, fmt.Errorf("%w: layer action %q", store.ErrInvalid, action)
	}
	t := now
	if action == layerstore.LayerAccept {
		r.Status, r.AcceptedBy, r.AcceptedAt, r.Version = layerstore.LayerAccepted, by, &t, version+1
	} else {
		r.Status, r.RemovedBy, r.RemovedAt = layerstore.LayerRemoved, by, &t
	}
	c := layerstore.LayerChange{Tenant: r.Tenant, Version: version + 1, Action: action, RuleID: r.ID, Text: r.Text, Effect: r.Effect, Tool: r.Tool, By: by, At: now}
	return r, c, nil
}
