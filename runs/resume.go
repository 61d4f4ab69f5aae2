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
	run, cfg, st, read, err := h.resumable(ctx, req.RunID)
	if err != nil {
		return nil, err
	}
	claimed, built, answers, err := h.takeUp(ctx, run, cfg, st, read)
	if err != nil {
		return nil, err
	}
	defer runcore.CloseBuilt(built)
	d := h.newDriver(claimed, cfg, built, req.Drive)
	return d.drive(ctx, func(ctx context.Context, a *agent.Agent) iter2 {
		return a.ResumeStream(ctx, st, answers...)
	})
}

// resumable returns the stored run runID, its configuration and its state
// when it may be taken up: halted with at least one answer, or running (a
// live lease refuses the claim that follows; an expired one is taken
// over), with the approvals it read. A governing file that changed while
// the run waited (a tool of the run may have rewritten it) is refused
// before the run is claimed.
func (h *Host) resumable(ctx context.Context, runID string) (run store.Run, cfg RunConfig, st *agent.State, read approvalsRead, err error) {
	if run, err = h.store.GetRun(ctx, runID); err != nil {
		return run, cfg, nil, nil, err
	}
	switch run.Status {
	case store.RunPending, store.RunRunning, store.RunResuming:
	default:
		return run, cfg, nil, nil, fmt.Errorf("%w: run %s is %s", ErrNotResumable, run.ID, run.Status)
	}
	if st, err = runcore.LoadState(run); err != nil {
		return run, cfg, nil, nil, err
	}
	read = approvalsRead{}
	if run.Status == store.RunPending {
		n, _, err := h.answeredIn(ctx, run, st, read)
		if err != nil {
			return run, cfg, nil, nil, err
		}
		if n == 0 {
			return run, cfg, nil, nil, fmt.Errorf("%w: run %s", ErrNothingDecided, run.ID)
		}
	}
	if cfg, err = runcore.LoadConfig(run); err != nil {
		return run, cfg, nil, nil, err
	}
	if err := runcore.CheckPins(cfg); err != nil {
		return run, cfg, nil, nil, fmt.Errorf("run %s: %w", run.ID, err)
	}
	return run, cfg, st, read, nil
}

// takeUp claims run, as resumable read it (its state st, the approvals
// read), to be driven again, and returns it as claimed with its agent and
// the answers to its requests. The agent is built first, so that a
// failure leaves the run and its approvals as they were; then one write
// claims the run, on the version read, uses its approved requests and
// stores its run.resumed event (and the MCP logins made while its agent
// was built).
func (h *Host) takeUp(ctx context.Context, run store.Run, cfg RunConfig, st *agent.State, read approvalsRead) (store.Run, *Built, []tool.Answer, error) {
	built, err := h.buildRun(ctx, run.Tenant, run.ID, run.OwnerPrincipal(), cfg)
	if err != nil {
		return run, nil, nil, err
	}
	as, uses, err := h.answers(ctx, run, st, read)
	if err != nil {
		runcore.CloseBuilt(built)
		return run, nil, nil, err
	}
	claimed, used, err := h.store.ClaimRun(ctx, run.ID, store.Claim{Holder: h.holder, TTL: h.ttl,
		From: []store.RunStatus{store.RunPending, store.RunRunning, store.RunResuming}, To: store.RunResuming,
		Version: run.Version, Use: uses, Events: h.resumedEvents(run, built)})
	if err != nil {
		runcore.CloseBuilt(built)
		return run, nil, nil, fmt.Errorf("runs: claiming run %s: %w", run.ID, err)
	}
	return claimed, built, as.of(used), nil
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
	return h.answeredIn(ctx, run, st, nil)
}

// approvalsRead are the approvals of a run that a resume read, by ID: it
// reads each once (the claim reads again, in its transaction, those it
// uses).
type approvalsRead map[string]store.Approval

// approval returns the approval id of run, from read when it holds it, and
// keeps what it reads there (when read is not nil) once it is decided: one
// still pending is read again, since an answer may come while the resume
// builds its agent, and the claim would then halt the run again on an
// answered request that nothing resumes.
func (h *Host) approval(ctx context.Context, runID, id string, read approvalsRead) (store.Approval, error) {
	if a, ok := read[id]; ok {
		return a, nil
	}
	a, err := h.store.GetApproval(ctx, runID, id)
	if err == nil && read != nil && a.Status != store.StatusPending {
		read[id] = a
	}
	return a, err
}

// answeredIn is answered on the run's state st, keeping the approvals it
// reads in read.
func (h *Host) answeredIn(ctx context.Context, run store.Run, st *agent.State, read approvalsRead) (n, total int, err error) {
	now := h.now()
	for _, q := range st.PendingRequests() {
		total++
		a, err := h.approval(ctx, run.ID, q.ID, read)
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
func (h *Host) answers(ctx context.Context, run store.Run, st *agent.State, read approvalsRead) (pendingAnswers, []store.Use, error) {
	var out pendingAnswers
	var uses []store.Use
	for _, w := range st.Waiting() {
		ans, use, ok, err := h.answer(ctx, run, w, read)
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
func (h *Host) answer(ctx context.Context, run store.Run, w agent.WaitingCall, read approvalsRead) (ans tool.Answer, use, ok bool, err error) {
	p := w.Pending
	if why, err := runcore.CheckCarried(ctx, h.store, run.ID, w); err != nil {
		return tool.Answer{}, false, false, err
	} else if why != "" {
		h.log.Warn("a halted call carries an approval the store does not hold; the call is declined", "run", run.ID, "request", p.Request.ID, "why", why)
		return runcore.CarriedDeclined(p.Request.ID, why), false, true, nil
	}
	a, err := h.approval(ctx, run.ID, p.Request.ID, read)
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
