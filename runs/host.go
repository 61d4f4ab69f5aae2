package runs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/internal/runcore"
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
