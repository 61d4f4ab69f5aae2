package store

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Memory is the in-memory [Store]: for tests and for hosts that keep runs only
// for the life of the process. The zero value is not usable; use [NewMemory].
type Memory struct {
	now func() time.Time

	mu        sync.Mutex
	runs      map[string]Run
	runOrder  []string
	approvals map[approvalKey]*Approval
	order     []approvalKey
}

type approvalKey struct{ run, id string }

// NewMemory returns an empty in-memory store.
func NewMemory(opts *Options) *Memory {
	return &Memory{now: opts.NowFunc(), runs: map[string]Run{}, approvals: map[approvalKey]*Approval{}}
}

var _ Store = (*Memory)(nil)

func cloneRun(r Run) Run {
	r.State = slices.Clone(r.State)
	r.Result = slices.Clone(r.Result)
	r.Config = slices.Clone(r.Config)
	return r
}

func cloneApproval(a Approval) Approval {
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

// addApprovals checks and stages approvals for run; the caller holds mu.
func (m *Memory) addApprovals(runID string, now time.Time, as []Approval) ([]Approval, error) {
	seen := map[string]bool{}
	out := make([]Approval, 0, len(as))
	for _, a := range as {
		k := approvalKey{runID, a.ID}
		if _, ok := m.approvals[k]; ok || seen[a.ID] {
			return nil, fmt.Errorf("%w: approval %s of run %s", ErrExists, a.ID, runID)
		}
		seen[a.ID] = true
		a = cloneApproval(a)
		a.RunID, a.Status, a.CreatedAt, a.UpdatedAt = runID, StatusPending, now, now
		a.DecidedBy, a.Reason, a.Data, a.DecidedAt, a.UsedAt = "", "", nil, nil, nil
		out = append(out, a)
	}
	return out, nil
}

func (m *Memory) commitApprovals(as []Approval) {
	for _, a := range as {
		k := approvalKey{a.RunID, a.ID}
		c := a
		m.approvals[k] = &c
		m.order = append(m.order, k)
	}
}

// CreateRun implements [Store].
func (m *Memory) CreateRun(ctx context.Context, run Run, approvals ...Approval) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.runs[run.ID]; ok {
		return fmt.Errorf("%w: run %s", ErrExists, run.ID)
	}
	now := m.now()
	as, err := m.addApprovals(run.ID, now, approvals)
	if err != nil {
		return err
	}
	run = cloneRun(run)
	run.CreatedAt, run.UpdatedAt = now, now
	m.runs[run.ID] = run
	m.runOrder = append(m.runOrder, run.ID)
	m.commitApprovals(as)
	return nil
}

// UpdateRun implements [Store].
func (m *Memory) UpdateRun(ctx context.Context, run Run, from RunStatus, approvals ...Approval) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.runs[run.ID]
	if !ok {
		return fmt.Errorf("%w: run %s", ErrNotFound, run.ID)
	}
	if cur.Status != from {
		return fmt.Errorf("%w: run %s is %s, not %s", ErrConflict, run.ID, cur.Status, from)
	}
	now := m.now()
	as, err := m.addApprovals(run.ID, now, approvals)
	if err != nil {
		return err
	}
	run = cloneRun(run)
	cur.Status, cur.State, cur.Result, cur.UpdatedAt = run.Status, run.State, run.Result, now
	m.runs[run.ID] = cur
	m.commitApprovals(as)
	return nil
}

// GetRun implements [Store].
func (m *Memory) GetRun(ctx context.Context, id string) (Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[id]
	if !ok {
		return Run{}, fmt.Errorf("%w: run %s", ErrNotFound, id)
	}
	return cloneRun(r), nil
}

// ListRuns implements [Store].
func (m *Memory) ListRuns(ctx context.Context, f RunFilter) ([]Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Run
	for _, id := range m.runOrder {
		r := m.runs[id]
		if f.Status == "" || r.Status == f.Status {
			out = append(out, cloneRun(r))
		}
	}
	return out, nil
}

