package runcore

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/layer"
	"github.com/tollgate-dev/tollgate/internal/layerstore"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/tool"
)

// versionReads counts the reads of the layer's version.
type versionReads struct {
	layerstore.Layers
	n atomic.Int64
}

func (v *versionReads) LayerVersion(ctx context.Context, tenant string) (int64, error) {
	v.n.Add(1)
	return v.Layers.LayerVersion(ctx, tenant)
}

// oneTool is the gate's tools: bash alone.
type oneTool struct{ t tool.Tool }

func (o oneTool) Tool(name string) (tool.Tool, bool) { return o.t, name == o.t.Spec().Name }
func (o oneTool) Names() []string                    { return []string{o.t.Spec().Name} }

// An ask reads the rule layer's version once (the authorizer's read is the
// Permission hook's), and a rule accepted between two asks answers the
// next one, a new call's and the same call's decided again.
func TestLayerVotesReadOncePerAsk(t *testing.T) {
	ctx := context.Background()
	ls := &versionReads{Layers: memory.New(nil).(layerstore.Layers)}
	asks := approval.AuthorizerFunc(func(context.Context, approval.Call) (approval.Verdict, error) {
		return approval.Verdict{Decision: approval.Ask, Reason: "a person decides"}, nil
	})
	azs, hs := LayerVotes([]approval.Authorizer{asks}, nil, NewLayerSource(ls).Getter("acme", ""))
	g := gate.New(&gate.Options{Authorizers: azs, Hooks: hs})
	env := &gate.Env{Tools: oneTool{&testkit.Counter{Name: "bash"}}}
	args := json.RawMessage(`{"command":"ls"}`)
	decide := func(id string) gate.Ruling {
		return g.Decide(ctx, env, gate.Call{ID: id, Name: "bash", Args: args, RunID: "run_1"}, nil, nil)
	}
	if ru := decide("c1"); ru.Pending == nil {
		t.Fatalf("before the rule: %+v, want an ask", ru)
	}
	if n := ls.n.Load(); n != 1 {
		t.Errorf("the ask read the layer's version %d times, want 1", n)
	}
	p, err := layer.Propose("r1", "bash", args, approval.Allow, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ls.ProposeLayerRule(ctx, layerstore.LayerRule{ID: p.ID, Tenant: "acme", Text: p.Text, Effect: "allow", Tool: "bash", ProposedBy: tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ls.AcceptLayerRule(ctx, "acme", "r1", tool.Principal{Kind: tool.PrincipalPerson, Name: "ada"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"c2", "c1"} {
		if ru := decide(id); ru.Allowed == nil || ru.Allowed.Record.Decision.By.Name != layer.HookName {
			t.Errorf("%s after the rule: %+v, want allowed by the layer", id, ru)
		}
	}
}
