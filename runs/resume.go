package runs

import (
	"context"
	"encoding/json"
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
	claimed, st, built, answers, err := h.takeUp(ctx, run, cfg)
	if err != nil {
		return nil, err
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

// takeUp claims run, as read at the version resumable saw, to be driven
// again, and returns it as claimed with its state, its agent and the
// answers to its requests. The agent is built first, so that a failure
// leaves the run and its approvals as they were; then one write claims the
// run, uses its approved requests and stores its run.resumed event (and
// the MCP logins made while its agent was built).
func (h *Host) takeUp(ctx context.Context, run store.Run, cfg RunConfig) (store.Run, *agent.State, *Built, []tool.Answer, error) {
	st, err := runcore.LoadState(run)
	if err != nil {
		return run, nil, nil, nil, err
	}
	built, err := h.buildRun(ctx, run.Tenant, run.ID, run.OwnerPrincipal(), cfg)
	if err != nil {
		return run, nil, nil, nil, err
	}
	as, uses, err := h.answers(ctx, run, st)
	if err != nil {
		runcore.CloseBuilt(built)
		return run, nil, nil, nil, err
	}
	claimed, used, err := h.store.ClaimRun(ctx, run.ID, store.Claim{Holder: h.holder, TTL: h.ttl,
		From: []store.RunStatus{store.RunPending, store.RunRunning, store.RunResuming}, To: store.RunResuming,
		Version: run.Version, Use: uses, Events: h.resumedEvents(run, built)})
	if err != nil {
		runcore.CloseBuilt(built)
		return run, nil, nil, nil, fmt.Errorf("runs: claiming run %s: %w", run.ID, err)
	}
	return claimed, st, built, as.of(used), nil
}

// resumedEvents are the run.resumed event of run, and the MCP logins made
// while its agent was built.
func (h *Host) resumedEvents(run store.Run, built *Built) []store.Event {
	if run.Status != store.RunPending {
		h.log.Info("taking over a run whose host stopped", "run", run.ID, "from", string(run.Status))
	}
	data, _ := json.Marshal(map[string]any{"from": string(run.Status), "holder": h.holder})
	return append([]store.Event{{Tenant: run.Tenant, RunID: run.ID, Type: runcore.EventRunResumed, Data: data}},
		runcore.LoginEvents(run.Tenant, run.ID, run.OwnerPrincipal(), built)...)
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

// pendingAnswers are the answers a resume gives, in the order of the
// state's waiting calls: each is known, or is that of the approval the
// claim uses (use, an index into the claim's uses, or -1).
type pendingAnswers []pendingAnswer

type pendingAnswer struct {
	ans tool.Answer
	use int
}

// of returns the answers, those of the approvals the claim used taken from
// used (in the claim's order); an approval with no answer gives none.
func (p pendingAnswers) of(used []store.Approval) []tool.Answer {
	var out []tool.Answer
	for _, e := range p {
		if e.use < 0 {
			out = append(out, e.ans)
			continue
		}
		if ans, ok := used[e.use].Answer(); ok {
			out = append(out, ans)
		}
	}
	return out
}

// answers turns the store's decisions on st's pending requests into the
// agent's answers, and lists the approvals the claim must use once for
// them.
func (h *Host) answers(ctx context.Context, run store.Run, st *agent.State) (pendingAnswers, []store.Use, error) {
	var out pendingAnswers
	var uses []store.Use
	for _, w := range st.Waiting() {
		ans, use, ok, err := h.answer(ctx, run, w)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case use:
			out = append(out, pendingAnswer{use: len(uses)})
			uses = append(uses, store.Use{ID: w.Pending.Request.ID, Digest: w.Pending.Digest})
		case ok:
			out = append(out, pendingAnswer{ans: ans, use: -1})
		}
	}
	return out, uses, nil
}

// answer is the agent's answer to w's request, from the store's decision
// on it, or false when it has none yet; use is true for an approval, which
// the claim uses (consumes) and whose answer it returns. One that a host
// which did not finish used declines the call, as does a decision not made
// through tollgate or an approval the call carries that the store does not
// hold.
func (h *Host) answer(ctx context.Context, run store.Run, w agent.WaitingCall) (ans tool.Answer, use, ok bool, err error) {
	p := w.Pending
	if why, err := runcore.CheckCarried(ctx, h.store, run.ID, w); err != nil {
		return tool.Answer{}, false, false, err
	} else if why != "" {
		h.log.Warn("a halted call carries an approval the store does not hold; the call is declined", "run", run.ID, "request", p.Request.ID, "why", why)
		return runcore.CarriedDeclined(p.Request.ID, why), false, true, nil
	}
	a, err := h.store.GetApproval(ctx, run.ID, p.Request.ID)
	if err != nil {
		return tool.Answer{}, false, false, err
	}
	switch {
	case a.Unverified:
		// Written around tollgate: declined, never run.
		h.log.Warn("a decision in the store was not made through tollgate; the call is declined", "run", run.ID, "request", a.ID, "status", string(a.Status))
		ans, _ := a.Answer()
		return ans, false, true, nil
	case a.Status == store.StatusPending:
		if a.Expired(h.now()) {
			return tool.Answer{ID: a.ID, OK: false, Principal: approval.Runtime, Reason: "the approval request expired before anyone answered it"}, false, true, nil
		}
		return tool.Answer{}, false, false, nil
	case a.Status == store.StatusUsed:
		// A host that did not finish used this approval: the call may have
		// run. It is never run twice.
		return tool.Answer{ID: a.ID, OK: false, Principal: approval.Runtime,
			Reason: "the approval was used by a resume that did not finish; the call may or may not have run, and is not run again"}, false, true, nil
	case a.Status == store.StatusApproved:
		return tool.Answer{}, true, false, nil
	}
	ans, ok = a.Answer()
	return ans, false, ok, nil
}