// GetApproval implements [Store].
func (m *Memory) GetApproval(ctx context.Context, runID, id string) (Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.approvals[approvalKey{runID, id}]
	if !ok {
		return Approval{}, fmt.Errorf("%w: approval %s of run %s", ErrNotFound, id, runID)
	}
	return cloneApproval(*a), nil
}

// ListApprovals implements [Store].
func (m *Memory) ListApprovals(ctx context.Context, f ApprovalFilter) ([]Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Approval
	for _, k := range m.order {
		a := m.approvals[k]
		if (f.RunID == "" || a.RunID == f.RunID) && (f.ID == "" || a.ID == f.ID) && (f.Status == "" || a.Status == f.Status) {
			out = append(out, cloneApproval(*a))
		}
	}
	return out, nil
}

// Decide implements [Store].
func (m *Memory) Decide(ctx context.Context, runID, id string, d Decision) (Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.approvals[approvalKey{runID, id}]
	if !ok {
		return Approval{}, fmt.Errorf("%w: approval %s of run %s", ErrNotFound, id, runID)
	}
	next, err := ApplyDecision(*a, d, m.now())
	*a = next
	return cloneApproval(next), err
}

// Consume implements [Store].
func (m *Memory) Consume(ctx context.Context, runID, id, digest string) (Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.approvals[approvalKey{runID, id}]
	if !ok {
		return Approval{}, fmt.Errorf("%w: approval %s of run %s", ErrNotFound, id, runID)
	}
	next, err := ApplyConsume(*a, digest, m.now())
	*a = next
	return cloneApproval(next), err
}

// Close implements [Store]; it does nothing.
func (m *Memory) Close() error { return nil }

// ApplyDecision is the state machine of [Store.Decide], for implementations:
// given the stored approval, it returns the approval as it must be stored and
// the error to return ([ErrDecided], [ErrExpired]). On ErrExpired the returned
// approval is marked expired and must be stored; on ErrDecided it is
// unchanged.
func ApplyDecision(a Approval, d Decision, now time.Time) (Approval, error) {
	if a.Status != StatusPending {
		return a, fmt.Errorf("%w: approval %s of run %s is %s", ErrDecided, a.ID, a.RunID, a.Status)
	}
	if a.Expired(now) {
		a.Status, a.UpdatedAt = StatusExpired, now
		return a, fmt.Errorf("%w: approval %s of run %s expired at %s", ErrExpired, a.ID, a.RunID, a.ExpiresAt.Format(time.RFC3339))
	}
	a.Status = StatusDenied
	a.Data = nil
	if d.Approve {
		a.Status, a.Data = StatusApproved, slices.Clone(d.Data)
	}
	a.DecidedBy, a.Reason = d.By, d.Reason
	a.DecidedAt, a.UpdatedAt = &now, now
	return a, nil
}

// ApplyConsume is the state machine of [Store.Consume], for implementations,
// like [ApplyDecision]: on ErrExpired the returned approval is marked expired
// and must be stored; on other errors it is unchanged.
func ApplyConsume(a Approval, digest string, now time.Time) (Approval, error) {
	switch a.Status {
	case StatusUsed:
		return a, fmt.Errorf("%w: approval %s of run %s", ErrUsed, a.ID, a.RunID)
	case StatusApproved:
	default:
		return a, fmt.Errorf("%w: approval %s of run %s is %s", ErrNotApproved, a.ID, a.RunID, a.Status)
	}
	if a.Expired(now) {
		a.Status, a.UpdatedAt = StatusExpired, now
		return a, fmt.Errorf("%w: approval %s of run %s expired at %s", ErrExpired, a.ID, a.RunID, a.ExpiresAt.Format(time.RFC3339))
	}
	if digest != a.Digest {
		return a, fmt.Errorf("%w: approval %s of run %s is for %s, not %s", ErrDigestMismatch, a.ID, a.RunID, a.Digest, digest)
	}
	a.Status, a.UsedAt, a.UpdatedAt = StatusUsed, &now, now
	return a, nil
}
