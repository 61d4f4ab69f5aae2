package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/tollgate-dev/tollgate/internal/layerstore"
	"github.com/tollgate-dev/tollgate/internal/storeimpl"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

var _ layerstore.Layers = (*pgStore)(nil)

const layerRuleCols = `id, tenant, text, effect, tool, source, status, proposed_by, proposed_at, accepted_by, accepted_at, version, removed_by, removed_at, mac`

func scanLayerRule(row pgx.Row) (layerstore.LayerRule, error) {
	var r layerstore.LayerRule
	var status, proposedBy, acceptedBy, removedBy string
	if err := row.Scan(&r.ID, &r.Tenant, &r.Text, &r.Effect, &r.Tool, &r.Source, &status, &proposedBy, &r.ProposedAt, &acceptedBy, &r.AcceptedAt, &r.Version, &removedBy, &r.RemovedAt, &r.MAC); err != nil {
		return r, err
	}
	r.Status = layerstore.LayerRuleStatus(status)
	r.ProposedBy, _ = storeimpl.PrincipalsFromText(proposedBy, "")
	r.AcceptedBy, _ = storeimpl.PrincipalsFromText(acceptedBy, "")
	r.RemovedBy, _ = storeimpl.PrincipalsFromText(removedBy, "")
	r.ProposedAt = r.ProposedAt.UTC()
	for _, p := range []*time.Time{r.AcceptedAt, r.RemovedAt} {
		if p != nil {
			*p = p.UTC()
		}
	}
	return r, nil
}

// lockLayer serialises the changes of one tenant's layer until the end of
// the transaction, so that two changes never take one version.
func lockLayer(ctx context.Context, tx pgx.Tx, tenant string) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('tollgate-layer:' || $1, 0))`, tenant)
	return err
}

// ProposeLayerRule implements [layerstore.Layers].
func (s *pgStore) ProposeLayerRule(ctx context.Context, r layerstore.LayerRule) (layerstore.LayerRule, error) {
	r, err := storeimpl.Proposal(r, pgTime(s.now()))
	if err != nil {
		return layerstore.LayerRule{}, err
	}
	err = s.tx(ctx, func(tx pgx.Tx) error {
		if err := lockLayer(ctx, tx, r.Tenant); err != nil {
			return err
		}
		var live int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM layer_rules WHERE tenant = $1 AND status <> 'removed'`, r.Tenant).Scan(&live); err != nil {
			return err
		}
		if err := storeimpl.CheckLayerRoom(live); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO layer_rules (tenant, id, text, effect, tool, source, status, proposed_by, proposed_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			r.Tenant, r.ID, r.Text, r.Effect, r.Tool, r.Source, string(r.Status), storeimpl.PrincipalText(r.ProposedBy), r.ProposedAt)
		if uniqueViolation(err, "layer_rules_tenant_id") {
			return fmt.Errorf("%w: layer rule %s", store.ErrExists, r.ID)
		}
		return err
	})
	if err != nil {
		return layerstore.LayerRule{}, err
	}
	return r, nil
}

// AcceptLayerRule implements [layerstore.Layers].
func (s *pgStore) AcceptLayerRule(ctx context.Context, tenant, id string, by tool.Principal) (layerstore.LayerChange, error) {
	return s.changeLayer(ctx, tenant, id, layerstore.LayerAccept, by)
}

// RemoveLayerRule implements [layerstore.Layers].
func (s *pgStore) RemoveLayerRule(ctx context.Context, tenant, id string, by tool.Principal) (layerstore.LayerChange, error) {
	return s.changeLayer(ctx, tenant, id, layerstore.LayerRemove, by)
}

func (s *pgStore) changeLayer(ctx context.Context, tenant, id string, action layerstore.LayerAction, by tool.Principal) (layerstore.LayerChange, error) {
	var c layerstore.LayerChange
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if err := lockLayer(ctx, tx, tenant); err != nil {
			return err
		}
		var err error
		c, err = storeimpl.ChangeLayer(ctx, layerTx{tx}, s.seal, tenant, id, action, by, pgTime(s.now()))
		return err
	})
	if err != nil {
		return layerstore.LayerChange{}, err
	}
	return c, nil
}

