package runs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/store"
)

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
		st, err := model.MarshalJSON(cp.State)
		if err != nil {
			return err
		}
		_, err = h.store.UpdateRun(ctx, d.run.ID, store.RunUpdate{LeaseToken: d.token, Status: d.runningStatus(), State: st, Events: d.takeEvents()})
		return err
	}
	a, err := agent.New(opts)
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
		if se, ok := runcore.StoredEvent(d.run.Tenant, d.run.ID, d.h.now(), ev); ok {
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
					if e.Type == runcore.EventCancelRequested {
						cancel(runcore.ErrCancelRequested)
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
