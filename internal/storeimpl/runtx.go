package storeimpl

import (
	"context"
	"slices"
	"time"

	"github.com/tollgate-dev/tollgate/store"
)

// RunTx is one transaction of a SQL store as the methods that change a run
// use it; the store's SQL (placeholders, row locks) is behind it.
type RunTx interface {
	// LoadRun reads run id, locked for a change where the backend locks
	// rows, with the largest lease token the run ever had;
	// [store.ErrNotFound] when there is none.
	LoadRun(ctx context.Context, id string) (store.Run, int64, error)
	// WriteRun stores r's status, state, result, lease, version and
	// update time, and lastToken, and sets in r what the backend keeps of
	// them (PostgreSQL: times to the microsecond).
	WriteRun(ctx context.Context, r *store.Run, lastToken int64) error
	// AddApprovals stores as as new pending approvals of run
	// ([NewApproval]); [store.ErrExists] for a taken ID.
	AddApprovals(ctx context.Context, run store.Run, now time.Time, as []store.Approval) error
	// AppendEvents appends evs to the log as events of run ([CheckEvent]).
	AppendEvents(ctx context.Context, run *store.Run, now time.Time, evs []store.Event) error
	// Transition applies t at now to the approval id of run and, when
	// [Kept] says so, stores it with its event; it returns the approval
	// and the step's error, as a store's Decide and Consume do.
	Transition(ctx context.Context, run store.Run, id string, t Transition, now time.Time) (store.Approval, error)
}

// UpdateRun is [store.Store.UpdateRun] in tx: it loads run id, applies u
// at now ([ApplyUpdate]), writes the run, and adds u's approvals and
// events.
func UpdateRun(ctx context.Context, tx RunTx, id string, u store.RunUpdate, now time.Time) (store.Run, error) {
	cur, last, err := tx.LoadRun(ctx, id)
	if err != nil {
		return store.Run{}, err
	}
	next, err := ApplyUpdate(cur, u, now)
	if err != nil {
		return store.Run{}, err
	}
	if err := tx.WriteRun(ctx, &next, last); err != nil {
		return store.Run{}, err
	}
	if err := AddRecords(ctx, tx, &next, now, u.Approvals, u.Events); err != nil {
		return store.Run{}, err
	}
	return next, nil
}

// AddRecords adds to run, in tx, new pending approvals and events, as
// CreateRun and UpdateRun do after writing the run.
func AddRecords(ctx context.Context, tx RunTx, run *store.Run, now time.Time, as []store.Approval, evs []store.Event) error {
	if err := tx.AddApprovals(ctx, *run, now, as); err != nil {
		return err
	}
	return tx.AppendEvents(ctx, run, now, evs)
}

// ClaimRun is [store.Store.ClaimRun] in tx at now ([ApplyClaim]): the
// claim, the uses of c.Use ([UseApprovals]) and c.Events.
func ClaimRun(ctx context.Context, tx RunTx, id string, c store.Claim, now time.Time) (store.Run, []store.Approval, error) {
	cur, last, err := tx.LoadRun(ctx, id)
	if err != nil {
		return store.Run{}, nil, err
	}
	next, err := ApplyClaim(cur, last, c, now)
	if err != nil {
		return store.Run{}, nil, err
	}
	if err := tx.WriteRun(ctx, &next, next.Lease.Token); err != nil {
		return store.Run{}, nil, err
	}
	used, err := UseApprovals(c.Use, func(id string, t Transition) (store.Approval, error) {
		return tx.Transition(ctx, next, id, t, now)
	})
	if err != nil {
		return store.Run{}, nil, err
	}
	if err := tx.AppendEvents(ctx, &next, now, c.Events); err != nil {
		return store.Run{}, nil, err
	}
	return next, used, nil
}

// UseApprovals uses the approvals uses names once, in order, as
// [store.Store.Consume] does, each by transition (the store's, within the
// claim's transaction). An approval found expired is kept as expired and
// returned so; another error is returned, and the claim must change
// nothing.
func UseApprovals(uses []store.Use, transition func(id string, t Transition) (store.Approval, error)) ([]store.Approval, error) {
	var out []store.Approval
	for _, u := range uses {
		a, err := Consume(u.Digest, func(t Transition) (store.Approval, error) { return transition(u.ID, t) })
		if err != nil && !isExpired(err) {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// RenewLease is [store.Store.RenewLease] in tx at now ([ApplyRenew]).
func RenewLease(ctx context.Context, tx RunTx, id, holder string, token int64, ttl time.Duration, now time.Time) (store.Lease, error) {
	cur, last, err := tx.LoadRun(ctx, id)
	if err != nil {
		return store.Lease{}, err
	}
	next, err := ApplyRenew(cur, holder, token, ttl, now)
	if err != nil {
		return store.Lease{}, err
	}
	if err := tx.WriteRun(ctx, &next, last); err != nil {
		return store.Lease{}, err
	}
	return *next.Lease, nil
}

// NewRun checks r ([CheckRun]) and returns its run as a store creates it
// at now: its JSON copied, version 1, created and updated at now, and,
// when r asks for a lease, leased to r.Holder for r.LeaseTTL with token 1
// ([CheckClaim]). Errors: [store.ErrInvalid].
func NewRun(r store.CreateRunRequest, now time.Time) (store.Run, error) {
	if err := CheckRun(r); err != nil {
		return store.Run{}, err
	}
	run := r.Run
	run.State, run.Result, run.Config = slices.Clone(run.State), slices.Clone(run.Result), slices.Clone(run.Config)
	run.CreatedAt, run.UpdatedAt, run.Version, run.Lease = now, now, 1, nil
	if r.Holder != "" || r.LeaseTTL != 0 {
		if err := CheckClaim(run.ID, store.Claim{Holder: r.Holder, TTL: r.LeaseTTL, From: []store.RunStatus{run.Status}}); err != nil {
			return store.Run{}, err
		}
		run.Lease = &store.Lease{Holder: r.Holder, Token: 1, ExpiresAt: now.Add(r.LeaseTTL)}
	}
	return run, nil
}

// LeaseToken returns the token of r's lease, 0 when it has none.
func LeaseToken(r store.Run) int64 {
	if r.Lease == nil {
		return 0
	}
	return r.Lease.Token
}