// layerTx is a transaction as a change of the layer uses it
// ([storeimpl.LayerTx]), after lockLayer.
type layerTx struct{ tx pgx.Tx }

// LoadLayerRule reads rule id of tenant.
func (t layerTx) LoadLayerRule(ctx context.Context, tenant, id string) (layerstore.LayerRule, error) {
	r, err := scanLayerRule(t.tx.QueryRow(ctx, `SELECT `+layerRuleCols+` FROM layer_rules WHERE tenant = $1 AND id = $2`, tenant, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("%w: layer rule %s", store.ErrNotFound, id)
	}
	return r, err
}

// LayerVersion returns the version of tenant's layer.
func (t layerTx) LayerVersion(ctx context.Context, tenant string) (int64, error) {
	return layerVersion(ctx, t.tx, tenant)
}

// layerVersion returns the version of tenant's layer, read with q.
func layerVersion(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, tenant string) (int64, error) {
	var v int64
	err := q.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM layer_changes WHERE tenant = $1`, tenant).Scan(&v)
	return v, err
}

// WriteLayerChange stores r's new status and appends c to the history.
func (t layerTx) WriteLayerChange(ctx context.Context, r layerstore.LayerRule, c layerstore.LayerChange) error {
	if _, err := t.tx.Exec(ctx, `UPDATE layer_rules SET status = $1, accepted_by = $2, accepted_at = $3, version = $4, removed_by = $5, removed_at = $6, mac = $7 WHERE tenant = $8 AND id = $9`,
		string(r.Status), storeimpl.PrincipalText(r.AcceptedBy), r.AcceptedAt, r.Version, storeimpl.PrincipalText(r.RemovedBy), r.RemovedAt, r.MAC, r.Tenant, r.ID); err != nil {
		return err
	}
	_, err := t.tx.Exec(ctx, `INSERT INTO layer_changes (tenant, version, action, rule_id, text, effect, tool, by_principal, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		c.Tenant, c.Version, string(c.Action), c.RuleID, c.Text, c.Effect, c.Tool, storeimpl.PrincipalText(c.By), c.At)
	return err
}

// GetLayer implements [layerstore.Layers].
func (s *pgStore) GetLayer(ctx context.Context, tenant string) (layerstore.Layer, error) {
	l := layerstore.Layer{Tenant: tenant, Rules: []layerstore.LayerRule{}, Proposed: []layerstore.LayerRule{}}
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		if l.Version, err = layerVersion(ctx, tx, tenant); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+layerRuleCols+` FROM layer_rules WHERE tenant = $1 AND status <> 'removed' ORDER BY version, seq`, tenant)
		if err != nil {
			return err
		}
		defer rows.Close()
		l, err = storeimpl.ReadLayer(l, rows, func(rows storeimpl.Rows) (layerstore.LayerRule, error) { return scanLayerRule(rows) })
		return err
	})
	if err != nil {
		return l, s.wrap(err)
	}
	return s.seal.SplitSealed(l), nil
}

// LayerVersion implements [layerstore.Layers].
func (s *pgStore) LayerVersion(ctx context.Context, tenant string) (int64, error) {
	v, err := layerVersion(ctx, s.pool, tenant)
	return v, s.wrap(err)
}

// LayerHistory implements [layerstore.Layers].
func (s *pgStore) LayerHistory(ctx context.Context, tenant string, limit int) ([]layerstore.LayerChange, error) {
	n, err := storeimpl.PageLimit(limit)
	if err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT version, action, rule_id, text, effect, tool, by_principal, at FROM layer_changes WHERE tenant = $1 ORDER BY version DESC LIMIT $2`, tenant, n)
	if err != nil {
		return nil, s.wrap(err)
	}
	defer rows.Close()
	out := []layerstore.LayerChange{}
	for rows.Next() {
		c := layerstore.LayerChange{Tenant: tenant}
		var action, by string
		if err := rows.Scan(&c.Version, &action, &c.RuleID, &c.Text, &c.Effect, &c.Tool, &by, &c.At); err != nil {
			return nil, s.wrap(err)
		}
		c.Action, c.At = layerstore.LayerAction(action), c.At.UTC()
		c.By, _ = storeimpl.PrincipalsFromText(by, "")
		out = append(out, c)
	}
	return out, s.wrap(rows.Err())
}
