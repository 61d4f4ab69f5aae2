package inbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// Options configures an [Inbox]; nil means defaults.
type Options struct {
	// Answer records an answer to the request id of run runID and returns
	// the approval as decided; nil means the store's Decide. A host's wakes
	// the run too (runs.Host.Answer, runs.DurableQueue.Answer); one that
	// stored the answer but failed after (the run was not woken) returns
	// the decided approval with its error.
	Answer func(ctx context.Context, runID, id string, ans store.Answer) (store.Approval, error)
	// Now is the clock expiry is judged by; nil means time.Now.
	Now func() time.Time
	// Log receives a warning when an answer was stored but Answer failed
	// after; nil discards it.
	Log *slog.Logger
}

// Inbox finds and decides the approval requests of one store. It holds no
// state of its own: every method reads the store, and two inboxes on one
// store (two processes) agree, since the store's Decide is atomic.
type Inbox struct {
	store  store.Store
	answer func(ctx context.Context, runID, id string, ans store.Answer) (store.Approval, error)
	now    func() time.Time
	log    *slog.Logger
}

// New returns an inbox on s; opts may be nil.
func New(s store.Store, opts *Options) *Inbox {
	ib := &Inbox{store: s, answer: s.Decide, now: time.Now, log: slog.New(slog.DiscardHandler)}
	if opts != nil {
		if opts.Answer != nil {
			ib.answer = opts.Answer
		}
		if opts.Now != nil {
			ib.now = opts.Now
		}
		if opts.Log != nil {
			ib.log = opts.Log
		}
	}
	return ib
}

// Query names one request: its ID, in a tenant, and optionally its run.
type Query struct {
	// ID is the request's ID; required.
	ID string
	// RunID, when set, is the run the request belongs to.
	RunID string
	// Tenant is the tenant searched (the empty string is the default
	// tenant); AllTenants searches every tenant (the local command line).
	Tenant     string
	AllTenants bool
}

// Find returns the request q names. Errors: [ErrNoID]; [store.ErrNotFound]
// when no request of the tenant has that ID (and run); [ErrAmbiguous] when
// requests of several runs have it; the store's.
func (ib *Inbox) Find(ctx context.Context, q Query) (store.Approval, error) {
	if q.ID == "" {
		return store.Approval{}, ErrNoID
	}
	page, err := ib.store.ListApprovals(ctx, store.ApprovalFilter{Tenant: q.Tenant, AllTenants: q.AllTenants, RunID: q.RunID, ID: q.ID, Limit: 2})
	if err != nil {
		return store.Approval{}, err
	}
	switch len(page.Approvals) {
	case 0:
		return store.Approval{}, fmt.Errorf("%w: no approval request %s", store.ErrNotFound, strconv.Quote(q.ID))
	case 1:
		return page.Approvals[0], nil
	}
	return store.Approval{}, fmt.Errorf("%w: %s", ErrAmbiguous, strconv.Quote(q.ID))
}

// List returns every request f selects, across pages, in the order they
// were stored, each with the status a person sees (a pending request past its expiry
// is expired, since no answer is taken any more, even before the store has
// recorded it so).
func (ib *Inbox) List(ctx context.Context, f store.ApprovalFilter) ([]store.Approval, error) {
	var out []store.Approval
	for a, err := range store.AllApprovals(ctx, ib.store, f) {
		if err != nil {
			return nil, err
		}
		a.Status = ib.status(a)
		out = append(out, a)
	}
	return out, nil
}

// status is a's status as a person sees it: a pending request past its
// expiry is expired, since no answer is taken any more, even before the
// store has recorded it so.
func (ib *Inbox) status(a store.Approval) store.Status {
	if a.Status == store.StatusPending && a.Expired(ib.now()) {
		return store.StatusExpired
	}
	return a.Status
}

// Decision is one answer to a request.
type Decision struct {
	// Approve approves when true, denies when false.
	Approve bool
	// By is who decided, and Actor, when not zero, who acted on By's behalf
	// (see [OnBehalf]).
	By, Actor tool.Principal
	// Reason explains the decision; on deny, the model sees it.
	Reason string
	// Data, on approve only, is the edited arguments of an approval, the
	// answer to a question or the value of an input request ([CheckData]).
	Data json.RawMessage
	// Digest, when set, must be the request's digest (store.Approval.Digest,
	// approval.Digest of its arguments): what the person was shown.
	Digest string
}

