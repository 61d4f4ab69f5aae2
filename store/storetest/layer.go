package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/layerstore"
	"github.com/tollgate-dev/tollgate/internal/storeimpl"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// layerTests are the parts of the suite about the rule layer
// ([layerstore.Layers]): proposals, versions, history, tenants.
var layerTests = []struct {
	name string
	fn   func(t *testing.T, s store.Store, c *clock)
}{
	{"LayerLifecycle", testLayerLifecycle},
	{"LayerTenants", testLayerTenants},
	{"LayerRefusals", testLayerRefusals},
	{"LayerConcurrentAccept", testLayerConcurrentAccept},
}

func layers(t *testing.T, s store.Store) layerstore.Layers {
	t.Helper()
	l, ok := s.(layerstore.Layers)
	if !ok {
		t.Fatalf("%T does not implement layerstore.Layers", s)
	}
	return l
}

var (
	alice = tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}
	bob   = tool.Principal{Kind: tool.PrincipalPerson, Name: "bob"}
)

func layerRule(tenant, id, effect string) layerstore.LayerRule {
	return layerstore.LayerRule{ID: id, Tenant: tenant, Effect: effect, Tool: "bash", Source: "run_1/req_1",
		Text: "rules:\n  - id: " + id + "\n    tool: bash\n    decision: " + effect + "\n", ProposedBy: bob}
}

func testLayerLifecycle(t *testing.T, s store.Store, c *clock) {
	ctx := context.Background()
	l := layers(t, s)
	empty, err := l.GetLayer(ctx, "acme")
	if err != nil || empty.Version != 0 || len(empty.Rules) != 0 || len(empty.Proposed) != 0 {
		t.Fatalf("empty layer = %+v, %v", empty, err)
	}
	p, err := l.ProposeLayerRule(ctx, layerRule("acme", "r1", "allow"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != layerstore.LayerProposed || !p.ProposedAt.Equal(c.Now()) || p.ProposedBy != bob {
		t.Fatalf("proposal = %+v", p)
	}
	if _, err := l.ProposeLayerRule(ctx, layerRule("acme", "r2", "deny")); err != nil {
		t.Fatal(err)
	}
	got, _ := l.GetLayer(ctx, "acme")
	if got.Version != 0 || len(got.Rules) != 0 || len(got.Proposed) != 2 {
		t.Fatalf("proposals change no version: %+v", got)
	}
	c.Advance(time.Minute)
	ch, err := l.AcceptLayerRule(ctx, "acme", "r2", alice)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Version != 1 || ch.Action != layerstore.LayerAccept || ch.RuleID != "r2" || ch.By != alice || !ch.At.Equal(c.Now()) || ch.Effect != "deny" {
		t.Fatalf("change = %+v", ch)
	}
	c.Advance(time.Minute)
	if ch, err = l.AcceptLayerRule(ctx, "acme", "r1", alice); err != nil || ch.Version != 2 {
		t.Fatalf("second accept = %+v, %v", ch, err)
	}
	got, _ = l.GetLayer(ctx, "acme")
	if got.Version != 2 || len(got.Rules) != 2 || len(got.Proposed) != 0 {
		t.Fatalf("layer = %+v", got)
	}
	if r := got.Rules[0]; r.ID != "r2" || r.Version != 1 || r.AcceptedBy != alice || r.AcceptedAt == nil || r.Text != layerRule("acme", "r2", "deny").Text {
		t.Fatalf("first accepted rule = %+v", r)
	}
	if _, err := l.AcceptLayerRule(ctx, "acme", "r1", alice); !errors.Is(err, store.ErrDecided) {
		t.Fatalf("accepting twice: %v, want ErrDecided", err)
	}
	c.Advance(time.Minute)
	if ch, err = l.RemoveLayerRule(ctx, "acme", "r2", bob); err != nil || ch.Version != 3 || ch.Action != layerstore.LayerRemove || ch.By != bob {
		t.Fatalf("remove = %+v, %v", ch, err)
	}
	if _, err := l.RemoveLayerRule(ctx, "acme", "r2", bob); !errors.Is(err, store.ErrDecided) {
		t.Fatalf("removing twice: %v, want ErrDecided", err)
	}
	got, _ = l.GetLayer(ctx, "acme")
	if got.Version != 3 || len(got.Rules) != 1 || got.Rules[0].ID != "r1" {
		t.Fatalf("layer after removal = %+v", got)
	}
	if v, err := l.LayerVersion(ctx, "acme"); err != nil || v != 3 {
		t.Fatalf("LayerVersion = %d, %v, want 3", v, err)
	}
	if v, err := l.LayerVersion(ctx, "globex"); err != nil || v != 0 {
		t.Fatalf("another tenant's LayerVersion = %d, %v, want 0", v, err)
	}
	hist, err := l.LayerHistory(ctx, "acme", 0)
	if err != nil {
		t.Fatal(err)
	}
	var summary []string
	for _, h := range hist {
		summary = append(summary, fmt.Sprintf("v%d %s %s by %s", h.Version, h.Action, h.RuleID, h.By))
	}
	want := "[v3 remove r2 by person:bob v2 accept r1 by person:alice v1 accept r2 by person:alice]"
	if fmt.Sprint(summary) != want {
		t.Fatalf("history = %v, want %s", summary, want)
	}
	if hist, _ := l.LayerHistory(ctx, "acme", 1); len(hist) != 1 || hist[0].Version != 3 {
		t.Fatalf("history limit 1 = %+v", hist)
	}
	if _, err := l.LayerHistory(ctx, "acme", -1); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("negative limit: %v", err)
	}
}

func testLayerTenants(t *testing.T, s store.Store, c *clock) {
	ctx := context.Background()
	l := layers(t, s)
	if _, err := l.ProposeLayerRule(ctx, layerRule("acme", "r1", "allow")); err != nil {
		t.Fatal(err)
	}
	// The same ID in another tenant is another rule.
	if _, err := l.ProposeLayerRule(ctx, layerRule("globex", "r1", "deny")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AcceptLayerRule(ctx, "globex", "r1", alice); err != nil {
		t.Fatal(err)
	}
	acme, _ := l.GetLayer(ctx, "acme")
	if acme.Version != 0 || len(acme.Rules) != 0 || len(acme.Proposed) != 1 || acme.Proposed[0].Effect != "allow" {
		t.Fatalf("acme's layer = %+v (globex's change leaked)", acme)
	}
	if _, err := l.AcceptLayerRule(ctx, "initech", "r1", alice); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("accepting another tenant's rule: %v, want ErrNotFound", err)
	}
	if _, err := l.RemoveLayerRule(ctx, "", "r1", alice); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("removing another tenant's rule: %v, want ErrNotFound", err)
	}
	if h, _ := l.LayerHistory(ctx, "acme", 0); len(h) != 0 {
		t.Fatalf("acme's history = %+v", h)
	}
}

