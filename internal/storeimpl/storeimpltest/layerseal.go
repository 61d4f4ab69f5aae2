// Package storeimpltest checks what tollgate's own store adapters share
// beyond the public suite (package storetest): that the rule layer's seal
// holds against a writer without the store's key. [Calls] notes what a
// host or a server asks of its store, for tests that count it.
package storeimpltest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/layerstore"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

var alice = tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}

func layerRule(tenant, id, effect string) layerstore.LayerRule {
	return layerstore.LayerRule{ID: id, Tenant: tenant, Effect: effect, Tool: "bash", Source: "run_1/req_1",
		Text:       "rules:\n  - id: " + id + "\n    tool: bash\n    decision: " + effect + "\n",
		ProposedBy: tool.Principal{Kind: tool.PrincipalPerson, Name: "bob"}}
}

// Forgery is what [RunLayerSeal] asks a store's test to write straight
// into its database, as a writer without the store's key would.
type Forgery struct {
	// Insert is a rule to insert as accepted (with Insert.MAC, the MAC of
	// another accepted rule, copied), with a change of the layer for it.
	Insert layerstore.LayerRule
	// AlterID is an accepted rule whose text is to be set to AlterText.
	AlterID, AlterText string
}

// RunLayerSeal checks that a store seals the rules it accepts and that
// GetLayer reports, and never returns as rules, accepted rules written or
// altered by a writer without its key: tamper writes f into s's database.
func RunLayerSeal(t *testing.T, s store.Store, tamper func(t *testing.T, f Forgery)) {
	ctx := context.Background()
	l, ok := s.(layerstore.Layers)
	if !ok {
		t.Fatalf("%T does not implement layerstore.Layers", s)
	}
	for _, id := range []string{"sealed", "altered"} {
		if _, err := l.ProposeLayerRule(ctx, layerRule("acme", id, "allow")); err != nil {
			t.Fatal(err)
		}
		if _, err := l.AcceptLayerRule(ctx, "acme", id, alice); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.ProposeLayerRule(ctx, layerRule("acme", "removed", "deny")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.RemoveLayerRule(ctx, "acme", "removed", alice); err != nil {
		t.Fatal(err)
	}
	before, err := l.GetLayer(ctx, "acme")
	if err != nil || len(before.Rules) != 2 || len(before.Unsealed) != 0 {
		t.Fatalf("layer before = %+v, %v; want 2 sealed rules", before, err)
	}
	forged := layerRule("acme", "forged", "allow")
	forged.Status, forged.AcceptedBy, forged.Version, forged.MAC = layerstore.LayerAccepted, alice, before.Version+1, before.Rules[0].MAC
	at := time.Now().UTC().Truncate(time.Second)
	forged.ProposedAt, forged.AcceptedAt = at, &at
	tamper(t, Forgery{Insert: forged, AlterID: "altered", AlterText: "rules:\n  - id: altered\n    tool: '*'\n    decision: allow\n"})
	after, err := l.GetLayer(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	var rules, unsealed []string
	for _, r := range after.Rules {
		rules = append(rules, r.ID)
	}
	for _, r := range after.Unsealed {
		unsealed = append(unsealed, r.ID)
	}
	if fmt.Sprint(rules) != "[sealed]" || fmt.Sprint(unsealed) != "[altered forged]" {
		t.Errorf("after the forgery: rules %v, unsealed %v; want [sealed], [altered forged]", rules, unsealed)
	}
}
