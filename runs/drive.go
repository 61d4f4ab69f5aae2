package runs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/internal/jsonenc"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/store"
)

// driver drives one part of a run under a lease: from the agent's first
// turn until the run ends or halts, with a heartbeat that renews the lease
// and sees a cancel (heartbeat.go), and stores how it ended (end.go).
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

// iter2 is the stream of a part of a run: the agent's events.
type iter2 = func(func(agent.Event, error) bool)

func (h *Host) newDriver(run store.Run, cfg RunConfig, built *Built, d Drive) *driver {
	return &driver{h: h, run: run, token: run.Lease.Token, cfg: cfg, built: built, drv: d}
}

// drive makes the part's agent and runs the stream stream makes of it,
// within the configuration's timeout (from the first turn on: building
// the agent and storing the run do not count), and stores how it ended.
func (d *driver) drive(ctx context.Context, stream func(context.Context, *agent.Agent) iter2) (*agent.Result, error) {
	opts := d.agentOptions(ctx)
	a, err := agent.New(&opts)
	if err != nil {
		return nil, d.end(ctx, nil, err)
	}
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
	res, runErr := d.follow(stream(ctx, a))
	stopBeat()
	if cause := context.Cause(ctx); runErr != nil && cause != nil && !errors.Is(cause, context.Canceled) {
		runErr = fmt.Errorf("%w (%v)", runErr, cause)
	}
	return res, d.end(ctx, res, runErr)
}

// agentOptions are the built options with the host's middleware before
// the builder's, the drive's WaitFor when the builder set none, and a
// checkpoint that stores the run under the lease (hostCtx: the context of
// Start or Resume).
func (d *driver) agentOptions(hostCtx context.Context) agent.Options {
	opts := d.built.Options
	opts.Middleware = append(append([]agent.Middleware(nil), d.h.mw...), opts.Middleware...)
	if opts.WaitFor == nil {
		opts.WaitFor = d.drv.WaitFor
	}
	opts.Checkpoint = func(ctx context.Context, cp agent.Checkpoint) error { return d.checkpoint(ctx, hostCtx, cp) }
	return opts
}

// checkpoint stores the run's state at cp and the events not yet stored.
// A call cut short because the host is stopping did not finish: it is not
// checkpointed, so that the next host runs it again. The state after a
// turn's results is stored with the next write when no event waits: each
// of the turn's calls was stored as it finished, a run recovered from there
// puts their results in its transcript as this one did, and the next write
// (the next turn's, or the end) comes one model call later.
func (d *driver) checkpoint(ctx, hostCtx context.Context, cp agent.Checkpoint) error {
	if errors.Is(context.Cause(hostCtx), ErrHostStopping) {
		return ErrHostStopping
	}
	if cp.Kind == agent.CheckpointResults && !d.eventsWaiting() {
		return nil
	}
	st, err := jsonenc.Marshal(cp.State)
	if err != nil {
		return err
	}
	_, err = d.h.store.UpdateRun(ctx, d.run.ID, store.RunUpdate{LeaseToken: d.token, Status: d.runningStatus(), State: st, Events: d.takeEvents()})
	return err
}

// follow reads the part's events to its end: it keeps those the store
// keeps (stored at the next checkpoint or the end), shows each to the
// drive's OnEvent, and returns the part's result and error.
func (d *driver) follow(events iter2) (*agent.Result, error) {
	var res *agent.Result
	var runErr error
	for ev, err := range events {
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
	return res, runErr
}

// eventsWaiting reports whether events wait to be stored.
func (d *driver) eventsWaiting() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.events) > 0
}

// takeEvents returns the events not yet stored, and forgets them.
func (d *driver) takeEvents() []store.Event {
	d.mu.Lock()
	defer d.mu.Unlock()
	evs := d.events
	d.events = nil
	return evs
}

// runningStatus is the status the run is stored with while it runs.
func (d *driver) runningStatus() store.RunStatus {
	if d.run.Status == store.RunResuming {
		return store.RunResuming
	}
	return store.RunRunning
}
