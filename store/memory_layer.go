package store

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/tool"
)

// memLayers holds the rule layers of a [Memory] store, under its own lock.
type memLayers struct {
	mu      sync.Mutex
	rules   map[string][]LayerRule   // by tenant, in the order proposed
	changes map[string][]LayerChange // by tenant, oldest first
}

var _ Layers = (*Memory)(nil)

func cloneLayerRule(r LayerRule) LayerRule {
	for _, p := range []**time.Time{&r.AcceptedAt, &r.RemovedAt} {
		if *p != nil {
			t := **p
			*p = &t
		}
	}
	return r
}

// ProposeLayerRule implements [Layers].
func (m *Memory) ProposeLayerRule(ctx context.Context, r LayerRule) (LayerRule, error) {
	if err := CheckLayerRule(r); err != nil {
		return LayerRule{}, err
	}
	l := &m.layers
	l.mu.Lock()
	defer l.mu.Unlock()
	live := 0
	for _, x := range l.rules[r.Tenant] {
		if x.ID == r.ID {
			return LayerRule{}, fmt.Errorf("%w: layer rule %s", ErrExists, r.ID)
		}
		if x.Status != LayerRemoved {
			live++
		}
	}
	if live >= MaxLayerRules {
		return LayerRule{}, fmt.Errorf("%w: the layer holds %d rules and proposals, the most it may", ErrInvalid, live)
	}
	r.Status, r.ProposedAt = LayerProposed, m.now()
	r.AcceptedBy, r.AcceptedAt, r.Version, r.RemovedBy, r.RemovedAt = tool.Principal{}, nil, 0, tool.Principal{}, nil
	if l.rules == nil {
		l.rules, l.changes = map[string][]LayerRule{}, map[string][]LayerChange{}
	}
	l.rules[r.Tenant] = append(l.rules[r.Tenant], r)
	return cloneLayerRule(r), nil
}

// AcceptLayerRule implements [Layers].
func (m *Memory) AcceptLayerRule(ctx context.Context, tenant, id string, by tool.Principal) (LayerChange, error) {
	return m.changeLayer(tenant, id, LayerAccept, by)
}

// RemoveLayerRule implements [Layers].
func (m *Memory) RemoveLayerRule(ctx context.Context, tenant, id string, by tool.Principal) (LayerChange, error) {
	return m.changeLayer(tenant, id, LayerRemove, by)
}

func (m *Memory) changeLayer(tenant, id string, action LayerAction, by tool.Principal) (LayerChange, error) {
	l := &m.layers
	l.mu.Lock()
	defer l.mu.Unlock()
	rs := l.rules[tenant]
	i := slices.IndexFunc(rs, func(r LayerRule) bool { return r.ID == id })
	if i < 0 {
		return LayerChange{}, fmt.Errorf("%w: layer rule %s", ErrNotFound, id)
	}
	r, c, err := ApplyLayerChange(rs[i], action, int64(len(l.changes[tenant])), by, m.now())
	if err != nil {
		return LayerChange{}, err
	}
	rs[i] = m.seal.SealLayerRule(r)
	l.changes[tenant] = append(l.changes[tenant], c)
	return c, nil
}

// GetLayer implements [Layers].
func (m *Memory) GetLayer(ctx context.Context, tenant string) (Layer, error) {
	l := &m.layers
	l.mu.Lock()
	defer l.mu.Unlock()
	out := Layer{Tenant: tenant, Version: int64(len(l.changes[tenant])), Rules: []LayerRule{}, Proposed: []LayerRule{}}
	for _, r := range l.rules[tenant] {
		switch r.Status {
		case LayerAccepted:
			out.Rules = append(out.Rules, cloneLayerRule(r))
		case LayerProposed:
			out.Proposed = append(out.Proposed, cloneLayerRule(r))
		}
	}
	slices.SortStableFunc(out.Rules, func(a, b LayerRule) int { return int(a.Version - b.Version) })
	return m.seal.SplitSealed(out), nil
}

// LayerHistory implements [Layers].
func (m *Memory) LayerHistory(ctx context.Context, tenant string, limit int) ([]LayerChange, error) {
	n, err := PageLimit(limit)
	if err != nil {
		return nil, err
	}
	l := &m.layers
	l.mu.Lock()
	defer l.mu.Unlock()
	cs := l.changes[tenant]
	out := make([]LayerChange, 0, min(n, len(cs)))
	for i := len(cs) - 1; i >= 0 && len(out) < n; i-- {
		out = append(out, cs[i])
	}
	return out, nil
}

// LayerVersion implements [Layers].
func (m *Memory) LayerVersion(ctx context.Context, tenant string) (int64, error) {
	l := &m.layers
	l.mu.Lock()
	defer l.mu.Unlock()
	return int64(len(l.changes[tenant])), nil
}
