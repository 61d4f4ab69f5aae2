package runs

import (
	"context"
	"time"

	"github.com/tollgate-dev/tollgate/store"
)

// WaitAnswered blocks until every pending request of the halted run runID has
// an answer or expired, without polling where the store allows it. It returns
// at once for a run that is not pending.
func (h *Host) WaitAnswered(ctx context.Context, runID string) error {
	var after int64
	for {
		run, err := h.store.GetRun(ctx, runID)
		if err != nil {
			return err
		}
		if run.Status != store.RunPending {
			return nil
		}
		n, total, err := h.answered(ctx, run)
		if err != nil {
			return err
		}
		if n == total {
			return nil
		}
		evs, err := h.store.ListEvents(ctx, store.EventFilter{AllTenants: true, RunID: runID, AfterSeq: after})
		if err != nil {
			return err
		}
		if len(evs) > 0 {
			after = evs[len(evs)-1].Seq
			continue
		}
		if err := h.waitEvent(ctx, run, after); err != nil {
			return err
		}
	}
}

// waitEvent waits until the run has an event after after, or until the
// nearest expiry of its pending requests (an expiry is no event). Errors:
// ctx's alone; the next look at the store sees what else went wrong.
func (h *Host) waitEvent(ctx context.Context, run store.Run, after int64) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if exp := h.nextExpiry(ctx, run); !exp.IsZero() {
		var cancelExp context.CancelFunc
		wctx, cancelExp = context.WithDeadline(wctx, exp)
		defer cancelExp()
	}
	if err := h.store.WaitEvents(wctx, store.EventFilter{AllTenants: true, RunID: run.ID, AfterSeq: after}); err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return nil
}

// nextExpiry is the nearest expiry of the run's pending requests, zero for
// none.
func (h *Host) nextExpiry(ctx context.Context, run store.Run) time.Time {
	var next time.Time
	for a, err := range store.AllApprovals(ctx, h.store, store.ApprovalFilter{AllTenants: true, RunID: run.ID, Status: store.StatusPending}) {
		if err != nil {
			return next // wake at the nearest seen so far; events wake the rest
		}
		if a.ExpiresAt != nil && (next.IsZero() || a.ExpiresAt.Before(next)) {
			next = *a.ExpiresAt
		}
	}
	return next
}
