package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/tool"
)

// Memory is the in-memory [Store]: for tests and for hosts that keep runs only
// for the life of the process. One mutex serialises every write, so event
// sequence numbers become visible in order; WaitEvents wakes on a broadcast
// channel that every append closes (no polling). The zero value is not
// usable; use [NewMemory].
type Memory struct {
	now  func() time.Time
	seal *Sealer

	mu        sync.Mutex
	runs      map[string]*memRun
	runSeq    int64 // position of the last run created, for cursors
	approvals map[approvalKey]*memApproval
	apprSeq   int64
	events    []Event // in Seq order
	eventSeq  int64
	// changed is closed and replaced by every append to the log.
	changed chan struct{}
	// layers are the tenants' rule layers (memory_layer.go).
	layers memLayers
}

type memRun struct {
	run       Run
	pos       int64
	lastToken int64
}

type memApproval struct {
	a   Approval
	pos int64
}

type approvalKey struct{ run, id string }

// NewMemory returns an empty in-memory store. It seals its decisions with
// opts.DecisionKey, or with this process's random key when there is none;
// it panics on a key that is not [DecisionKeySize] bytes.
func NewMemory(opts *Options) *Memory {
	seal, err := NewSealer(opts)
	if err != nil {
		panic(err)
	}
	return &Memory{
		now:       opts.NowFunc(),
		seal:      seal,
		runs:      map[string]*memRun{},
		approvals: map[approvalKey]*memApproval{},
		changed:   make(chan struct{}),
	}
}

var _ Store = (*Memory)(nil)

