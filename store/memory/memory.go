// Package memory is the in-memory [store.Store]: for tests, examples and
// hosts that keep runs only for the life of the process. It passes the
// shared store suite (package storetest) and keeps the server's rule
// layer too. One mutex serialises every write, so event
// sequence numbers become visible in order; WaitEvents wakes on a
// broadcast channel that every append closes (no polling).
package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/internal/storeimpl"
	"github.com/tollgate-dev/tollgate/store"
)

// memStore is the in-memory store; [New] makes one.
type memStore struct {
	now  func() time.Time
	seal *storeimpl.Sealer

	mu        sync.Mutex
	runs      map[string]*memRun
	runSeq    int64 // position of the last run created, for cursors
	approvals map[approvalKey]*memApproval
	apprSeq   int64
	events    []store.Event // in Seq order
	eventSeq  int64
	// changed is closed and replaced by every append to the log.
	changed chan struct{}
	// layers are the tenants' rule layers (layer.go).
	layers memLayers
}

type memRun struct {
	run       store.Run
	pos       int64
	lastToken int64
}

type memApproval struct {
	a   store.Approval
	pos int64
}

type approvalKey struct{ run, id string }

// New returns an empty in-memory store, which also keeps the rule layer
// that the server and the command edit and apply. It seals its decisions with opts.DecisionKey, or with
// this process's random key when there is none; it panics on a key that is
// not 32 bytes. Its Close does nothing.
func New(opts *store.Options) store.Store {
	seal, err := storeimpl.NewSealer(opts)
	if err != nil {
		panic(err)
	}
	return &memStore{
		now:       storeimpl.Now(opts),
		seal:      seal,
		runs:      map[string]*memRun{},
		approvals: map[approvalKey]*memApproval{},
		changed:   make(chan struct{}),
	}
}

var _ store.Store = (*memStore)(nil)

func cloneRun(r store.Run) store.Run {
	r.State = slices.Clone(r.State)
	r.Result = slices.Clone(r.Result)
	r.Config = slices.Clone(r.Config)
	if r.Lease != nil {
		l := *r.Lease
		r.Lease = &l
	}
	return r
}

func cloneApproval(a store.Approval) store.Approval {
	a.Data = slices.Clone(a.Data)
	a.Request.Data = slices.Clone(a.Request.Data)
	for _, p := range []**time.Time{&a.DecidedAt, &a.UsedAt, &a.ExpiresAt, &a.Request.ExpiresAt} {
		if *p != nil {
			t := **p
			*p = &t
		}
	}
	return a
}

func cloneEvent(e store.Event) store.Event {
	e.Data = slices.Clone(e.Data)
	return e
}

// stageApprovals checks approvals for run and returns them as they will be
// stored; the caller holds mu.
func (m *memStore) stageApprovals(run store.Run, now time.Time, as []store.Approval) ([]store.Approval, error) {
	seen := map[string]bool{}
	out := make([]store.Approval, 0, len(as))
	for _, a := range as {
		if _, ok := m.approvals[approvalKey{run.ID, a.ID}]; ok || seen[a.ID] {
			return nil, fmt.Errorf("%w: approval %s of run %s", store.ErrExists, a.ID, run.ID)
		}
		seen[a.ID] = true
		out = append(out, storeimpl.NewApproval(a, run, now))
	}
	return out, nil
}

