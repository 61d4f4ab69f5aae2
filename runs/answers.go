package runs

import (
	"context"
	"errors"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// answered counts the pending requests of a halted run that have an answer
// (decided or expired), and all of them.
func (h *Host) answered(ctx context.Context, run store.Run) (n, total int, err error) {
	st, err := runcore.LoadState(run)
	if err != nil {
		return 0, 0, err
	}
	now := h.now()
	for _, q := range st.PendingRequests() {
		total++
		a, err := h.store.GetApproval(ctx, run.ID, q.ID)
		if err != nil {
			return 0, 0, err
		}
		if a.Status != store.StatusPending || a.Expired(now) {
			n++
		}
	}
	return n, total, nil
}

// answers turns the store's decisions on st's pending requests into the
// agent's answers, using each approval once.
func (h *Host) answers(ctx context.Context, run store.Run, st *agent.State) ([]tool.Answer, error) {
	var out []tool.Answer
	for _, w := range st.Waiting() {
		p := w.Pending
		if why, err := runcore.CheckCarried(ctx, h.store, run.ID, w); err != nil {
			return nil, err
		} else if why != "" {
			h.log.Warn("a halted call carries an approval the store does not hold; the call is declined", "run", run.ID, "request", p.Request.ID, "why", why)
			out = append(out, runcore.CarriedDeclined(p.Request.ID, why))
			continue
		}
		a, err := h.store.GetApproval(ctx, run.ID, p.Request.ID)
		if err != nil {
			return nil, err
		}
		if a.Unverified {
			// Written around tollgate: declined, never run.
			h.log.Warn("a decision in the store was not made through tollgate; the call is declined", "run", run.ID, "request", a.ID, "status", string(a.Status))
			ans, _ := a.Answer()
			out = append(out, ans)
			continue
		}
		switch a.Status {
		case store.StatusPending:
			if a.Expired(h.now()) {
				out = append(out, tool.Answer{ID: a.ID, OK: false, Principal: approval.Runtime, Reason: "the approval request expired before anyone answered it"})
			}
			continue
		case store.StatusUsed:
			// A host that did not finish used this approval: the call may have
			// run. It is never run twice.
			out = append(out, tool.Answer{ID: a.ID, OK: false, Principal: approval.Runtime,
				Reason: "the approval was used by a resume that did not finish; the call may or may not have run, and is not run again"})
			continue
		case store.StatusApproved:
			a, err = h.store.Consume(ctx, run.ID, a.ID, p.Digest)
			if err != nil && !errors.Is(err, store.ErrExpired) {
				return nil, err
			}
		}
		if ans, ok := a.Answer(); ok {
			out = append(out, ans)
		}
	}
	return out, nil
}

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
		// An expiry is no event: wake up for the nearest one.
		var wctx context.Context
		var cancel context.CancelFunc
		if exp := h.nextExpiry(ctx, run); !exp.IsZero() {
			wctx, cancel = context.WithDeadline(ctx, exp)
		} else {
			wctx, cancel = context.WithCancel(ctx)
		}
		err = h.store.WaitEvents(wctx, store.EventFilter{AllTenants: true, RunID: runID, AfterSeq: after})
		cancel()
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

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
