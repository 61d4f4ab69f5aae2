package storeimpl

import (
	"context"
	"fmt"
	"time"

	"github.com/tollgate-dev/tollgate/internal/layerstore"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// LayerTx is one transaction of a SQL store as a change of a tenant's
// rule layer uses it; the store serialises the tenant's changes before
// (SQLite's write lock, PostgreSQL's advisory lock), so that two changes
// never take one version.
type LayerTx interface {
	// LoadLayerRule reads rule id of tenant; [store.ErrNotFound] when
	// there is none.
	LoadLayerRule(ctx context.Context, tenant, id string) (layerstore.LayerRule, error)
	// LayerVersion returns the version of tenant's layer (0: never
	// changed).
	LayerVersion(ctx context.Context, tenant string) (int64, error)
	// WriteLayerChange stores r's status, acceptance, removal and MAC,
	// and appends c to the layer's history.
	WriteLayerChange(ctx context.Context, r layerstore.LayerRule, c layerstore.LayerChange) error
}

// ChangeLayer is [layerstore.Layers.AcceptLayerRule] (action
// [layerstore.LayerAccept]) or RemoveLayerRule ([layerstore.LayerRemove]) in tx at
// now: [ApplyLayerChange], and the rule sealed with seal.
func ChangeLayer(ctx context.Context, tx LayerTx, seal *Sealer, tenant, id string, action layerstore.LayerAction, by tool.Principal, now time.Time) (layerstore.LayerChange, error) {
	r, err := tx.LoadLayerRule(ctx, tenant, id)
	if err != nil {
		return layerstore.LayerChange{}, err
	}
	version, err := tx.LayerVersion(ctx, tenant)
	if err != nil {
		return layerstore.LayerChange{}, err
	}
	r, c, err := ApplyLayerChange(r, action, version, by, now)
	if err != nil {
		return layerstore.LayerChange{}, err
	}
	return c, tx.WriteLayerChange(ctx, seal.SealLayerRule(r), c)
}

// Proposal checks r ([CheckLayerRule]) and returns it as a store keeps a
// new proposal made at now: proposed, with no acceptance or removal.
func Proposal(r layerstore.LayerRule, now time.Time) (layerstore.LayerRule, error) {
	if err := CheckLayerRule(r); err != nil {
		return layerstore.LayerRule{}, err
	}
	r.Status, r.ProposedAt = layerstore.LayerProposed, now
	r.AcceptedBy, r.AcceptedAt, r.Version, r.RemovedBy, r.RemovedAt = tool.Principal{}, nil, 0, tool.Principal{}, nil
	return r, nil
}

// CheckLayerRoom refuses a proposal to a layer that holds live rules and
// proposals already: [store.ErrInvalid] at [MaxLayerRules].
func CheckLayerRoom(live int) error {
	if live >= MaxLayerRules {
		return fmt.Errorf("%w: the layer holds %d rules and proposals, the most it may", store.ErrInvalid, live)
	}
	return nil
}

// ReadLayer reads into l the rules of rows (a query for the layer's rules
// that are not removed, in the order they were accepted), read with scan:
// accepted ones into Rules, proposals into Proposed. The caller closes
// rows and splits the unsealed rules off ([Sealer.SplitSealed]).
func ReadLayer(l layerstore.Layer, rows Rows, scan func(Rows) (layerstore.LayerRule, error)) (layerstore.Layer, error) {
	for rows.Next() {
		r, err := scan(rows)
		if err != nil {
			return l, err
		}
		if r.Status == layerstore.LayerAccepted {
			l.Rules = append(l.Rules, r)
		} else {
			l.Proposed = append(l.Proposed, r)
		}
	}
	return l, rows.Err()
}
