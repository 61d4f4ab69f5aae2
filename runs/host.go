package runs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/internal/bounded"
	"github.com/tollgate-dev/tollgate/internal/jsonenc"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// Store event types written by a [Host], in the order a run passes them. Data
// of tool and approval events is the agent's [agent.Event] as JSON (no
// argument values beyond what the agent's events carry).
const (
	EventRunStarted      = "run.started"
	EventRunResumed      = "run.resumed"
	EventToolCall        = "tool.call"
	EventToolDecided     = "tool.decided"
	EventApprovalRequest = "approval.requested"
	EventToolFinished    = "tool.finished"
	EventTurnUsage       = "turn.usage"
	EventToolNotice      = "tool.notice"
	// EventMCPLogin: an OAuth login to an MCP server made while the run's
	// servers started (a login offered at a 401); its data is [MCPLogin]
	// with "by", the run's owner, who was asked. Never a token.
	EventMCPLogin        = "mcp.login"
	EventRunHalted       = "run.halted"
	EventRunFinished     = "run.finished"
	EventCancelRequested = "run.cancel_requested"
	EventRunCancelled    = "run.cancelled"
	// EventRunReleased: the host stopped driving the run without ending it
	// ([ErrHostStopping]); the next [Host.Resume] takes it over.
	EventRunReleased = "run.released"
)

// Errors of a [Host]; test with errors.Is.
var (
	// ErrNothingDecided: Resume of a halted run none of whose requests has an
	// answer yet (or expired). Wait with [Host.WaitAnswered] first.
	ErrNothingDecided = errors.New("runs: no request of the run is answered yet")
	// ErrNotResumable: the run is done, failed, incomplete or cancelled.
	ErrNotResumable = errors.New("runs: the run has ended")
	// ErrEmptyPrompt: Start with an empty prompt.
	ErrEmptyPrompt = errors.New("runs: the prompt is empty")
	// ErrHostStopping is the cause a host gives the context of [Host.Start]
	// or [Host.Resume] (context.WithCancelCause) to stop driving a run
	// without ending it, when it shuts down: the run keeps its status and
	// its latest checkpoint, its lease is released at once, and the next
	// [Host.Resume] (of this host or another) takes it over from that
	// checkpoint, as after a crash but without waiting for the lease.
	ErrHostStopping = errors.New("runs: the host is stopping")
)

// Built is an agent's options built from a [RunConfig] by a [Builder], with
// what must happen around it.
type Built struct {
	// Options are the agent's options. The host sets Checkpoint and appends its
	// middleware; everything else is the builder's.
	Options agent.Options
	// Attach, if set, runs once the agent exists (to apply a declarative
	// registry, which fires ON_START).
	Attach func(ctx context.Context, a *agent.Agent) error
	// OnStop, if set, runs when this part of the run ends (done, failed,
	// halted or cancelled), with the run's ID and status: ON_STOP of seed 000.
	OnStop func(ctx context.Context, runID string, status store.RunStatus)
	// Close, if set, releases what the builder opened (MCP servers, files).
	Close func() error
	// Applied lists the governance fields of the [RunConfig] the builder
	// turned into the agent's governance (their JSON names, the Field*
	// constants; [GovernanceFields] for all). A run whose configuration sets
	// a governance field missing here is refused ([CheckBuilt]), so that a
	// builder that knows only the model and the tools cannot silently run
	// without the deny globs, policy or hooks a configuration asks for.
	Applied []string
	// MCPLogins lists the OAuth logins to MCP servers the person made while
	// the builder started them: the host stores each as an
	// [EventMCPLogin] event of the run.
	MCPLogins []MCPLogin
}

// MCPLogin is an OAuth login to an MCP server made while a run's agent was
// built: the server's name and when the login was done. Never a token.
type MCPLogin struct {
	Server string    `json:"server"`
	Time   time.Time `json:"time"`
}

