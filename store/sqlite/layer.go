package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/tollgate-dev/tollgate/internal/layerstore"
	"github.com/tollgate-dev/tollgate/internal/storeimpl"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

var _ layerstore.Layers = (*sqliteStore)(nil)

const layerRuleCols = `id, tenant, text, effect, tool, source, status, proposed_by, proposed_at, accepted_by, accepted_at, version, removed_by, removed_at, mac`

func scanLayerRule(sc scanner) (layerstore.LayerRule, error) {
	var r layerstore.LayerRule
	var status, proposedBy, proposedAt, acceptedBy, removedBy string
	var acceptedAt, removedAt sql.NullString
	if err := sc.Scan(&r.ID, &r.Tenant, &r.Text, &r.Effect, &r.Tool, &r.Source, &status, &proposedBy, &proposedAt, &acceptedBy, &acceptedAt, &r.Version, &removedBy, &removedAt, &r.MAC); err != nil {
		return r, err
	}
	r.Status = layerstore.LayerRuleStatus(status)
	r.ProposedBy, _ = storeimpl.PrincipalsFromText(proposedBy, "")
	r.AcceptedBy, _ = storeimpl.PrincipalsFromText(acceptedBy, "")
	r.RemovedBy, _ = storeimpl.PrincipalsFromText(removedBy, "")
	var errs [3]error
	r.ProposedAt, errs[0] = parseTS(proposedAt)
	r.AcceptedAt, errs[1] = parseTSPtr(acceptedAt)
	r.RemovedAt, errs[2] = parseTSPtr(removedAt)
	return r, errors.Join(errs[:]...)
}

// ProposeLayerRule implements [layerstore.Layers].
func (s *sqliteStore) ProposeLayerRule(ctx context.Context, r layerstore.LayerRule) (layerstore.LayerRule, error) {
	r, err := storeimpl.Proposal(r, s.now().UTC())
	if err != nil {
		return layerstore.LayerRule{}, err
	}
	err = s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var live int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM layer_rules WHERE tenant = ? AND status <> 'removed'`, r.Tenant).Scan(&live); err != nil {
			return err
		}
		if err := storeimpl.CheckLayerRoom(live); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO layer_rules (tenant, id, text, effect, tool, source, status, proposed_by, proposed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.Tenant, r.ID, r.Text, r.Effect, r.Tool, r.Source, string(r.Status), storeimpl.PrincipalText(r.ProposedBy), ts(r.ProposedAt))
		if isUnique(err) {
			return fmt.Errorf("%w: layer rule %s", store.ErrExists, r.ID)
		}
		return err
	})
	if err != nil {
		return layerstore.LayerRule{}, wrap(err)
	}
	return r, nil
}

// AcceptLayerRule implements [layerstore.Layers].
func (s *sqliteStore) AcceptLayerRule(ctx context.Context, tenant, id string, by tool.Principal) (layerstore.LayerChange, error) {
	return s.changeLayer(ctx, tenant, id, layerstore.LayerAccept, by)
}

// RemoveLayerRule implements [layerstore.Layers].
func (s *sqliteStore) RemoveLayerRule(ctx context.Context, tenant, id string, by tool.Principal) (layerstore.LayerChange, error) {
	return s.changeLayer(ctx, tenant, id, layerstore.LayerRemove, by)
}

func (s *sqliteStore) changeLayer(ctx context.Context, tenant, id string, action layerstore.LayerAction, by tool.Principal) (layerstore.LayerChange, error) {
	var c layerstore.LayerChange
	err := s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		c, err = storeimpl.ChangeLayer(ctx, layerTx{tx}, s.seal, tenant, id, action, by, s.now().UTC())
		return err
	})
	if err != nil {
		return layerstore.LayerChange{}, wrap(err)
	}
	return c, nil
}

// layerTx is a transaction as a change of the layer uses it
// ([storeimpl.LayerTx]).
type layerTx struct{ tx *sql.Tx }

// LoadLayerRule reads rule id of tenant.
func (t layerTx) LoadLayerRule(ctx context.Context, tenant, id string) (layerstore.LayerRule, error) {
	r, err := scanLayerRule(t.tx.QueryRowContext(ctx, `SELECT `+layerRuleCols+` FROM layer_rules WHERE tenant = ? AND id = ?`, tenant, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("%w: layer rule %s", store.ErrNotFound, id)
	}
	return r, err
}

// LayerVersion returns the version of tenant's layer.
func (t layerTx) LayerVersion(ctx context.Context, tenant string) (int64, error) {
	return layerVersion(ctx, t.tx, tenant)
}

// layerVersion returns the version of tenant's layer, read with q.
func layerVersion(ctx context.Context, q queryer, tenant string) (int64, error) {
	var v int64
	err := q.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM layer_changes WHERE tenant = ?`, tenant).Scan(&v)
	return v, err
}

