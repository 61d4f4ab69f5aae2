package postgres_test

import (
	"testing"

	"github.com/tollgate-dev/tollgate/internal/pgtest"
	"github.com/tollgate-dev/tollgate/internal/storeimpl"
	"github.com/tollgate-dev/tollgate/internal/storeimpl/storeimpltest"
)

// A rule inserted into the database (or altered there) by a writer without
// the store's key never enters the layer.
func TestLayerSeal(t *testing.T) {
	url := pgtest.Database(t)
	s := open(t, url, nil)
	defer s.Close()
	storeimpltest.RunLayerSeal(t, s, func(t *testing.T, f storeimpltest.Forgery) {
		c := rawConn(t, url)
		r := f.Insert
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO layer_rules (tenant, id, text, effect, tool, source, status, proposed_by, proposed_at, accepted_by, accepted_at, version, mac) VALUES ($1, $2, $3, $4, $5, $6, 'accepted', $7, $8, $9, $10, $11, $12)`,
				[]any{r.Tenant, r.ID, r.Text, r.Effect, r.Tool, r.Source, storeimpl.PrincipalText(r.ProposedBy), r.ProposedAt, storeimpl.PrincipalText(r.AcceptedBy), *r.AcceptedAt, r.Version, r.MAC}},
			{`INSERT INTO layer_changes (tenant, version, action, rule_id, text, effect, tool, by_principal, at) VALUES ($1, $2, 'accept', $3, $4, $5, $6, $7, $8)`,
				[]any{r.Tenant, r.Version, r.ID, r.Text, r.Effect, r.Tool, storeimpl.PrincipalText(r.AcceptedBy), *r.AcceptedAt}},
			{`UPDATE layer_rules SET text = $1 WHERE tenant = $2 AND id = $3`, []any{f.AlterText, r.Tenant, f.AlterID}},
		} {
			if _, err := c.Exec(ctx, q.sql, q.args...); err != nil {
				t.Fatalf("%s: %v", q.sql, err)
			}
		}
	})
}
