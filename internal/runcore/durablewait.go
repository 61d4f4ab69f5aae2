package runcore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/internal/jsonenc"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// halt stores a halted part of the run: its state, its new approvals and
// the events it emitted, as one step.
func (d *Durable) halt(ctx context.Context, eng Engine, in DurableRun, res *agent.Result, evs []store.Event, n int, from store.RunStatus) error {
	b, err := eng.Step(ctx, fmt.Sprintf("halt %d", n), func(ctx context.Context) ([]byte, error) {
		st, err := jsonenc.Marshal(res.State)
		if err != nil {
			return nil, err
		}
		known, err := KnownApprovals(ctx, d.store, in.RunID)
		if err != nil {
			return nil, err
		}
		reason := res.Reason
		if reason == "" {
			reason = HaltReason(res.State)
		}
		data, _ := json.Marshal(map[string]any{"status": string(store.RunPending), "reason": reason})
		evs = append(evs, store.Event{Tenant: in.Tenant, RunID: in.RunID, Type: EventRunHalted, Time: d.now(), Data: data})
		_, err = d.store.UpdateRun(ctx, in.RunID, store.RunUpdate{From: from, Status: store.RunPending, State: st, Result: ResultJSON(res),
			Approvals: ApprovalsOf(in.Tenant, res.State, known), Events: evs})
		return d.cancelledOr(ctx, in.RunID, store.RunPending, err)
	})
	if err == nil && string(b) == cancelledMark {
		return ErrCancelRequested
	}
	return err
}

// awaitRecord is what the engine records of one look at a request's answer.
type awaitRecord struct {
	Answer    *tool.Answer `json:"answer,omitempty"`
	Cancelled bool         `json:"cancelled,omitempty"`
}

// await waits for the answer to w's request q: it looks in the store, and
// until the request is decided (or expired) waits for a wake-up message,
// at most AnswerPoll or until the expiry. A call that carries an approval
// the store does not hold is declined (CheckCarried).
func (d *Durable) await(ctx context.Context, eng Engine, in DurableRun, w agent.WaitingCall) (tool.Answer, error) {
	q := w.Pending.Request
	for {
		b, err := eng.Step(ctx, "answer "+q.ID, func(ctx context.Context) ([]byte, error) {
			var rec awaitRecord
			if r, err := d.store.GetRun(ctx, in.RunID); err != nil {
				return nil, err
			} else if r.Status == store.RunCancelled {
				rec.Cancelled = true
				return json.Marshal(rec)
			}
			if why, err := CheckCarried(ctx, d.store, in.RunID, w); err != nil {
				return nil, err
			} else if why != "" {
				d.log.Warn("a halted call carries an approval the store does not hold; the call is declined", "run", in.RunID, "request", q.ID, "why", why)
				ans := CarriedDeclined(q.ID, why)
				rec.Answer = &ans
				return json.Marshal(rec)
			}
			a, err := d.store.GetApproval(ctx, in.RunID, q.ID)
			if err != nil {
				return nil, err
			}
			switch {
			case a.Unverified:
				ans, _ := a.Answer() // declines: written around tollgate
				rec.Answer = &ans
			case a.Status == store.StatusPending && a.Expired(d.now()):
				rec.Answer = &tool.Answer{ID: q.ID, Principal: approval.Runtime, Reason: "the approval request expired before anyone answered it"}
			case a.Status == store.StatusUsed:
				rec.Answer = &tool.Answer{ID: q.ID, Principal: approval.Runtime, Reason: usedReason}
			default:
				if ans, ok := a.Answer(); ok {
					rec.Answer = &ans
				}
			}
			return json.Marshal(rec)
		})
		if err != nil {
			return tool.Answer{}, err
		}
		var rec awaitRecord
		if err := json.Unmarshal(b, &rec); err != nil {
			return tool.Answer{}, fmt.Errorf("runs: run %s: recorded answer of %s: %w", in.RunID, q.ID, err)
		}
		if rec.Cancelled {
			return tool.Answer{}, ErrCancelRequested
		}
		if rec.Answer != nil {
			return *rec.Answer, nil
		}
		wait := d.poll
		if q.ExpiresAt != nil {
			if until := q.ExpiresAt.Sub(d.now()) + 10*time.Millisecond; until < wait {
				wait = max(until, 10*time.Millisecond)
			}
		}
		if _, _, err := eng.Recv(ctx, AnswerTopic(q.ID), wait); err != nil {
			return tool.Answer{}, err
		}
	}
}