// WriteLayerChange stores r's new status and appends c to the history.
func (t layerTx) WriteLayerChange(ctx context.Context, r layerstore.LayerRule, c layerstore.LayerChange) error {
	if _, err := t.tx.ExecContext(ctx, `UPDATE layer_rules SET status = ?, accepted_by = ?, accepted_at = ?, version = ?, removed_by = ?, removed_at = ?, mac = ? WHERE tenant = ? AND id = ?`,
		string(r.Status), storeimpl.PrincipalText(r.AcceptedBy), tsPtr(r.AcceptedAt), r.Version, storeimpl.PrincipalText(r.RemovedBy), tsPtr(r.RemovedAt), r.MAC, r.Tenant, r.ID); err != nil {
		return err
	}
	_, err := t.tx.ExecContext(ctx, `INSERT INTO layer_changes (tenant, version, action, rule_id, text, effect, tool, by_principal, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		c.Tenant, c.Version, string(c.Action), c.RuleID, c.Text, c.Effect, c.Tool, storeimpl.PrincipalText(c.By), ts(c.At))
	return err
}

// GetLayer implements [layerstore.Layers].
func (s *sqliteStore) GetLayer(ctx context.Context, tenant string) (layerstore.Layer, error) {
	l := layerstore.Layer{Tenant: tenant, Rules: []layerstore.LayerRule{}, Proposed: []layerstore.LayerRule{}}
	var err error
	if l.Version, err = layerVersion(ctx, s.db, tenant); err != nil {
		return l, wrap(err)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+layerRuleCols+` FROM layer_rules WHERE tenant = ? AND status <> 'removed' ORDER BY version, seq`, tenant)
	if err != nil {
		return l, wrap(err)
	}
	defer rows.Close()
	l, err = storeimpl.ReadLayer(l, rows, func(rows storeimpl.Rows) (layerstore.LayerRule, error) { return scanLayerRule(rows) })
	if err != nil {
		return l, wrap(err)
	}
	return s.seal.SplitSealed(l), nil
}

// LayerVersion implements [layerstore.Layers].
func (s *sqliteStore) LayerVersion(ctx context.Context, tenant string) (int64, error) {
	v, err := layerVersion(ctx, s.db, tenant)
	return v, wrap(err)
}

// LayerHistory implements [layerstore.Layers].
func (s *sqliteStore) LayerHistory(ctx context.Context, tenant string, limit int) ([]layerstore.LayerChange, error) {
	n, err := storeimpl.PageLimit(limit)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT version, action, rule_id, text, effect, tool, by_principal, at FROM layer_changes WHERE tenant = ? ORDER BY version DESC LIMIT ?`, tenant, n)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	out := []layerstore.LayerChange{}
	for rows.Next() {
		c := layerstore.LayerChange{Tenant: tenant}
		var action, by, at string
		if err := rows.Scan(&c.Version, &action, &c.RuleID, &c.Text, &c.Effect, &c.Tool, &by, &at); err != nil {
			return nil, wrap(err)
		}
		c.Action = layerstore.LayerAction(action)
		c.By, _ = storeimpl.PrincipalsFromText(by, "")
		var perr error
		if c.At, perr = parseTS(at); perr != nil {
			return nil, wrap(perr)
		}
		out = append(out, c)
	}
	return out, wrap(rows.Err())
}

// wrap names the store in an error of the layer's, leaving nil and the
// store's own sentinels as they are.
func wrap(err error) error {
	if err == nil || errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrDecided) || errors.Is(err, store.ErrInvalid) {
		return err
	}
	return fmt.Errorf("sqlite: rule layer: %w", err)
}
