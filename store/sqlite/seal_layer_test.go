package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/storeimpl"
	"github.com/tollgate-dev/tollgate/internal/storeimpl/storeimpltest"
	"github.com/tollgate-dev/tollgate/store/sqlite"
)

// A rule inserted into the database file (or altered there) by a writer
// without the store's key never enters the layer.
func TestLayerSeal(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tollgate.db")
	s, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storeimpltest.RunLayerSeal(t, s, func(t *testing.T, f storeimpltest.Forgery) {
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		r := f.Insert
		ts := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO layer_rules (tenant, id, text, effect, tool, source, status, proposed_by, proposed_at, accepted_by, accepted_at, version, mac) VALUES (?, ?, ?, ?, ?, ?, 'accepted', ?, ?, ?, ?, ?, ?)`,
				[]any{r.Tenant, r.ID, r.Text, r.Effect, r.Tool, r.Source, storeimpl.PrincipalText(r.ProposedBy), ts(r.ProposedAt), storeimpl.PrincipalText(r.AcceptedBy), ts(*r.AcceptedAt), r.Version, r.MAC}},
			{`INSERT INTO layer_changes (tenant, version, action, rule_id, text, effect, tool, by_principal, at) VALUES (?, ?, 'accept', ?, ?, ?, ?, ?, ?)`,
				[]any{r.Tenant, r.Version, r.ID, r.Text, r.Effect, r.Tool, storeimpl.PrincipalText(r.AcceptedBy), ts(*r.AcceptedAt)}},
			{`UPDATE layer_rules SET text = ? WHERE tenant = ? AND id = ?`, []any{f.AlterText, r.Tenant, f.AlterID}},
		} {
			if _, err := db.ExecContext(ctx, q.sql, q.args...); err != nil {
				t.Fatalf("%s: %v", q.sql, err)
			}
		}
	})
}
