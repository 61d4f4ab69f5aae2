package storeimpl

import (
	"context"
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
}

// UpdateRun is the run's part of [store.Store.UpdateRun] in tx: it loads
// run id, applies u at now ([ApplyUpdate]) and writes the run; the caller
// adds u's approvals and events in the same transaction.
func UpdateRun(ctx context.Context, tx RunTx, id string, u store.RunUpdate, now time.Time) (store.Run, error) {
	cur, last, err := tx.LoadRun(ctx, id)
	if err != nil {
		return store.Run{}, err
	}
	next, err := ApplyUpdate(cur, u, now)
	if err != nil {
		return store.Run{}, err
	}
	return next, tx.WriteRun(ctx, &next, last)
}

// ClaimRun is [store.Store.ClaimRun] in tx at now ([ApplyClaim]).
func ClaimRun(ctx context.Context, tx RunTx, id string, c store.Claim, now time.Time) (store.Run, error) {
	cur, last, err := tx.LoadRun(ctx, id)
	if err != nil {
		return store.Run{}, err
	}
	next, err := ApplyClaim(cur, last, c, now)
	if err != nil {
		return store.Run{}, err
	}
	return next, tx.WriteRun(ctx, &next, next.Lease.Token)
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
