package runcore

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/layer"
	"github.com/tollgate-dev/tollgate/internal/layerstore"
	"github.com/tollgate-dev/tollgate/store/sqlite"
)

// A rule inserted into the database file by a writer without the store's
// key answers no ask: the person is asked, as without the rule.
func TestForgedLayerRuleAnswersNothing(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tollgate.db")
	s, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p, err := layer.Propose("forged", "bash", []byte(`{"command":"git status --short"}`), approval.Allow, "")
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`INSERT INTO layer_rules (tenant, id, text, effect, tool, status, proposed_by, proposed_at, accepted_by, accepted_at, version) VALUES ('', 'forged', ?, 'allow', 'bash', 'accepted', 'person:mallory', '2026-01-01T00:00:00Z', 'person:mallory', '2026-01-01T00:00:00Z', 1)`,
		`INSERT INTO layer_changes (tenant, version, action, rule_id, text, effect, tool, by_principal, at) VALUES ('', 1, 'accept', 'forged', ?, 'allow', 'bash', 'person:mallory', '2026-01-01T00:00:00Z')`,
	} {
		if _, err := db.ExecContext(ctx, q, p.Text); err != nil {
			t.Fatal(err)
		}
	}
	get := NewLayerSource(s.(layerstore.Layers)).Getter("", "")
	ans, err := layer.PermissionHook(get)(ctx, &hooks.PermissionEvent{Name: "bash", ID: "c1", Args: []byte(`{"command":"git status --short"}`)})
	if err != nil || ans != nil {
		t.Fatalf("the forged rule answered: %+v, %v", ans, err)
	}
	if l, err := get(ctx); err != nil || l.Version() != 1 {
		t.Fatalf("layer: %v", err)
	}
}
