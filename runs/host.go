package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// Errors of a [Host]; test with errors.Is.
var (
	// ErrNothingDecided: Resume of a halted run none of whose requests has an
	// answer yet (or expired). Wait with [Host.WaitAnswered] first.
	ErrNothingDecided = errors.New("runs: no request of the run is answered yet")
	// ErrNotResumable: the run is done, failed, incomplete or cancelled.
	ErrNotResumable = runcore.ErrNotResumable
	// ErrEmptyPrompt: Start with an empty prompt.
	ErrEmptyPrompt = runcore.ErrEmptyPrompt
	// ErrHostStopping is the cause a host gives the context of [Host.Start]
	// or [Host.Resume] (context.WithCancelCause) to stop driving a run
	// without ending it, when it shuts down: the run keeps its status and
	// its latest checkpoint, its lease is released at once, and the next
	// [Host.Resume] (of this host or another) takes it over from that
	// checkpoint, as after a crash but without waiting for the lease.
	ErrHostStopping = errors.New("runs: the host is stopping")
)

// Options configures a [Host]; nil means defaults.
type Options struct {
	// Holder names this host in leases (default: hostname, PID and a random
	// suffix). Two hosts must never share one.
	Holder string
	// LeaseTTL is how long a lease lasts without a heartbeat (default 30s);
	// the heartbeat renews it every third of that.
	LeaseTTL time.Duration
	// Middleware is added to every agent the host builds (tracing, metrics).
	Middleware []agent.Middleware
	// Logger receives the host's logs (default discards).
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Host drives runs stored in a [store.Store]. It is safe for concurrent use;
// several hosts, in one process or many, may share one store.
type Host struct {
	store  store.Store
	build  Builder
	holder string
	ttl    time.Duration
	mw     []agent.Middleware
	log    *slog.Logger
	now    func() time.Time
}

// New returns a host over s that builds agents with b.
func New(s store.Store, b Builder, opts *Options) (*Host, error) {
	if s == nil || b == nil {
		return nil, errors.New("runs: New needs a store and a builder")
	}
	h := &Host{store: s, build: runcore.Checked(b), ttl: runcore.DefaultLeaseTTL, log: slog.New(slog.DiscardHandler), now: time.Now}
	if opts != nil {
		if opts.LeaseTTL < 0 {
			return nil, fmt.Errorf("runs: LeaseTTL must not be negative, got %s", opts.LeaseTTL)
		}
		if opts.LeaseTTL > 0 {
			h.ttl = opts.LeaseTTL
		}
		h.holder = opts.Holder
		h.mw = opts.Middleware
		if opts.Logger != nil {
			h.log = opts.Logger
		}
		if opts.Now != nil {
			h.now = opts.Now
		}
	}
	if h.holder == "" {
		host, _ := os.Hostname()
		h.holder = fmt.Sprintf("%s:%d:%s", host, os.Getpid(), strings.TrimPrefix(runcore.NewRunID(), "run_")[:8])
	}
	return h, nil
}

// Drive says how one part of a run is driven by [Host.Start] or [Host.Resume].
type Drive struct {
	// WaitFor, if set, answers pending requests in this process (a terminal
	// prompt, an automatic yes or no); otherwise the run halts and is stored.
	WaitFor tool.WaitFunc
	// OnEvent, if set, sees every event of the agent as it happens, on the
	// goroutine that called Start or Resume.
	OnEvent func(agent.Event)
}

// StartRequest starts a run.
type StartRequest struct {
	// RunID is the new run's ID; empty for a new random one ("run_" and 16
	// hex digits).
	RunID string
	// Tenant is stored with the run.
	Tenant string
	// Owner is the principal who started the run, stored as its text form
	// ([store.Run.Owner]; read back with [store.Run.OwnerPrincipal]); zero
	// for no one. A kind that is not one of tool's principal kinds is an
	// error.
	Owner tool.Principal
	// Config must be resolved ([RunConfig.Resolve]).
	Config RunConfig
	// Prompt is the user's message; it must not be empty.
	Prompt string
	// History is an earlier conversation the run starts from.
	History []model.Message
	// Created, if set, is called once the run is stored (before its first
	// model turn), with the run as stored; a host that answers a request
	// while the run goes on in the background reports it from here.
	Created func(store.Run)
	Drive
}

// Start stores a new run and drives it until it ends or halts on a pending
// request (then it is stored with its requests, and its lease released). It
// returns the agent's result and error; storing failures are returned too.
func (h *Host) Start(ctx context.Context, req StartRequest) (*agent.Result, error) {
	if req.Prompt == "" {
		return nil, ErrEmptyPrompt
	}
	if err := runcore.CheckConfig(req.Config); err != nil {
		return nil, err
	}
	if err := runcore.CheckOwner(req.Owner); err != nil {
		return nil, err
	}
	id := req.RunID
	if id == "" {
		id = runcore.NewRunID()
	}
	// The files that govern the run are pinned as they are now: every later
	// build of its agent (resume, takeover) refuses one that changed.
	cfg, err := runcore.PinFiles(req.Config)
	if err != nil {
		return nil, err
	}
	req.Config = cfg
	cfgJSON, err := json.Marshal(req.Config)
	if err != nil {
		return nil, err
	}
	built, err := runcore.BuildPinned(runcore.WithBuildRun(runcore.WithBuildTenant(ctx, req.Tenant), id, req.Owner), h.build, req.Config)
	if err != nil {
		return nil, err
	}
	defer runcore.CloseBuilt(built)
	started := runcore.StartedData(req.Config, req.Owner, false)
	run := store.Run{ID: id, Tenant: req.Tenant, Owner: req.Owner.String(), Status: store.RunRunning, Config: cfgJSON}
	claimed, err := h.store.CreateRun(ctx, store.CreateRunRequest{Run: run, Holder: h.holder, LeaseTTL: h.ttl,
		Events: append([]store.Event{{Tenant: req.Tenant, RunID: id, Type: runcore.EventRunStarted, Data: started}}, runcore.LoginEvents(req.Tenant, id, req.Owner, built)...)})
	if err != nil {
		return nil, fmt.Errorf("runs: storing run %s: %w", id, err)
	}
	if req.Created != nil {
		req.Created(claimed)
	}
	d := h.newDriver(claimed, req.Config, built, req.Drive)
	return d.drive(ctx, func(ctx context.Context, a *agent.Agent) iter2 {
		return a.Stream(ctx, req.Prompt, agent.WithRunID(id), agent.WithHistory(req.History...))
	})
}

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
	run, err := h.store.GetRun(ctx, req.RunID)
	if err != nil {
		return nil, err
	}
	switch run.Status {
	case store.RunPending:
		n, _, err := h.answered(ctx, run)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, fmt.Errorf("%w: run %s", ErrNothingDecided, run.ID)
		}
	case store.RunRunning, store.RunResuming:
		// A live lease refuses the claim below; an expired one is taken over.
	default:
		return nil, fmt.Errorf("%w: run %s is %s", ErrNotResumable, run.ID, run.Status)
	}
	cfg, err := runcore.LoadConfig(run)
	if err != nil {
		return nil, err
	}
	// A governing file that changed while the run waited (a tool of the run
	// may have rewritten it) is refused before the run is claimed.
	if err := runcore.CheckPins(cfg); err != nil {
		return nil, fmt.Errorf("run %s: %w", run.ID, err)
	}
	from := run.Status
	claimed, err := h.store.ClaimRun(ctx, run.ID, store.Claim{Holder: h.holder, TTL: h.ttl, From: []store.RunStatus{store.RunPending, store.RunRunning, store.RunResuming}, To: store.RunResuming})
	if err != nil {
		return nil, fmt.Errorf("runs: claiming run %s: %w", run.ID, err)
	}
	token := claimed.Lease.Token
	release := func(cause error) error {
		// Nothing ran: hand the run back as it was.
		_, uerr := h.store.UpdateRun(context.WithoutCancel(ctx), run.ID, store.RunUpdate{LeaseToken: token, Status: from, ReleaseLease: true})
		return errors.Join(cause, uerr)
	}
	st, err := runcore.LoadState(claimed)
	if err != nil {
		return nil, release(err)
	}
	// Build before any approval is used, so that a failure leaves them as they were.
	built, err := runcore.BuildPinned(runcore.WithBuildRun(runcore.WithBuildTenant(ctx, claimed.Tenant), claimed.ID, claimed.OwnerPrincipal()), h.build, cfg)
	if err != nil {
		return nil, release(err)
	}
	defer runcore.CloseBuilt(built)
	answers, err := h.answers(ctx, claimed, st)
	if err != nil {
		return nil, release(err)
	}
	if from != store.RunPending {
		h.log.Info("taking over a run whose host stopped", "run", run.ID, "from", string(from))
	}
	data, _ := json.Marshal(map[string]any{"from": string(from), "holder": h.holder})
	evs := append([]store.Event{{Tenant: claimed.Tenant, RunID: run.ID, Type: runcore.EventRunResumed, Data: data}}, runcore.LoginEvents(claimed.Tenant, run.ID, claimed.OwnerPrincipal(), built)...)
	if _, err := h.store.AppendEvents(ctx, evs...); err != nil {
		return nil, release(err)
	}
	d := h.newDriver(claimed, cfg, built, req.Drive)
	return d.drive(ctx, func(ctx context.Context, a *agent.Agent) iter2 {
		return a.ResumeStream(ctx, st, answers...)
	})
}

