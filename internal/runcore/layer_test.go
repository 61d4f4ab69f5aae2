package runcore

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/layer"
	"github.com/tollgate-dev/tollgate/internal/layerstore"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/tool"
)

// WithLayer gives each run its tenant's layer and never changes the hooks
// the builder shares between runs.
func TestWithLayerPerTenant(t *testing.T) {
	ctx := context.Background()
	mem := memory.New(nil).(layerstore.Layers)
	p, err := layer.Propose("r1", "bash", json.RawMessage(`{"command":"ls"}`), approval.Deny, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mem.ProposeLayerRule(ctx, layerstore.LayerRule{ID: p.ID, Tenant: "acme", Text: p.Text, Effect: "deny", Tool: "bash", ProposedBy: tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.AcceptLayerRule(ctx, "acme", "r1", tool.Principal{Kind: tool.PrincipalPerson, Name: "ada"}); err != nil {
		t.Fatal(err)
	}
	shared := &hooks.Hooks{}
	b := WithLayer(BuilderFunc(func(ctx context.Context, cfg RunConfig) (*Built, error) {
		return &Built{Options: agent.Options{Hooks: shared}}, nil
	}), mem)
	call := approval.Call{Tool: "bash", Args: json.RawMessage(`{"command":"ls -la"}`)}
	for tenant, want := range map[string]approval.Effect{"acme": approval.Deny, "globex": approval.Allow} {
		built, err := b.Build(WithBuildTenant(ctx, tenant), RunConfig{})
		if err != nil {
			t.Fatal(err)
		}
		azs := built.Options.Authorizers
		if len(azs) != 1 {
			t.Fatalf("%s: %d authorizers", tenant, len(azs))
		}
		if v, err := azs[0].Authorize(ctx, call); err != nil || v.Decision != want {
			t.Errorf("%s: %+v %v, want %s", tenant, v, err, want)
		}
		if len(built.Options.Hooks.Chain(hooks.StagePermission)) != 1 {
			t.Errorf("%s: the layer's Permission hook is missing", tenant)
		}
	}
	if len(shared.Chain(hooks.StagePermission)) != 0 {
		t.Error("the builder's shared hooks got the layer's hook")
	}
}
