package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/layerstore"
	"github.com/tollgate-dev/tollgate/store/sqlite"
	"github.com/tollgate-dev/tollgate/tool"
)

// BenchmarkGetLayer is what every decision of a run pays to read its
// tenant's rule layer: 20 accepted rules.
func BenchmarkGetLayer(b *testing.B) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "tollgate.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	s := st.(layerstore.Layers)
	ada := tool.Principal{Kind: tool.PrincipalPerson, Name: "ada"}
	for i := range 20 {
		id := fmt.Sprintf("r%d", i)
		r := layerstore.LayerRule{ID: id, Tenant: "acme", Effect: "allow", Tool: "bash", ProposedBy: ada,
			Text: "rules:\n  - id: " + id + "\n    tool: bash\n    command: {pattern: [\"go test *\"]}\n    decision: allow\n"}
		if _, err := s.ProposeLayerRule(ctx, r); err != nil {
			b.Fatal(err)
		}
		if _, err := s.AcceptLayerRule(ctx, "acme", id, ada); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if l, err := s.GetLayer(ctx, "acme"); err != nil || len(l.Rules) != 20 {
			b.Fatal(l, err)
		}
	}
}

// BenchmarkLayerVersion is what a decision pays once its tenant's layer
// is compiled (internal/runcore's LayerSource): one read of the version.
func BenchmarkLayerVersion(b *testing.B) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "tollgate.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	s := st.(layerstore.Layers)
	ada := tool.Principal{Kind: tool.PrincipalPerson, Name: "ada"}
	r := layerstore.LayerRule{ID: "r1", Tenant: "acme", Effect: "allow", Tool: "bash", ProposedBy: ada, Text: "rules:\n  - id: r1\n    decision: allow\n"}
	if _, err := s.ProposeLayerRule(ctx, r); err != nil {
		b.Fatal(err)
	}
	if _, err := s.AcceptLayerRule(ctx, "acme", "r1", ada); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if v, err := s.LayerVersion(ctx, "acme"); err != nil || v != 1 {
			b.Fatal(v, err)
		}
	}
}