func testLayerRefusals(t *testing.T, s store.Store, c *clock) {
	ctx := context.Background()
	l := layers(t, s)
	for name, r := range map[string]layerstore.LayerRule{
		"no id":  func() layerstore.LayerRule { r := layerRule("", "", "allow"); return r }(),
		"bad id": layerRule("", "a b", "allow"),
		"ask":    layerRule("", "r", "ask"),
		"no proposer": func() layerstore.LayerRule {
			r := layerRule("", "r", "allow")
			r.ProposedBy = tool.Principal{}
			return r
		}(),
		"no text": func() layerstore.LayerRule { r := layerRule("", "r", "allow"); r.Text = ""; return r }(),
		"huge text": func() layerstore.LayerRule {
			r := layerRule("", "r", "allow")
			r.Text = string(make([]byte, storeimpl.MaxLayerRuleText+1))
			return r
		}(),
	} {
		if _, err := l.ProposeLayerRule(ctx, r); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if _, err := l.ProposeLayerRule(ctx, layerRule("", "r", "allow")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ProposeLayerRule(ctx, layerRule("", "r", "deny")); !errors.Is(err, store.ErrExists) {
		t.Errorf("taken ID: %v, want ErrExists", err)
	}
	if _, err := l.AcceptLayerRule(ctx, "", "r", tool.Principal{}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("accept by no one: %v, want ErrInvalid", err)
	}
	if _, err := l.AcceptLayerRule(ctx, "", "nope", alice); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown rule: %v, want ErrNotFound", err)
	}
	if got, _ := l.GetLayer(ctx, ""); got.Version != 0 {
		t.Errorf("refused changes made version %d", got.Version)
	}
}

// testLayerConcurrentAccept: accepting one proposal from many goroutines
// makes exactly one version.
func testLayerConcurrentAccept(t *testing.T, s store.Store, c *clock) {
	ctx := context.Background()
	l := layers(t, s)
	for i := range 4 {
		if _, err := l.ProposeLayerRule(ctx, layerRule("acme", fmt.Sprintf("r%d", i), "allow")); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := map[string]int{}
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("r%d", g%4)
			_, err := l.AcceptLayerRule(ctx, "acme", id, alice)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins[id]++
			case !errors.Is(err, store.ErrDecided):
				t.Errorf("accept %s: %v", id, err)
			}
		}()
	}
	wg.Wait()
	got, _ := l.GetLayer(ctx, "acme")
	if got.Version != 4 || len(got.Rules) != 4 || len(wins) != 4 {
		t.Fatalf("layer = version %d, %d rules; wins %v", got.Version, len(got.Rules), wins)
	}
	for id, n := range wins {
		if n != 1 {
			t.Errorf("%s accepted %d times", id, n)
		}
	}
}