func cloneRun(r Run) Run {
	r.State = slices.Clone(r.State)
	r.Result = slices.Clone(r.Result)
	r.Config = slices.Clone(r.Config)
	if r.Lease != nil {
		l := *r.Lease
		r.Lease = &l
	}
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

func cloneEvent(e Event) Event {
	e.Data = slices.Clone(e.Data)
	return e
}

// NewApproval returns a as stored when added to a run: pending, with the run's
// ID and tenant and the store's times, its decision fields cleared. For
// implementations.
func NewApproval(a Approval, run Run, now time.Time) Approval {
	a = cloneApproval(a)
	a.RunID, a.Tenant, a.Status, a.CreatedAt, a.UpdatedAt = run.ID, run.Tenant, StatusPending, now, now
	a.DecidedBy, a.Actor, a.Reason, a.Data, a.DecidedAt, a.UsedAt = tool.Principal{}, tool.Principal{}, "", nil, nil, nil
	return a
}

// stageApprovals checks approvals for run and returns them as they will be
// stored; the caller holds mu.
func (m *Memory) stageApprovals(run Run, now time.Time, as []Approval) ([]Approval, error) {
	seen := map[string]bool{}
	out := make([]Approval, 0, len(as))
	for _, a := range as {
		if _, ok := m.approvals[approvalKey{run.ID, a.ID}]; ok || seen[a.ID] {
			return nil, fmt.Errorf("%w: approval %s of run %s", ErrExists, a.ID, run.ID)
		}
		seen[a.ID] = true
		out = append(out, NewApproval(a, run, now))
	}
	return out, nil
}

// stageEvents checks events of run (nil: events that name their run) and
// returns them as they will be stored; the caller holds mu.
func (m *Memory) stageEvents(run *Run, now time.Time, evs []Event) ([]Event, error) {
	out := make([]Event, 0, len(evs))
	for _, ev := range evs {
		var tenant *string
		switch {
		case run != nil:
			ev.RunID, tenant = run.ID, &run.Tenant
		case ev.RunID != "":
			r, ok := m.runs[ev.RunID]
			if !ok {
				return nil, fmt.Errorf("%w: run %s of event %s", ErrNotFound, ev.RunID, ev.Type)
			}
			tenant = &r.run.Tenant
		}
		ev, err := CheckEvent(ev, tenant, now)
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// commit stores staged approvals and events and returns the events' Seqs; the
// caller holds mu.
func (m *Memory) commit(as []Approval, evs []Event) []int64 {
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

// CreateRun implements [Store].
func (m *Memory) CreateRun(ctx context.Context, r CreateRunRequest) (Run, error) {
	if err := CheckRun(r); err != nil {
		return Run{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.runs[r.Run.ID]; ok {
		return Run{}, fmt.Errorf("%w: run %s", ErrExists, r.Run.ID)
	}
	now := m.now()
	run := cloneRun(r.Run)
	run.CreatedAt, run.UpdatedAt, run.Version, run.Lease = now, now, 1, nil
	var lastToken int64
	if r.Holder != "" || r.LeaseTTL != 0 {
		if err := CheckClaim(run.ID, Claim{Holder: r.Holder, TTL: r.LeaseTTL, From: []RunStatus{run.Status}}); err != nil {
			return Run{}, err
		}
		lastToken = 1
		run.Lease = &Lease{Holder: r.Holder, Token: 1, ExpiresAt: now.Add(r.LeaseTTL)}
	}
	as, err := m.stageApprovals(run, now, r.Approvals)
	if err != nil {
		return Run{}, err
	}
	evs, err := m.stageEvents(&run, now, r.Events)
	if err != nil {
		return Run{}, err
	}
	m.runSeq++
	m.runs[run.ID] = &memRun{run: run, pos: m.runSeq, lastToken: lastToken}
	m.commit(as, evs)
	return cloneRun(run), nil
}

// UpdateRun implements [Store].
func (m *Memory) UpdateRun(ctx context.Context, id string, u RunUpdate) (Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.runs[id]
	if !ok {
		return Run{}, fmt.Errorf("%w: run %s", ErrNotFound, id)
	}
	now := m.now()
	next, err := ApplyUpdate(cloneRun(cur.run), u, now)
	if err != nil {
		return Run{}, err
	}
	as, err := m.stageApprovals(next, now, u.Approvals)
	if err != nil {
		return Run{}, err
	}
	evs, err := m.stageEvents(&next, now, u.Events)
	if err != nil {
		return Run{}, err
	}
	cur.run = next
	m.commit(as, evs)
	return cloneRun(next), nil
}

// ClaimRun implements [Store].
func (m *Memory) ClaimRun(ctx context.Context, id string, c Claim) (Run, error) {
	if err := CheckClaim(id, c); err != nil {
		return Run{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.runs[id]
	if !ok {
		return Run{}, fmt.Errorf("%w: run %s", ErrNotFound, id)
	}
	next, err := ApplyClaim(cloneRun(cur.run), cur.lastToken, c, m.now())
	if err != nil {
		return Run{}, err
	}
	cur.run, cur.lastToken = next, next.Lease.Token
	return cloneRun(next), nil
}

// RenewLease implements [Store].
func (m *Memory) RenewLease(ctx context.Context, id, holder string, token int64, ttl time.Duration) (Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.runs[id]
	if !ok {
		return Lease{}, fmt.Errorf("%w: run %s", ErrNotFound, id)
	}
	next, err := ApplyRenew(cloneRun(cur.run), holder, token, ttl, m.now())
	if err != nil {
		return Lease{}, err
	}
	cur.run = next
	return *next.Lease, nil
}

// GetRun implements [Store].
func (m *Memory) GetRun(ctx context.Context, id string) (Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[id]
	if !ok {
		return Run{}, fmt.Errorf("%w: run %s", ErrNotFound, id)
	}
	return cloneRun(r.run), nil
}

func tenantOK(tenant string, all bool, recTenant string) bool { return all || tenant == recTenant }

// ListRuns implements [Store].
func (m *Memory) ListRuns(ctx context.Context, f RunFilter) (RunPage, error) {
	limit, err := PageLimit(f.Limit)
	if err != nil {
		return RunPage{}, err
	}
	kind := RunsCursorKind(f)
	from, err := DecodeCursor(kind, f.Cursor)
	if err != nil {
		return RunPage{}, err
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
	var p RunPage
	if len(sel) > limit {
		sel = sel[:limit]
		p.Next = EncodeCursor(kind, sel[limit-1].pos)
	}
	for _, r := range sel {
		p.Runs = append(p.Runs, cloneRun(r.run))
	}
	return p, nil
}

// DeleteRuns implements [Store].
func (m *Memory) DeleteRuns(ctx context.Context, f PruneFilter) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	gone := map[string]bool{}
	for id, r := range m.runs {
		if tenantOK(f.Tenant, f.AllTenants, r.run.Tenant) && Prunable(r.run, f, now) {
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
	m.events = slices.DeleteFunc(m.events, func(e Event) bool { return gone[e.RunID] })
	return len(gone), nil
}

// GetApproval implements [Store].
func (m *Memory) GetApproval(ctx context.Context, runID, id string) (Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.approvals[approvalKey{runID, id}]
	if !ok {
		return Approval{}, fmt.Errorf("%w: approval %s of run %s", ErrNotFound, id, runID)
	}
	return m.seal.Check(cloneApproval(a.a)), nil
}

// ListApprovals implements [Store].
func (m *Memory) ListApprovals(ctx context.Context, f ApprovalFilter) (ApprovalPage, error) {
	limit, err := PageLimit(f.Limit)
	if err != nil {
		return ApprovalPage{}, err
	}
	after, err := DecodeCursor("approvals", f.Cursor)
	if err != nil {
		return ApprovalPage{}, err
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
	var p ApprovalPage
	if len(sel) > limit {
		sel = sel[:limit]
		p.Next = EncodeCursor("approvals", sel[limit-1].pos)
	}
	for _, a := range sel {
		p.Approvals = append(p.Approvals, m.seal.Check(cloneApproval(a.a)))
	}
	return p, nil
}

// transition applies one step of the approval state machine and records its
// event; the step's ErrExpired is stored, other errors change nothing.
func (m *Memory) transition(runID, id string, step func(Approval, time.Time) (Approval, error), event func(Approval, error) bool) (Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.approvals[approvalKey{runID, id}]
	if !ok {
		return Approval{}, fmt.Errorf("%w: approval %s of run %s", ErrNotFound, id, runID)
	}
	prev := m.seal.Check(a.a)
	next, err := step(prev, m.now())
	next = m.seal.Seal(prev, next)
	a.a = next
	if event(next, err) {
		m.commit(nil, []Event{ApprovalEventOf(next)})
	}
	return cloneApproval(next), err
}

// Decide implements [Store].
func (m *Memory) Decide(ctx context.Context, runID, id string, d Answer) (Approval, error) {
	return m.transition(runID, id, func(a Approval, now time.Time) (Approval, error) {
		return ApplyDecision(a, d, now)
	}, decisionEvent)
}

// Consume implements [Store].
func (m *Memory) Consume(ctx context.Context, runID, id, digest string) (Approval, error) {
	var answer json.RawMessage
	a, err := m.transition(runID, id, ConsumeStep(digest, &answer), expiryEvent)
	if err == nil {
		a.Data = answer
	}
	return a, err
}

// decisionEvent reports whether a Decide step with this outcome records an
// event: a decision or an expiry.
func decisionEvent(_ Approval, err error) bool { return err == nil || isExpired(err) }

// expiryEvent reports whether a Consume step records an event: an expiry.
func expiryEvent(_ Approval, err error) bool { return isExpired(err) }

// ExpireApprovals implements [Store].
func (m *Memory) ExpireApprovals(ctx context.Context) ([]Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	var due []*memApproval
	for _, a := range m.approvals {
		if (a.a.Status == StatusPending || a.a.Status == StatusApproved) && a.a.Expired(now) {
			due = append(due, a)
		}
	}
	slices.SortFunc(due, func(a, b *memApproval) int { return cmp.Compare(a.pos, b.pos) })
	var out []Approval
	var evs []Event
	for _, a := range due {
		prev := m.seal.Check(a.a)
		a.a = m.seal.Seal(prev, ExpireApproval(prev, now))
		out = append(out, cloneApproval(a.a))
		evs = append(evs, ApprovalEventOf(a.a))
	}
	m.commit(nil, evs)
	return out, nil
}

// AppendEvents implements [Store].
func (m *Memory) AppendEvents(ctx context.Context, evs ...Event) ([]int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	staged, err := m.stageEvents(nil, m.now(), evs)
	if err != nil {
		return nil, err
	}
	return m.commit(nil, staged), nil
}

func eventSelected(f EventFilter, e Event) bool {
	return e.Seq > f.AfterSeq && tenantOK(f.Tenant, f.AllTenants, e.Tenant) && (f.RunID == "" || e.RunID == f.RunID)
}

// ListEvents implements [Store].
func (m *Memory) ListEvents(ctx context.Context, f EventFilter) ([]Event, error) {
	limit, err := PageLimit(f.Limit)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	i, _ := slices.BinarySearchFunc(m.events, f.AfterSeq+1, func(e Event, seq int64) int { return cmp.Compare(e.Seq, seq) })
	var out []Event
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

// WaitEvents implements [Store]: it waits on the store's broadcast channel,
// without polling.
func (m *Memory) WaitEvents(ctx context.Context, f EventFilter) error {
	for {
		m.mu.Lock()
		changed := m.changed
		i, _ := slices.BinarySearchFunc(m.events, f.AfterSeq+1, func(e Event, seq int64) int { return cmp.Compare(e.Seq, seq) })
		found := slices.ContainsFunc(m.events[i:], func(e Event) bool { return eventSelected(f, e) })
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

// Close implements [Store]; it does nothing.
func (m *Memory) Close() error { return nil }

func isExpired(err error) bool { return err != nil && errors.Is(err, ErrExpired) }

// ExpireApproval returns a marked expired at now, for implementations.
func ExpireApproval(a Approval, now time.Time) Approval {
	a.Status, a.UpdatedAt = StatusExpired, now
	return a
}

// ApplyDecision is the state machine of [Store.Decide], for implementations:
// given the stored approval, it returns the approval as it must be stored and
// the error to return ([ErrInvalid] for an answer that names no principal
// or an invalid one, [ErrDecided], [ErrExpired]). On ErrExpired the returned
// approval is marked expired and must be stored (with its
// [EventApprovalExpired] event); on ErrDecided it is unchanged.
func ApplyDecision(a Approval, d Answer, now time.Time) (Approval, error) {
	if err := checkAnswer(d); err != nil {
		return a, fmt.Errorf("approval %s of run %s: %w", a.ID, a.RunID, err)
	}
	if a.Status != StatusPending {
		return a, fmt.Errorf("%w: approval %s of run %s is %s", ErrDecided, a.ID, a.RunID, a.Status)
	}
	if a.Expired(now) {
		return ExpireApproval(a, now), fmt.Errorf("%w: approval %s of run %s expired at %s", ErrExpired, a.ID, a.RunID, a.ExpiresAt.Format(time.RFC3339))
	}
	a.Status = StatusDenied
	a.Data = nil
	if d.Approve {
		a.Status, a.Data = StatusApproved, slices.Clone(d.Data)
	}
	a.DecidedBy, a.Actor, a.Reason = d.By, d.Actor, d.Reason
	a.DecidedAt, a.UpdatedAt = &now, now
	return a, nil
}

// RedactedAnswer is the Data a request for input keeps once its answer
// was used ([RedactUsed]): what a person typed into a form (a
// value an MCP server asked for) is given to the call once, then no
// longer kept; the status (used), who answered and when stay.
var RedactedAnswer = json.RawMessage(`{"redacted":"the answer was used and is no longer kept"}`)

// RedactUsed returns a, a used approval as [ApplyConsume] made it, as a
// store keeps it, for implementations: the answer data of a request that
// asks a person for something ([tool.KindInput], [tool.KindQuestion],
// [tool.KindAuthorization]: an MCP server's elicitation, the question
// tool) is replaced by [RedactedAnswer]; an approval ([tool.KindApproval])
// is returned as it is (its edited arguments are what the call ran with,
// and stay). The store seals and writes the redacted approval
// and returns the approval with its data to the caller of Consume, the
// one use of the answer.
func RedactUsed(a Approval) Approval {
	if a.Status == StatusUsed && a.Kind != tool.KindApproval && len(a.Data) > 0 {
		a.Data = slices.Clone(RedactedAnswer)
	}
	return a
}

// ConsumeStep is the step of [Store.Consume] for implementations whose
// transition stores what the step returns: [ApplyConsume], then
// [RedactUsed]; the answer's data, before redaction, is put in *answer for
// the approval Consume returns.
func ConsumeStep(digest string, answer *json.RawMessage) func(Approval, time.Time) (Approval, error) {
	return func(a Approval, now time.Time) (Approval, error) {
		next, err := ApplyConsume(a, digest, now)
		if err != nil {
			return next, err
		}
		*answer = next.Data
		return RedactUsed(next), nil
	}
}

// ApplyConsume is the state machine of [Store.Consume], for implementations,
// like [ApplyDecision]: an unverified approval (see [Sealer.Check]) is
// refused with [ErrUnverified]; on ErrExpired the returned approval is marked expired
// and must be stored (with its [EventApprovalExpired] event); on other errors
// it is unchanged.
func ApplyConsume(a Approval, digest string, now time.Time) (Approval, error) {
	if a.Unverified && a.Status != StatusPending {
		return a, fmt.Errorf("%w: approval %s of run %s is %s, but its decision carries no valid MAC", ErrUnverified, a.ID, a.RunID, a.Status)
	}
	switch a.Status {
	case StatusUsed:
		return a, fmt.Errorf("%w: approval %s of run %s", ErrUsed, a.ID, a.RunID)
	case StatusApproved:
	default:
		return a, fmt.Errorf("%w: approval %s of run %s is %s", ErrNotApproved, a.ID, a.RunID, a.Status)
	}
	if a.Expired(now) {
		return ExpireApproval(a, now), fmt.Errorf("%w: approval %s of run %s expired at %s", ErrExpired, a.ID, a.RunID, a.ExpiresAt.Format(time.RFC3339))
	}
	if digest != a.Digest {
		return a, fmt.Errorf("%w: approval %s of run %s is for %s, not %s", ErrDigestMismatch, a.ID, a.RunID, a.Digest, digest)
	}
	a.Status, a.UsedAt, a.UpdatedAt = StatusUsed, &now, now
	return a, nil
}