// Answer records a decision on one request of a halted run: approve (with
// edited arguments in d.Data, which the agent validates and authorizes again)
// or deny with a reason the model sees. d.By is the principal who decided
// and d.Actor, when not zero, who acted on d.By's behalf (an administrator);
// both are kept in the approval and reach the agent's decision record.
// Errors: the store's ([store.ErrNotFound], [store.ErrDecided],
// [store.ErrExpired], [store.ErrInvalid] for an invalid principal).
func (h *Host) Answer(ctx context.Context, runID, requestID string, d store.Answer) (store.Approval, error) {
	if d.By.IsZero() {
		return store.Approval{}, errors.New("runs: a decision needs the principal who made it")
	}
	return h.store.Decide(ctx, runID, requestID, d)
}

// Cancel cancels a run: a halted run is stored cancelled at once and never
// resumed, and its pending requests are denied in by's name with the reason
// "the run was cancelled", so that no person is left to answer what nothing will
// use (lists of pending approvals, the approvals page); a running one is
// asked to stop (its host sees the request at its next heartbeat and ends
// the run). by is the principal who cancelled, kept in the event's data as
// {"by": {"kind": "person", "name": "alice"}}.
// Errors: for a zero principal or one of an unknown kind, the store's
// ([store.ErrNotFound]), [ErrNotResumable] for a run that has ended.
func (h *Host) Cancel(ctx context.Context, runID string, by tool.Principal) error {
	data, err := runcore.CancelledByData(by)
	if err != nil {
		return err
	}
	run, err := h.store.GetRun(ctx, runID)
	if err != nil {
		return err
	}
	switch run.Status {
	case store.RunPending:
		if _, err := h.store.UpdateRun(ctx, runID, store.RunUpdate{From: store.RunPending, Status: store.RunCancelled,
			Events: []store.Event{{Tenant: run.Tenant, RunID: runID, Type: runcore.EventRunCancelled, Data: data}}}); err != nil {
			return err
		}
		return runcore.DenyPending(ctx, h.store, run, by)
	case store.RunRunning, store.RunResuming:
		_, err := h.store.AppendEvents(ctx, store.Event{Tenant: run.Tenant, RunID: runID, Type: runcore.EventCancelRequested, Data: data})
		return err
	}
	return fmt.Errorf("%w: run %s is %s", ErrNotResumable, runID, run.Status)
}