// loginEvents are the [EventMCPLogin] events of b's logins, made by owner.
func loginEvents(tenant, runID string, owner tool.Principal, b *Built) []store.Event {
	var out []store.Event
	for _, l := range b.MCPLogins {
		data, _ := json.Marshal(map[string]any{"server": l.Server, "time": l.Time, "by": owner.String()})
		out = append(out, store.Event{Tenant: tenant, RunID: runID, Type: EventMCPLogin, Data: data})
	}
	return out
}

// Builder builds a run's agent from its configuration; it must not depend on
// the current directory. Package runs/build provides the one the command line
// and a server use, which applies every field of the configuration; a builder
// of one's own must list in [Built.Applied] the governance fields it applied,
// or runs whose configuration sets others are refused ([CheckBuilt]).
type Builder interface {
	Build(ctx context.Context, cfg RunConfig) (*Built, error)
}

// BuilderFunc adapts a function to [Builder].
type BuilderFunc func(ctx context.Context, cfg RunConfig) (*Built, error)

// Build implements [Builder].
func (f BuilderFunc) Build(ctx context.Context, cfg RunConfig) (*Built, error) { return f(ctx, cfg) }

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

// DefaultLeaseTTL is Options.LeaseTTL's default.
const DefaultLeaseTTL = 30 * time.Second

// New returns a host over s that builds agents with b.
func New(s store.Store, b Builder, opts *Options) (*Host, error) {
	if s == nil || b == nil {
		return nil, errors.New("runs: New needs a store and a builder")
	}
	h := &Host{store: s, build: checkedBuilder{b}, ttl: DefaultLeaseTTL, log: slog.New(slog.DiscardHandler), now: time.Now}
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
		h.holder = fmt.Sprintf("%s:%d:%s", host, os.Getpid(), randomHex(4))
	}
	return h, nil
}

// Holder returns the name this host uses in leases.
func (h *Host) Holder() string { return h.holder }

// Store returns the host's store.
func (h *Host) Store() store.Store { return h.store }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// NewRunID returns a new random run ID ("run_" and 16 hex digits).
func NewRunID() string { return "run_" + randomHex(8) }

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
	// RunID is the new run's ID; empty for [NewRunID].
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
	if err := req.Config.Check(); err != nil {
		return nil, err
	}
	if err := checkOwner(req.Owner); err != nil {
		return nil, err
	}
	id := req.RunID
	if id == "" {
		id = NewRunID()
	}
	// The files that govern the run are pinned as they are now: every later
	// build of its agent (resume, takeover) refuses one that changed.
	cfg, err := req.Config.Pin()
	if err != nil {
		return nil, err
	}
	req.Config = cfg
	cfgJSON, err := json.Marshal(req.Config)
	if err != nil {
		return nil, err
	}
	built, err := buildPinned(withBuildRun(withBuildTenant(ctx, req.Tenant), id, req.Owner), h.build, req.Config)
	if err != nil {
		return nil, err
	}
	defer closeBuilt(built)
	started := startedData(req.Config, req.Owner, false)
	run := store.Run{ID: id, Tenant: req.Tenant, Owner: req.Owner.String(), Status: store.RunRunning, Config: cfgJSON}
	claimed, err := h.store.CreateRun(ctx, store.CreateRunRequest{Run: run, Holder: h.holder, LeaseTTL: h.ttl,
		Events: append([]store.Event{{Tenant: req.Tenant, RunID: id, Type: EventRunStarted, Data: started}}, loginEvents(req.Tenant, id, req.Owner, built)...)})
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