// OnBehalf returns who a decision is recorded as. With onBehalfOf empty it
// is self, and no actor. Otherwise onBehalfOf names a person (NAME or
// person:NAME): the decision is that person's, and self is kept as the
// actor who gave it (the "act" claim of RFC 8693, section 4.1). Whether
// self may act for another is the caller's to check. Errors:
// [ErrNotPerson] for any other principal.
func OnBehalf(self tool.Principal, onBehalfOf string) (by, actor tool.Principal, err error) {
	if onBehalfOf == "" {
		return self, tool.Principal{}, nil
	}
	p := tool.PrincipalOf(onBehalfOf)
	if p.Kind != tool.PrincipalPerson || p.Name == "" {
		return by, actor, fmt.Errorf("%w, not a %s", ErrNotPerson, p.Kind)
	}
	return p, self, nil
}

// Decide records d on the request a (read from the store by the caller, in
// the caller's tenant: see [Inbox.Find]) after the checks of the package
// doc, and returns the approval as decided. The same decision again by the
// same principals returns the stored approval and no error.
//
// Errors: one when d names nobody who decided, [ErrNotPerson], [ErrDataOnDeny],
// [ErrDigestMismatch], [store.ErrExpired], [*DecidedError],
// [*DataError], [store.ErrNotFound], and Options.Answer's.
func (ib *Inbox) Decide(ctx context.Context, a store.Approval, d Decision) (store.Approval, error) {
	if err := checkDecision(a, d); err != nil {
		return store.Approval{}, err
	}
	if a.Status != store.StatusPending && repeats(a, d) {
		return a, nil
	}
	if ib.status(a) == store.StatusExpired {
		return store.Approval{}, fmt.Errorf("%w: request %s expired before it was decided", store.ErrExpired, strconv.Quote(a.ID))
	}
	if a.Status != store.StatusPending {
		return store.Approval{}, &DecidedError{Approval: a}
	}
	if d.Approve {
		if err := CheckData(a.Request, d.Data); err != nil {
			return store.Approval{}, err
		}
	}
	got, err := ib.answer(ctx, a.RunID, a.ID, store.Answer{Approve: d.Approve, By: d.By, Actor: d.Actor, Reason: d.Reason, Data: d.Data})
	switch {
	case err == nil:
		return got, nil
	case errors.Is(err, store.ErrDecided):
		return ib.decidedMeanwhile(ctx, a, d, err)
	case errors.Is(err, store.ErrExpired), errors.Is(err, store.ErrNotFound):
		return store.Approval{}, err
	case got.ID == a.ID && got.Status != store.StatusPending && repeats(got, d):
		// Stored, but the run was not woken: it sees the answer at its next
		// look at the store.
		ib.log.Warn("a decision is stored but its run was not woken", "run", a.RunID, "request", a.ID, "error", err)
		return got, nil
	}
	return store.Approval{}, err
}

// checkDecision checks what d says on its own and against a's digest.
func checkDecision(a store.Approval, d Decision) error {
	if d.By.IsZero() {
		return errNoPrincipal
	}
	if !d.Actor.IsZero() && (d.By.Kind != tool.PrincipalPerson || d.By.Name == "") {
		return fmt.Errorf("%w, not %s", ErrNotPerson, d.By)
	}
	if !d.Approve && len(d.Data) > 0 {
		return ErrDataOnDeny
	}
	if d.Digest != "" && d.Digest != a.Digest {
		return ErrDigestMismatch
	}
	return nil
}

// decidedMeanwhile answers a decision that lost a race to another: the
// same one is a success, another a [*DecidedError] naming who won.
func (ib *Inbox) decidedMeanwhile(ctx context.Context, a store.Approval, d Decision, err error) (store.Approval, error) {
	cur, gerr := ib.store.GetApproval(ctx, a.RunID, a.ID)
	if gerr != nil {
		return store.Approval{}, err
	}
	if repeats(cur, d) {
		return cur, nil
	}
	return store.Approval{}, &DecidedError{Approval: cur}
}

// repeats reports whether the decided approval a is d again: the same
// principals, the same decision, and for an approval the same data, as
// JSON values (numbers digit for digit, approval.Digest's canonical form).
func repeats(a store.Approval, d Decision) bool {
	if a.DecidedBy != d.By || a.Actor != d.Actor {
		return false
	}
	switch a.Status {
	case store.StatusApproved, store.StatusUsed:
		return d.Approve && sameJSON(a.Data, d.Data)
	case store.StatusDenied:
		return !d.Approve
	}
	return false
}

func sameJSON(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	return approval.Digest(a) == approval.Digest(b)
}
