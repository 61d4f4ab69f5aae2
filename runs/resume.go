package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// ResumeRequest resumes a stored run.
type ResumeRequest struct {
	RunID string
	Drive
}

// Resume takes a stored run up: a halted run once at least one of its
// requests is answered (or expired), or a run whose host died (its lease
// expired) from its latest checkpoint. Approved requests are used once;
// denied and expired ones give the model an error result with the reason. Of
// two hosts resuming one run, one wins; the other gets [store.ErrLeased] or
// [store.ErrConflict]. Errors: [store.ErrNotFound], [ErrNotResumable],
// [ErrNothingDecided], and the run's own.
func (h *Host) Resume(ctx context.Context, req ResumeRequest) (*agent.Result, error) {
	run, cfg, err := h.resumable(ctx, req.RunID)
	if err != nil {
		return nil, err
	}
	claimed, err := h.store.ClaimRun(ctx, run.ID, store.Claim{Holder: h.holder, TTL: h.ttl, From: []store.RunStatus{store.RunPending, store.RunRunning, store.RunResuming}, To: store.RunResuming})
	if err != nil {
		return nil, fmt.Errorf("runs: claiming run %s: %w", run.ID, err)
	}
	st, built, answers, err := h.takeUp(ctx, claimed, run.Status, cfg)
	if err != nil {
		// Nothing ran: hand the run back as it was.
		_, uerr := h.store.UpdateRun(context.WithoutCancel(ctx), run.ID, store.RunUpdate{LeaseToken: claimed.Lease.Token, Status: run.Status, ReleaseLease: true})
		return nil, errors.Join(err, uerr)
	}
	defer runcore.CloseBuilt(built)
	d := h.newDriver(claimed, cfg, built, req.Drive)
	return d.drive(ctx, func(ctx context.Context, a *agent.Agent) iter2 {
		return a.ResumeStream(ctx, st, answers...)
	})
}

// resumable returns the stored run runID and its configuration when it may
// be taken up: halted with at least one answer, or running (a live lease
// refuses the claim that follows; an expired one is taken over). A
// governing file that changed while the run waited (a tool of the run may
// have rewritten it) is refused before the run is claimed.
func (h *Host) resumable(ctx context.Context, runID string) (store.Run, RunConfig, error) {
	run, err := h.store.GetRun(ctx, runID)
	if err != nil {
		return run, RunConfig{}, err
	}
	switch run.Status {
	case store.RunPending:
		n, _, err := h.answered(ctx, run)
		if err != nil {
			return run, RunConfig{}, err
		}
		if n == 0 {
			return run, RunConfig{}, fmt.Errorf("%w: run %s", ErrNothingDecided, run.ID)
		}
	case store.RunRunning, store.RunResuming:
	default:
		return run, RunConfig{}, fmt.Errorf("%w: run %s is %s", ErrNotResumable, run.ID, run.Status)
	}
	cfg, err := runcore.LoadConfig(run)
	if err != nil {
		return run, cfg, err
	}
	if err := runcore.CheckPins(cfg); err != nil {
		return run, cfg, fmt.Errorf("run %s: %w", run.ID, err)
	}
	return run, cfg, nil
}

// takeUp readies the claimed run, which was in status from, to be driven
// again: its state, its agent (built before any approval is used, so that
// a failure leaves them as they were), the answers to its requests, and its
// run.resumed event stored.
func (h *Host) takeUp(ctx context.Context, claimed store.Run, from store.RunStatus, cfg RunConfig) (*agent.State, *Built, []tool.Answer, error) {
	st, err := runcore.LoadState(claimed)
	if err != nil {
		return nil, nil, nil, err
	}
	built, err := h.buildRun(ctx, claimed.Tenant, claimed.ID, claimed.OwnerPrincipal(), cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	answers, err := h.answers(ctx, claimed, st)
	if err == nil {
		err = h.storeResumed(ctx, claimed, from, built)
	}
	if err != nil {
		runcore.CloseBuilt(built)
		return nil, nil, nil, err
	}
	return st, built, answers, nil
}

// storeResumed stores the run.resumed event of the claimed run, and the MCP
// logins made while its agent was built.
func (h *Host) storeResumed(ctx context.Context, claimed store.Run, from store.RunStatus, built *Built) error {
	if from != store.RunPending {
		h.log.Info("taking over a run whose host stopped", "run", claimed.ID, "from", string(from))
	}
	data, _ := json.Marshal(map[string]any{"from": string(from), "holder": h.holder})
	evs := append([]store.Event{{Tenant: claimed.Tenant, RunID: claimed.ID, Type: runcore.EventRunResumed, Data: data}},
		runcore.LoginEvents(claimed.Tenant, claimed.ID, claimed.OwnerPrincipal(), built)...)
	_, err := h.store.AppendEvents(ctx, evs...)
	return err
}

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
		ans, ok, err := h.answer(ctx, run, w)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, ans)
		}
	}
	return out, nil
}

// answer is the agent's answer to w's request, from the store's decision
// on it, or false when it has none yet. An approval is used (consumed)
// here; one that a host which did not finish used declines the call, as
// does a decision not made through tollgate or an approval the call
// carries that the store does not hold.
func (h *Host) answer(ctx context.Context, run store.Run, w agent.WaitingCall) (tool.Answer, bool, error) {
	p := w.Pending
	if why, err := runcore.CheckCarried(ctx, h.store, run.ID, w); err != nil {
		return tool.Answer{}, false, err
	} else if why != "" {
		h.log.Warn("a halted call carries an approval the store does not hold; the call is declined", "run", run.ID, "request", p.Request.ID, "why", why)
		return runcore.CarriedDeclined(p.Request.ID, why), true, nil
	}
	a, err := h.store.GetApproval(ctx, run.ID, p.Request.ID)
	if err != nil {
		return tool.Answer{}, false, err
	}
	switch {
	case a.Unverified:
		// Written around tollgate: declined, never run.
		h.log.Warn("a decision in the store was not made through tollgate; the call is declined", "run", run.ID, "request", a.ID, "status", string(a.Status))
		ans, _ := a.Answer()
		return ans, true, nil
	case a.Status == store.StatusPending:
		if a.Expired(h.now()) {
			return tool.Answer{ID: a.ID, OK: false, Principal: approval.Runtime, Reason: "the approval request expired before anyone answered it"}, true, nil
		}
		return tool.Answer{}, false, nil
	case a.Status == store.StatusUsed:
		// A host that did not finish used this approval: the call may have
		// run. It is never run twice.
		return tool.Answer{ID: a.ID, OK: false, Principal: approval.Runtime,
			Reason: "the approval was used by a resume that did not finish; the call may or may not have run, and is not run again"}, true, nil
	case a.Status == store.StatusApproved:
		a, err = h.store.Consume(ctx, run.ID, a.ID, p.Digest)
		if err != nil && !errors.Is(err, store.ErrExpired) {
			return tool.Answer{}, false, err
		}
	}
	ans, ok := a.Answer()
	return ans, ok, nil
}