// buildPinned builds cfg's agent when its governing files are as pinned
// ([RunConfig.CheckPins]), checked before the build and again after it, so
// that a file swapped while the builder read it is refused too.
func buildPinned(ctx context.Context, b Builder, cfg RunConfig) (*Built, error) {
	if err := cfg.CheckPins(); err != nil {
		return nil, err
	}
	built, err := b.Build(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := cfg.CheckPins(); err != nil {
		closeBuilt(built)
		return nil, err
	}
	return built, nil
}

func closeBuilt(b *Built) {
	if b != nil && b.Close != nil {
		_ = b.Close()
	}
}

// LoadConfig decodes and checks a stored run's configuration.
func LoadConfig(run store.Run) (RunConfig, error) {
	var cfg RunConfig
	if err := json.Unmarshal(run.Config, &cfg); err != nil {
		return cfg, fmt.Errorf("runs: run %s: stored configuration: %w", run.ID, err)
	}
	if err := cfg.Check(); err != nil {
		return cfg, fmt.Errorf("run %s: %w", run.ID, err)
	}
	return cfg, nil
}

// Limits of a stored run's state read back by [LoadState]: 256 MiB, and JSON
// nested at most 1000 deep (the model's own arguments may nest deeply).
const (
	MaxStoredState = 256 << 20
	MaxStoredDepth = 1000
)

// LoadState decodes a stored run's state (the halted run or its latest checkpoint).
func LoadState(run store.Run) (*agent.State, error) {
	if len(run.State) == 0 {
		return nil, fmt.Errorf("runs: run %s has no stored state", run.ID)
	}
	// The stored state is bounded before it is decoded, as every document is.
	if err := bounded.CheckJSON("runs: run "+run.ID+": stored state", run.State, bounded.Limits{MaxBytes: MaxStoredState, MaxDepth: MaxStoredDepth}); err != nil {
		return nil, err
	}
	var st agent.State
	if err := json.Unmarshal(run.State, &st); err != nil {
		return nil, fmt.Errorf("runs: run %s: stored state: %w", run.ID, err)
	}
	return &st, nil
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
	cfg, err := LoadConfig(run)
	if err != nil {
		return nil, err
	}
	// A governing file that changed while the run waited (a tool of the run
	// may have rewritten it) is refused before the run is claimed.
	if err := cfg.CheckPins(); err != nil {
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
	st, err := LoadState(claimed)
	if err != nil {
		return nil, release(err)
	}
	// Build before any approval is used, so that a failure leaves them as they were.
	built, err := buildPinned(withBuildRun(withBuildTenant(ctx, claimed.Tenant), claimed.ID, claimed.OwnerPrincipal()), h.build, cfg)
	if err != nil {
		return nil, release(err)
	}
	defer closeBuilt(built)
	answers, err := h.answers(ctx, claimed, st)
	if err != nil {
		return nil, release(err)
	}
	if from != store.RunPending {
		h.log.Info("taking over a run whose host stopped", "run", run.ID, "from", string(from))
	}
	data, _ := json.Marshal(map[string]any{"from": string(from), "holder": h.holder})
	evs := append([]store.Event{{Tenant: claimed.Tenant, RunID: run.ID, Type: EventRunResumed, Data: data}}, loginEvents(claimed.Tenant, run.ID, claimed.OwnerPrincipal(), built)...)
	if _, err := h.store.AppendEvents(ctx, evs...); err != nil {
		return nil, release(err)
	}
	d := h.newDriver(claimed, cfg, built, req.Drive)
	return d.drive(ctx, func(ctx context.Context, a *agent.Agent) iter2 {
		return a.ResumeStream(ctx, st, answers...)
	})
}

// answered counts the pending requests of a halted run that have an answer
// (decided or expired), and all of them.
func (h *Host) answered(ctx context.Context, run store.Run) (n, total int, err error) {
	st, err := LoadState(run)
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
		if why, err := checkCarried(ctx, h.store, run.ID, w); err != nil {
			return nil, err
		} else if why != "" {
			h.log.Warn("a halted call carries an approval the store does not hold; the call is declined", "run", run.ID, "request", p.Request.ID, "why", why)
			out = append(out, carriedDeclined(p.Request.ID, why))
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
// [CancelledReason], so that no person is left to answer what nothing will
// use (lists of pending approvals, the approvals page); a running one is
// asked to stop (its host sees the request at its next heartbeat and ends
// the run). by is the principal who cancelled, kept in the event's data as
// {"by": {"kind": "person", "name": "alice"}}.
// Errors: [CancelledByData]'s for a zero or unknown principal, the store's
// ([store.ErrNotFound]), [ErrNotResumable] for a run that has ended.
func (h *Host) Cancel(ctx context.Context, runID string, by tool.Principal) error {
	data, err := CancelledByData(by)
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
			Events: []store.Event{{Tenant: run.Tenant, RunID: runID, Type: EventRunCancelled, Data: data}}}); err != nil {
			return err
		}
		return DenyPending(ctx, h.store, run, by)
	case store.RunRunning, store.RunResuming:
		_, err := h.store.AppendEvents(ctx, store.Event{Tenant: run.Tenant, RunID: runID, Type: EventCancelRequested, Data: data})
		return err
	}
	return fmt.Errorf("%w: run %s is %s", ErrNotResumable, runID, run.Status)
}

// CancelledByData returns the data of a [EventRunCancelled] or
// [EventCancelRequested] event: {"by": PRINCIPAL}, the principal as an
// object, as a decision's "by" is. Events stored before principals were
// typed hold its text form ("person:alice"), which [tool.Principal]'s
// UnmarshalJSON still reads. A zero principal, or one whose kind is not
// one of tool's, is an error: a cancellation always says who.
func CancelledByData(by tool.Principal) (json.RawMessage, error) {
	if by.IsZero() {
		return nil, errors.New("runs: a cancellation needs the principal who cancelled")
	}
	if !by.Kind.Valid() {
		return nil, fmt.Errorf("runs: cancelled by %q: the kind is not hook, rule, autonomy, person, runtime or flag", by.String())
	}
	return json.Marshal(struct {
		By tool.Principal `json:"by"`
	}{by})
}

// checkOwner refuses an owner whose kind is not one of tool's principal
// kinds; the zero principal (no owner) is allowed.
func checkOwner(owner tool.Principal) error {
	if !owner.IsZero() && !owner.Kind.Valid() {
		return fmt.Errorf("runs: owner %q: the kind is not hook, rule, autonomy, person, runtime or flag", owner.String())
	}
	return nil
}

// startedData returns the data of a run's [EventRunStarted] event: its
// agent, model, owner (a principal object, left out when zero) and, for a
// durable run, "durable": true.
func startedData(cfg RunConfig, owner tool.Principal, durable bool) json.RawMessage {
	b, _ := json.Marshal(struct {
		Agent   string         `json:"agent"`
		Model   string         `json:"model"`
		Owner   tool.Principal `json:"owner,omitzero"`
		Durable bool           `json:"durable,omitempty"`
	}{cfg.Agent, cfg.Model.String(), owner, durable})
	return b
}

// CancelledReason is the reason of the denial recorded for each pending
// request of a cancelled run ([DenyPending]).
const CancelledReason = "the run was cancelled"

// DenyPending denies every pending request of run, which has just been
// stored cancelled, in by's name with the reason [CancelledReason]: no
// person is left to answer what nothing will use (lists of pending
// approvals, the approvals page), a process waiting for the answers ends,
// and a late answer is refused ([store.ErrDecided], saying who decided).
// Every host's cancel calls it after storing the cancel: [Host.Cancel] and
// the [DurableQueue] of runs/dbosengine. A request decided or expired
// meanwhile is left as it is. Only run's Tenant and ID are read. Errors:
// the store's.
func DenyPending(ctx context.Context, s store.Store, run store.Run, by tool.Principal) error {
	f := store.ApprovalFilter{Tenant: run.Tenant, RunID: run.ID, Status: store.StatusPending}
	for {
		page, err := s.ListApprovals(ctx, f)
		if err != nil {
			return err
		}
		for _, a := range page.Approvals {
			_, err := s.Decide(ctx, run.ID, a.ID, store.Answer{By: by, Reason: CancelledReason})
			if err != nil && !errors.Is(err, store.ErrDecided) && !errors.Is(err, store.ErrExpired) {
				return err
			}
		}
		if page.Next == "" {
			return nil
		}
		f.Cursor = page.Next
	}
}

// driver drives one part of a run under a lease.
type driver struct {
	h      *Host
	run    store.Run // as claimed
	token  int64
	cfg    RunConfig
	built  *Built
	drv    Drive
	mu     sync.Mutex
	events []store.Event // not yet stored
}

type iter2 = func(func(agent.Event, error) bool)

func (h *Host) newDriver(run store.Run, cfg RunConfig, built *Built, d Drive) *driver {
	return &driver{h: h, run: run, token: run.Lease.Token, cfg: cfg, built: built, drv: d}
}

// storedEvent turns an agent event into a store event, or false for events
// that are not kept (text deltas, the final result, which the run record holds).
func (d *driver) storedEvent(ev agent.Event) (store.Event, bool) {
	var typ string
	switch ev.Kind {
	case agent.EventToolCall:
		typ = EventToolCall
	case agent.EventDecision:
		typ = EventToolDecided
	case agent.EventPending:
		typ = EventApprovalRequest
	case agent.EventToolResult:
		typ = EventToolFinished
	case agent.EventUsage:
		typ = EventTurnUsage
	case agent.EventNotice:
		typ = EventToolNotice
	default:
		return store.Event{}, false
	}
	b, err := jsonenc.Marshal(ev)
	if err != nil {
		return store.Event{}, false
	}
	return store.Event{Tenant: d.run.Tenant, RunID: d.run.ID, Type: typ, Time: d.h.now(), Data: b}, true
}

func (d *driver) takeEvents() []store.Event {
	d.mu.Lock()
	defer d.mu.Unlock()
	evs := d.events
	d.events = nil
	return evs
}

func (d *driver) drive(ctx context.Context, stream func(context.Context, *agent.Agent) iter2) (*agent.Result, error) {
	h := d.h
	opts := d.built.Options
	opts.Middleware = append(append([]agent.Middleware(nil), h.mw...), opts.Middleware...)
	if opts.WaitFor == nil {
		opts.WaitFor = d.drv.WaitFor
	}
	hostCtx := ctx
	opts.Checkpoint = func(ctx context.Context, cp agent.Checkpoint) error {
		// A call cut short because the host is stopping did not finish: it
		// is not checkpointed, so that the next host runs it again.
		if errors.Is(context.Cause(hostCtx), ErrHostStopping) {
			return ErrHostStopping
		}
		st, err := jsonenc.Marshal(cp.State)
		if err != nil {
			return err
		}
		_, err = h.store.UpdateRun(ctx, d.run.ID, store.RunUpdate{LeaseToken: d.token, Status: d.runningStatus(), State: st, Events: d.takeEvents()})
		return err
	}
	a, err := agent.New(&opts)
	if err != nil {
		return nil, d.end(ctx, nil, err)
	}
	// The configuration's timeout limits this part of the run, from its first
	// turn on (building the agent and storing the run do not count).
	if t := time.Duration(d.cfg.Timeout); t > 0 {
		var cancelT context.CancelFunc
		ctx, cancelT = context.WithTimeoutCause(ctx, t, fmt.Errorf("the run took longer than its timeout %s", t))
		defer cancelT()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if d.built.Attach != nil {
		if err := d.built.Attach(ctx, a); err != nil {
			return nil, d.end(ctx, nil, err)
		}
	}
	stopBeat := d.heartbeat(ctx, cancel)
	var res *agent.Result
	var runErr error
	for ev, err := range stream(ctx, a) {
		if ev.Kind == agent.EventDone {
			res = ev.Result
		}
		if err != nil {
			runErr = err
		}
		if se, ok := d.storedEvent(ev); ok {
			d.mu.Lock()
			d.events = append(d.events, se)
			d.mu.Unlock()
		}
		if d.drv.OnEvent != nil && (err == nil || ev.Kind == agent.EventDone) {
			d.drv.OnEvent(ev)
		}
	}
	stopBeat()
	if cause := context.Cause(ctx); runErr != nil && cause != nil && !errors.Is(cause, context.Canceled) {
		runErr = fmt.Errorf("%w (%v)", runErr, cause)
	}
	return res, d.end(ctx, res, runErr)
}

func (d *driver) runningStatus() store.RunStatus {
	if d.run.Status == store.RunResuming {
		return store.RunResuming
	}
	return store.RunRunning
}

// errCancelRequested is the cause of a run's context when Cancel asked it to stop.
var errCancelRequested = errors.New("runs: the run was cancelled")

// heartbeat renews the lease every third of its TTL until stopped; when the
// lease is lost or a cancel is requested, it cancels the run with that cause.
func (d *driver) heartbeat(ctx context.Context, cancel context.CancelCauseFunc) (stop func()) {
	h := d.h
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(h.ttl / 3)
		defer t.Stop()
		var after int64
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if _, err := h.store.RenewLease(ctx, d.run.ID, h.holder, d.token, h.ttl); err != nil {
				if ctx.Err() == nil {
					h.log.Error("lost the run's lease; stopping it", "run", d.run.ID, "error", err)
					cancel(fmt.Errorf("runs: lost the lease on run %s: %w", d.run.ID, err))
				}
				return
			}
			// Read every event since the last beat (a page at a time), so
			// that a cancel request is seen at the next beat however many
			// events the run wrote.
			for {
				evs, err := h.store.ListEvents(ctx, store.EventFilter{AllTenants: true, RunID: d.run.ID, AfterSeq: after, Limit: store.MaxLimit})
				if err != nil || len(evs) == 0 {
					break
				}
				for _, e := range evs {
					after = e.Seq
					if e.Type == EventCancelRequested {
						cancel(errCancelRequested)
						return
					}
				}
				if len(evs) < store.MaxLimit {
					break
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// end stores how this part of the run ended and fires ON_STOP.
func (d *driver) end(ctx context.Context, res *agent.Result, runErr error) error {
	h := d.h
	stopping := errors.Is(context.Cause(ctx), ErrHostStopping)
	ctx = context.WithoutCancel(ctx)
	u := store.RunUpdate{LeaseToken: d.token, ReleaseLease: true, Events: d.takeEvents()}
	status := store.RunError
	if res != nil && runErr == nil {
		status = store.RunStatus(res.Status)
	}
	if errors.Is(runErr, errCancelRequested) {
		status = store.RunCancelled
	}
	if runErr != nil && stopping && !errors.Is(runErr, errCancelRequested) {
		return d.release(ctx, runErr)
	}
	u.Status = status
	u.Result = resultJSON(res)
	evType := EventRunFinished
	switch {
	case status == store.RunPending && res != nil && res.State != nil:
		st, err := jsonenc.Marshal(res.State)
		if err != nil {
			return errors.Join(runErr, err)
		}
		u.State = st
		known, err := knownApprovals(ctx, h.store, d.run.ID)
		if err != nil {
			return errors.Join(runErr, fmt.Errorf("runs: storing halted run %s: %w", d.run.ID, err))
		}
		u.Approvals = approvalsOf(d.run.Tenant, res.State, known)
		evType = EventRunHalted
	case status == store.RunCancelled:
		evType = EventRunCancelled
	}
	reason := reasonOf(res, runErr)
	if evType == EventRunHalted && reason == "" {
		reason = haltReason(res.State)
	}
	data, _ := json.Marshal(map[string]any{"status": string(status), "reason": reason})
	u.Events = append(u.Events, store.Event{Tenant: d.run.Tenant, RunID: d.run.ID, Type: evType, Time: h.now(), Data: data})
	var serr error
	if _, err := h.store.UpdateRun(ctx, d.run.ID, u); err != nil {
		serr = fmt.Errorf("runs: storing the end of run %s: %w", d.run.ID, err)
	}
	if d.built.OnStop != nil {
		d.built.OnStop(ctx, d.run.ID, status)
	}
	if runErr != nil || serr != nil {
		return errors.Join(runErr, serr)
	}
	return nil
}

// release stores that this host stopped driving the run without ending it:
// status and latest checkpoint stay, the lease is released (see
// [ErrHostStopping]).
func (d *driver) release(ctx context.Context, runErr error) error {
	h := d.h
	data, _ := json.Marshal(map[string]any{"status": string(d.runningStatus()), "holder": h.holder})
	u := store.RunUpdate{LeaseToken: d.token, ReleaseLease: true, Events: append(d.takeEvents(),
		store.Event{Tenant: d.run.Tenant, RunID: d.run.ID, Type: EventRunReleased, Time: h.now(), Data: data})}
	if _, err := h.store.UpdateRun(ctx, d.run.ID, u); err != nil {
		return errors.Join(runErr, fmt.Errorf("runs: releasing run %s: %w", d.run.ID, err))
	}
	if d.built.OnStop != nil {
		d.built.OnStop(ctx, d.run.ID, d.runningStatus())
	}
	return errors.Join(ErrHostStopping, runErr)
}

// knownApprovals returns the IDs of every stored approval of the run, across
// pages: a halt stores only the requests that are new.
func knownApprovals(ctx context.Context, st store.Store, runID string) (map[string]bool, error) {
	known := map[string]bool{}
	for a, err := range store.AllApprovals(ctx, st, store.ApprovalFilter{AllTenants: true, RunID: runID}) {
		if err != nil {
			return nil, err
		}
		known[a.ID] = true
	}
	return known, nil
}

// maxHaltReasonCalls bounds the waiting calls a run.halted reason names.
const maxHaltReasonCalls = 5

// haltReason says what a halted run waits for, as the reason of its
// run.halted event: "waits for an answer: approval of transfer (req_…)",
// naming each waiting request's kind, tool and ID (at most
// maxHaltReasonCalls of them, then how many more).
func haltReason(st *agent.State) string {
	if st == nil {
		return ""
	}
	ws := st.Waiting()
	if len(ws) == 0 {
		return ""
	}
	parts := make([]string, 0, min(len(ws), maxHaltReasonCalls+1))
	for i, w := range ws {
		if i == maxHaltReasonCalls {
			parts = append(parts, fmt.Sprintf("and %d more", len(ws)-i))
			break
		}
		kind := w.Pending.Request.Kind
		if kind == "" {
			kind = tool.KindApproval
		}
		parts = append(parts, fmt.Sprintf("%s of %s (%s)", kind, w.Call.Name, w.Pending.Request.ID))
	}
	noun := "an answer"
	if len(ws) > 1 {
		noun = fmt.Sprintf("%d answers", len(ws))
	}
	return "waits for " + noun + ": " + strings.Join(parts, ", ")
}

func reasonOf(res *agent.Result, err error) string {
	if err != nil {
		return err.Error()
	}
	if res != nil {
		return res.Reason
	}
	return ""
}

// approvalsOf returns the store records of st's pending requests, skipping
// those already stored.
func approvalsOf(tenant string, st *agent.State, skip map[string]bool) []store.Approval {
	var out []store.Approval
	for _, w := range st.Waiting() {
		p := w.Pending
		if skip[p.Request.ID] {
			continue
		}
		out = append(out, store.Approval{
			ID: p.Request.ID, Tenant: tenant, CallID: w.Call.ID, Tool: w.Call.Name, Digest: p.Digest,
			Kind: p.Request.Kind, Prompt: p.Request.Prompt, Request: p.Request, ExpiresAt: p.Request.ExpiresAt,
		})
	}
	return out
}

// resultJSON encodes res without its State (stored separately).
func resultJSON(res *agent.Result) json.RawMessage {
	if res == nil {
		return nil
	}
	c := *res
	c.State = nil
	b, _ := jsonenc.Marshal(c)
	return b
}