// stageEvents checks events of run (nil: events that name their run) and
// returns them as they will be stored; the caller holds mu.
func (m *memStore) stageEvents(run *store.Run, now time.Time, evs []store.Event) ([]store.Event, error) {
	out := make([]store.Event, 0, len(evs))
	for _, ev := range evs {
		var tenant *string
		switch {
		case run != nil:
			ev.RunID, tenant = run.ID, &run.Tenant
		case ev.RunID != "":
			r, ok := m.runs[ev.RunID]
			if !ok {
				return nil, fmt.Errorf("%w: run %s of event %s", store.ErrNotFound, ev.RunID, ev.Type)
			}
			tenant = &r.run.Tenant
		}
		ev, err := storeimpl.CheckEvent(ev, tenant, now)
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// commit stores staged approvals and events and returns the events' Seqs; the
// caller holds mu.
func (m *memStore) commit(as []store.Approval, evs []store.Event) []int64 {
	for _, a := range as {
		m.apprSeq++
		m.approvals[approvalKey{a.RunID, a.ID}] = &memApproval{a: a, pos: m.apprSeq}
	}
	if len(evs) == 0 {
		return nil
	}
	seqs := make([]int64, len(evs))
	for i, ev := range evs {
		m.eventSeq++
		ev.Seq = m.eventSeq
		seqs[i] = ev.Seq
		m.events = append(m.events, ev)
	}
	close(m.changed)
	m.changed = make(chan struct{})
	return seqs
}

// CreateRun implements [store.Store].
func (m *memStore) CreateRun(ctx context.Context, r store.CreateRunRequest) (store.Run, error) {
	if err := storeimpl.CheckRun(r); err != nil {
		return store.Run{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.runs[r.Run.ID]; ok {
		return store.Run{}, fmt.Errorf("%w: run %s", store.ErrExists, r.Run.ID)
	}
	now := m.now()
	run, err := storeimpl.NewRun(r, now)
	if err != nil {
		return store.Run{}, err
	}
	as, err := m.stageApprovals(run, now, r.Approvals)
	if err != nil {
		return store.Run{}, err
	}
	evs, err := m.stageEvents(&run, now, r.Events)
	if err != nil {
		return store.Run{}, err
	}
	m.runSeq++
	m.runs[run.ID] = &memRun{run: run, pos: m.runSeq, lastToken: storeimpl.LeaseToken(run)}
	m.commit(as, evs)
	return cloneRun(run), nil
}

// UpdateRun implements [store.Store].
func (m *memStore) UpdateRun(ctx context.Context, id string, u store.RunUpdate) (store.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.runs[id]
	if !ok {
		return store.Run{}, fmt.Errorf("%w: run %s", store.ErrNotFound, id)
	}
	now := m.now()
	next, err := storeimpl.ApplyUpdate(cloneRun(cur.run), u, now)
	if err != nil {
		return store.Run{}, err
	}
	as, err := m.stageApprovals(next, now, u.Approvals)
	if err != nil {
		return store.Run{}, err
	}
	evs, err := m.stageEvents(&next, now, u.Events)
	if err != nil {
		return store.Run{}, err
	}
	cur.run = next
	m.commit(as, evs)
	return cloneRun(next), nil
}

// ClaimRun implements [store.Store]: the claim, its uses and its events
// are applied to copies, and stored together when all of them succeed.
func (m *memStore) ClaimRun(ctx context.Context, id string, c store.Claim) (store.Run, []store.Approval, error) {
	if err := storeimpl.CheckClaim(id, c); err != nil {
		return store.Run{}, nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.runs[id]
	if !ok {
		return store.Run{}, nil, fmt.Errorf("%w: run %s", store.ErrNotFound, id)
	}
	now := m.now()
	next, err := storeimpl.ApplyClaim(cloneRun(cur.run), cur.lastToken, c, now)
	if err != nil {
		return store.Run{}, nil, err
	}
	var kept []*memApproval // the approvals used, in order
	var evs []store.Event
	used, err := storeimpl.UseApprovals(c.Use, func(aid string, t storeimpl.Transition) (store.Approval, error) {
		a, ok := m.approvals[approvalKey{id, aid}]
		if !ok {
			return store.Approval{}, fmt.Errorf("%w: approval %s of run %s", store.ErrNotFound, aid, id)
		}
		na, aevs, err := t.Apply(m.seal, a.a, now)
		kept, evs = append(kept, &memApproval{a: na, pos: a.pos}), append(evs, aevs...)
		return cloneApproval(na), err
	})
	if err != nil {
		return store.Run{}, nil, err
	}
	staged, err := m.stageEvents(&next, now, c.Events)
	if err != nil {
		return store.Run{}, nil, err
	}
	cur.run, cur.lastToken = next, next.Lease.Token
	for _, a := range kept {
		m.approvals[approvalKey{id, a.a.ID}].a = a.a
	}
	m.commit(nil, append(evs, staged...))
	return cloneRun(next), used, nil
}

// RenewLease implements [store.Store].
func (m *memStore) RenewLease(ctx context.Context, id, holder string, token int64, ttl time.Duration) (store.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.runs[id]
	if !ok {
		return store.Lease{}, fmt.Errorf("%w: run %s", store.ErrNotFound, id)
	}
	next, err := storeimpl.ApplyRenew(cloneRun(cur.run), holder, token, ttl, m.now())
	if err != nil {
		return store.Lease{}, err
	}
	cur.run = next
	return *next.Lease, nil
}

// GetRun implements [store.Store].
func (m *memStore) GetRun(ctx context.Context, id string) (store.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[id]
	if !ok {
		return store.Run{}, fmt.Errorf("%w: run %s", store.ErrNotFound, id)
	}
	return cloneRun(r.run), nil
}

func tenantOK(tenant string, all bool, recTenant string) bool { return all || tenant == recTenant }

// ListRuns implements [store.Store].
func (m *memStore) ListRuns(ctx context.Context, f store.RunFilter) (store.RunPage, error) {
	limit, err := storeimpl.PageLimit(f.Limit)
	if err != nil {
		return store.RunPage{}, err
	}
	kind := storeimpl.RunsCursorKind(f)
	from, err := storeimpl.DecodeCursor(kind, f.Cursor)
	if err != nil {
		return store.RunPage{}, err
	}
	past := func(pos int64) bool { return pos > from }
	if f.Newest {
		past = func(pos int64) bool { return from == 0 || pos < from }
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var sel []*memRun
	for _, r := range m.runs {
		if past(r.pos) && tenantOK(f.Tenant, f.AllTenants, r.run.Tenant) &&
			(f.Status == "" || r.run.Status == f.Status) && (f.Owner == "" || r.run.Owner == f.Owner) {
			sel = append(sel, r)
		}
	}
	slices.SortFunc(sel, func(a, b *memRun) int { return cmp.Compare(a.pos, b.pos) })
	if f.Newest {
		slices.Reverse(sel)
	}
	var p store.RunPage
	if len(sel) > limit {
		sel = sel[:limit]
		p.Next = storeimpl.EncodeCursor(kind, sel[limit-1].pos)
	}
	for _, r := range sel {
		p.Runs = append(p.Runs, cloneRun(r.run))
	}
	return p, nil
}

// DeleteRuns implements [store.Store].
func (m *memStore) DeleteRuns(ctx context.Context, f store.PruneFilter) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	gone := map[string]bool{}
	for id, r := range m.runs {
		if tenantOK(f.Tenant, f.AllTenants, r.run.Tenant) && storeimpl.Prunable(r.run, f, now) {
			gone[id] = true
			delete(m.runs, id)
		}
	}
	if len(gone) == 0 {
		return 0, nil
	}
	for k := range m.approvals {
		if gone[k.run] {
			delete(m.approvals, k)
		}
	}
	m.events = slices.DeleteFunc(m.events, func(e store.Event) bool { return gone[e.RunID] })
	return len(gone), nil
}

// GetApproval implements [store.Store].
func (m *memStore) GetApproval(ctx context.Context, runID, id string) (store.Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.approvals[approvalKey{runID, id}]
	if !ok {
		return store.Approval{}, fmt.Errorf("%w: approval %s of run %s", store.ErrNotFound, id, runID)
	}
	return m.seal.Check(cloneApproval(a.a)), nil
}

// ListApprovals implements [store.Store].
func (m *memStore) ListApprovals(ctx context.Context, f store.ApprovalFilter) (store.ApprovalPage, error) {
	limit, err := storeimpl.PageLimit(f.Limit)
	if err != nil {
		return store.ApprovalPage{}, err
	}
	after, err := storeimpl.DecodeCursor("approvals", f.Cursor)
	if err != nil {
		return store.ApprovalPage{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var sel []*memApproval
	for _, ma := range m.approvals {
		a := ma.a
		if ma.pos > after && tenantOK(f.Tenant, f.AllTenants, a.Tenant) &&
			(f.RunID == "" || a.RunID == f.RunID) && (f.ID == "" || a.ID == f.ID) && (f.Status == "" || a.Status == f.Status) {
			sel = append(sel, ma)
		}
	}
	slices.SortFunc(sel, func(a, b *memApproval) int { return cmp.Compare(a.pos, b.pos) })
	var p store.ApprovalPage
	if len(sel) > limit {
		sel = sel[:limit]
		p.Next = storeimpl.EncodeCursor("approvals", sel[limit-1].pos)
	}
	for _, a := range sel {
		p.Approvals = append(p.Approvals, m.seal.Check(cloneApproval(a.a)))
	}
	return p, nil
}

// transition applies t to one approval and records its event.
func (m *memStore) transition(runID, id string, t storeimpl.Transition) (store.Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.approvals[approvalKey{runID, id}]
	if !ok {
		return store.Approval{}, fmt.Errorf("%w: approval %s of run %s", store.ErrNotFound, id, runID)
	}
	next, evs, err := t.Apply(m.seal, a.a, m.now())
	a.a = next
	m.commit(nil, evs)
	return cloneApproval(next), err
}

// Decide implements [store.Store].
func (m *memStore) Decide(ctx context.Context, runID, id string, d store.Answer) (store.Approval, error) {
	return m.transition(runID, id, storeimpl.Decision(d))
}

// Consume implements [store.Store].
func (m *memStore) Consume(ctx context.Context, runID, id, digest string) (store.Approval, error) {
	return storeimpl.Consume(digest, func(t storeimpl.Transition) (store.Approval, error) { return m.transition(runID, id, t) })
}

// ExpireApprovals implements [store.Store].
func (m *memStore) ExpireApprovals(ctx context.Context) ([]store.Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	var due []*memApproval
	for _, a := range m.approvals {
		if (a.a.Status == store.StatusPending || a.a.Status == store.StatusApproved) && a.a.Expired(now) {
			due = append(due, a)
		}
	}
	slices.SortFunc(due, func(a, b *memApproval) int { return cmp.Compare(a.pos, b.pos) })
	var out []store.Approval
	var evs []store.Event
	for _, a := range due {
		a.a = storeimpl.Expire(m.seal, a.a, now)
		out = append(out, cloneApproval(a.a))
		evs = append(evs, storeimpl.ApprovalEventOf(a.a))
	}
	m.commit(nil, evs)
	return out, nil
}

// AppendEvents implements [store.Store].
func (m *memStore) AppendEvents(ctx context.Context, evs ...store.Event) ([]int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	staged, err := m.stageEvents(nil, m.now(), evs)
	if err != nil {
		return nil, err
	}
	return m.commit(nil, staged), nil
}

func eventSelected(f store.EventFilter, e store.Event) bool {
	return e.Seq > f.AfterSeq && tenantOK(f.Tenant, f.AllTenants, e.Tenant) && (f.RunID == "" || e.RunID == f.RunID)
}

// ListEvents implements [store.Store].
func (m *memStore) ListEvents(ctx context.Context, f store.EventFilter) ([]store.Event, error) {
	limit, err := storeimpl.PageLimit(f.Limit)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	i, _ := slices.BinarySearchFunc(m.events, f.AfterSeq+1, func(e store.Event, seq int64) int { return cmp.Compare(e.Seq, seq) })
	var out []store.Event
	for _, e := range m.events[i:] {
		if len(out) == limit {
			break
		}
		if eventSelected(f, e) {
			out = append(out, cloneEvent(e))
		}
	}
	return out, nil
}

// WaitEvents implements [store.Store]: it waits on the store's broadcast channel,
// without polling.
func (m *memStore) WaitEvents(ctx context.Context, f store.EventFilter) error {
	for {
		m.mu.Lock()
		changed := m.changed
		i, _ := slices.BinarySearchFunc(m.events, f.AfterSeq+1, func(e store.Event, seq int64) int { return cmp.Compare(e.Seq, seq) })
		found := slices.ContainsFunc(m.events[i:], func(e store.Event) bool { return eventSelected(f, e) })
		m.mu.Unlock()
		if found {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close implements [store.Store]; it does nothing.
func (m *memStore) Close() error { return nil }
