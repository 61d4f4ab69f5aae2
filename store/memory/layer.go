package memory

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/internal/layerstore"
	"github.com/tollgate-dev/tollgate/internal/storeimpl"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// memLayers holds the rule layers of a [memStore] store, under its own lock.
type memLayers struct {
	mu      sync.Mutex
	rules   map[string][]layerstore.LayerRule   // by tenant, in the order proposed
	changes map[string][]layerstore.LayerChange // by tenant, oldest first
}

var _ layerstore.Layers = (*memStore)(nil)

func cloneLayerRule(r layerstore.LayerRule) layerstore.LayerRule {
	for _, p := range []**time.Time{&r.AcceptedAt, &r.RemovedAt} {
		if *p != nil {
			t := **p
			*p = &t
		}
	}
	return r
}

// ProposeLayerRule implements [layerstore.Layers].
func (m *memStore) ProposeLayerRule(ctx context.Context, r layerstore.LayerRule) (layerstore.LayerRule, error) {
	r, err := storeimpl.Proposal(r, m.now())
	if err != nil {
		return layerstore.LayerRule{}, err
	}
	l := &m.layers
	l.mu.Lock()
	defer l.mu.Unlock()
	live := 0
	for _, x := range l.rules[r.Tenant] {
		if x.ID == r.ID {
			return layerstore.LayerRule{}, fmt.Errorf("%w: layer rule %s", store.ErrExists, r.ID)
		}
		if x.Status != layerstore.LayerRemoved {
			live++
		}
	}
	if err := storeimpl.CheckLayerRoom(live); err != nil {
		return layerstore.LayerRule{}, err
	}
	if l.rules == nil {
		l.rules, l.changes = map[string][]layerstore.LayerRule{}, map[string][]layerstore.LayerChange{}
	}
	l.rules[r.Tenant] = append(l.rules[r.Tenant], r)
	return cloneLayerRule(r), nil
}

// AcceptLayerRule implements [layerstore.Layers].
func (m *memStore) AcceptLayerRule(ctx context.Context, tenant, id string, by tool.Principal) (layerstore.LayerChange, error) {
	return m.changeLayer(tenant, id, layerstore.LayerAccept, by)
}

// RemoveLayerRule implements [layerstore.Layers].
func (m *memStore) RemoveLayerRule(ctx context.Context, tenant, id string, by tool.Principal) (layerstore.LayerChange, error) {
	return m.changeLayer(tenant, id, layerstore.LayerRemove, by)
}

func (m *memStore) changeLayer(tenant, id string, action layerstore.LayerAction, by tool.Principal) (layerstore.LayerChange, error) {
	l := &m.layers
	l.mu.Lock()
	defer l.mu.Unlock()
	rs := l.rules[tenant]
	i := slices.IndexFunc(rs, func(r layerstore.LayerRule) bool { return r.ID == id })
	if i < 0 {
		return layerstore.LayerChange{}, fmt.Errorf("%w: layer rule %s", store.ErrNotFound, id)
	}
	r, c, err := storeimpl.ApplyLayerChange(rs[i], action, int64(len(l.changes[tenant])), by, m.now())
	if err != nil {
		return layerstore.LayerChange{}, err
	}
	rs[i] = m.seal.SealLayerRule(r)
	l.changes[tenant] = append(l.changes[tenant], c)
	return c, nil
}

// GetLayer implements [layerstore.Layers].
func (m *memStore) GetLayer(ctx context.Context, tenant string) (layerstore.Layer, error) {
	l := &m.layers
	l.mu.Lock()
	defer l.mu.Unlock()
	out := layerstore.Layer{Tenant: tenant, Version: int64(len(l.changes[tenant])), Rules: []layerstore.LayerRule{}, Proposed: []layerstore.LayerRule{}}
	for _, r := range l.rules[tenant] {
		switch r.Status {
		case layerstore.LayerAccepted:
			out.Rules = append(out.Rules, cloneLayerRule(r))
		case layerstore.LayerProposed:
			out.Proposed = append(out.Proposed, cloneLayerRule(r))
		}
	}
	slices.SortStableFunc(out.Rules, func(a, b layerstore.LayerRule) int { return int(a.Version - b.Version) })
	return m.seal.SplitSealed(out), nil
}

// LayerHistory implements [layerstore.Layers].
func (m *memStore) LayerHistory(ctx context.Context, tenant string, limit int) ([]layerstore.LayerChange, error) {
	n, err := storeimpl.PageLimit(limit)
	if err != nil {
		return nil, err
	}
	l := &m.layers
	l.mu.Lock()
	defer l.mu.Unlock()
	cs := l.changes[tenant]
	out := make([]layerstore.LayerChange, 0, min(n, len(cs)))
	for i := len(cs) - 1; i >= 0 && len(out) < n; i-- {
		out = append(out, cs[i])
	}
	return out, nil
}

// LayerVersion implements [layerstore.Layers].
func (m *memStore) LayerVersion(ctx context.Context, tenant string) (int64, error) {
	l := &m.layers
	l.mu.Lock()
	defer l.mu.Unlock()
	return int64(len(l.changes[tenant])), nil
}
