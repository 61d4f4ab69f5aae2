package runcore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// Engine is what a durable run needs from a durable-execution engine: a
// step that runs once and is recorded, and a durable wait for a message.
// Package internal/dbosengine implements it on DBOS Transact; [Durable.Drive]
// is the workflow body that uses it.
//
// An engine replays a workflow after a crash by running its body again from
// the start: every Step, Go and Recv whose result is recorded returns that
// result without running anything, and the first one that is not recorded
// runs for real. [Durable.Drive] calls them in an order that depends only on
// the results of earlier ones (the calls of a turn take their positions in
// the model's order, one after another, though they then run in parallel),
// so that a replay finds each record where it left it.
type Engine interface {
	// Step runs fn and records what it returns under the next position of
	// the run's history, or, when a result is already recorded there,
	// returns that and does not run fn. name labels the step (an engine may
	// refuse a replay that finds another name at the position: the workflow
	// code changed). fn returns an error only for a failure of the store or
	// the engine (the model's and the tools' failures are in its result), so
	// an engine may run it again before it records the error; a step
	// interrupted by a crash is not recorded, and runs again on recovery.
	Step(ctx context.Context, name string, fn func(context.Context) ([]byte, error)) ([]byte, error)
	// Go is Step run concurrently: it takes the next position at once,
	// starts fn (unless its result is recorded) and returns; wait returns
	// the result. Positions follow the order of the calls to Go, whichever
	// goroutine makes them, so the caller orders them.
	Go(ctx context.Context, name string, fn func(context.Context) ([]byte, error)) (wait func() ([]byte, error), err error)
	// Recv waits up to timeout for the next message sent to the run on
	// topic and returns it, or ok false when the timeout passed with none.
	// A message is delivered once; a replay returns what was received.
	Recv(ctx context.Context, topic string, timeout time.Duration) (msg []byte, ok bool, err error)
}

// DurableRun is the input of a durable run: everything an engine stores to
// start the run and to start it again in another process. It holds no
// secret (a [RunConfig] names environment variables, never their values).
type DurableRun struct {
	// RunID is the run's ID; [PrepareDurable] fills it in when empty.
	RunID string `json:"runId"`
	// Tenant is stored with the run.
	Tenant string `json:"tenant,omitempty"`
	// Owner is the principal who started the run, stored as its text form
	// ([store.Run.Owner]). In JSON it is an object {"kind": "person",
	// "name": "alice"}; an input enqueued before principals were typed
	// holds the text form ("person:alice"), which still reads.
	Owner tool.Principal `json:"owner,omitzero"`
	// Config is the run's configuration, resolved ([RunConfig.Resolve]).
	Config RunConfig `json:"config"`
	// Prompt is the user's message; it must not be empty.
	Prompt string `json:"prompt"`
	// History is an earlier conversation the run starts from.
	History []model.Message `json:"history,omitempty"`
	// Stored is set by [PrepareDurable] once the run is in the store with
	// the pins of Config: [Durable.Drive] then neither looks for it there
	// nor records a step for it. An input without it (an engine started
	// without PrepareDurable) is looked for and stored, as a step.
	Stored bool `json:"stored,omitempty"`
}

// DurableQueue is what a host that does not drive runs itself (a server
// with its workers elsewhere) needs from a durable engine: internal/dbosengine's
// Engine implements it, and the command wires it in.
type DurableQueue interface {
	// Start stores a new run (PrepareDurable) and enqueues it for a worker;
	// it returns the run ID (in.RunID, or a new one).
	Start(ctx context.Context, in DurableRun) (string, error)
	// Answer records a decision on a pending request in the store (single
	// use and digest binding stay the store's: store.ErrDecided,
	// store.ErrExpired, store.ErrNotFound) and then wakes the run.
	Answer(ctx context.Context, runID, requestID string, d store.Answer) (store.Approval, error)
	// Wait waits until the run has ended and returns its stored record.
	Wait(ctx context.Context, runID string) (store.Run, error)
	// Cancel stores the run cancelled (by is the principal who cancelled;
	// see CancelledByData), denies its pending requests in by's name
	// (DenyPending, as Host.Cancel does) and stops it: at once when it
	// waits for an answer, at its next step when it runs. ErrNotResumable
	// for a run that has ended.
	Cancel(ctx context.Context, runID string, by tool.Principal) error
}

// AnswerTopic is the topic on which an engine's run waits for the answer to
// its pending request id: the message only wakes it; the answer itself is
// read from the store.
func AnswerTopic(requestID string) string { return "answer:" + requestID }

// DurableOptions configures a [Durable]; nil means defaults.
type DurableOptions struct {
	// Middleware is added to every agent (tracing, metrics), inside the
	// durable steps: a replayed step does not pass it again.
	Middleware []agent.Middleware
	// AnswerPoll is how long a run waits for a wake-up message before it
	// looks at the store again (default [DefaultAnswerPoll]): an answer
	// recorded by a process that did not send the message (tollgate
	// approvals approve, a crash between the two) is seen within it.
	AnswerPoll time.Duration
	// Logger receives the driver's logs (default discards).
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// DefaultAnswerPoll is DurableOptions.AnswerPoll's default.
const DefaultAnswerPoll = 30 * time.Second

// DurableHolder is the lease holder of the store's record of a durable run.
// The engine, not a lease, decides who drives a durable run; the lease only
// keeps [Host.Resume] (tollgate resume) off it.
const DurableHolder = "durable-engine"

// durableLease is the lease of a durable run's store record: it outlives
// the run, and is released when the run ends.
const durableLease = 100 * 365 * 24 * time.Hour

// Durable drives runs as durable workflows on an [Engine]: the agent loop is
// the workflow (its ID is the run ID), each model turn a step, each tool
// call's first pass a "decide" step, and the pass that takes an answered
// call up again an "execute" step; between them the run waits with
// [Engine.Recv] for the answer, keyed by the request ID, until the
// request's expiry. The store keeps the run, its approvals and events as for
// a [Host], so the same commands list and answer it.
//
// What runs once: a model turn or a call step whose result was recorded is
// never run again, on any machine; a turn or a call that a crash
// interrupted runs again (at least once: a tool allowed without asking may
// have had its effect; the provider may bill the turn twice); an approved
// call runs at most once, because its approval is used ([store.Store.Consume])
// inside its execute step: a recovered execute step finds it used and tells
// the model the call may or may not have run.
//
// The calls of one turn run in parallel (up to the agent's MaxParallel) as
// steps started with [Engine.Go], which take their positions in the model's
// order, so that a replay finds each call's record whichever finished first.
type Durable struct {
	store store.Store
	build Builder
	mw    []agent.Middleware
	poll  time.Duration
	log   *slog.Logger
	now   func() time.Time
}

// NewDurable returns a driver of durable runs kept in s, whose agents b builds.
func NewDurable(s store.Store, b Builder, opts *DurableOptions) (*Durable, error) {
	if s == nil || b == nil {
		return nil, errors.New("runs: NewDurable needs a store and a builder")
	}
	d := &Durable{store: s, build: checkedBuilder{b}, poll: DefaultAnswerPoll, log: slog.New(slog.DiscardHandler), now: time.Now}
	if opts != nil {
		if opts.AnswerPoll < 0 {
			return nil, fmt.Errorf("runs: AnswerPoll must not be negative, got %s", opts.AnswerPoll)
		}
		if opts.AnswerPoll > 0 {
			d.poll = opts.AnswerPoll
		}
		d.mw = opts.Middleware
		if opts.Logger != nil {
			d.log = opts.Logger
		}
		if opts.Now != nil {
			d.now = opts.Now
		}
	}
	return d, nil
}

// PrepareDurable checks in and stores its run in s, running, before an
// engine is asked to drive it, so that the run can be listed (and its
// configuration read) at once. It fills in.RunID when empty. Errors:
// [ErrEmptyPrompt], the configuration's, an owner of an unknown kind, and
// the store's ([store.ErrExists] when the ID is taken).
func PrepareDurable(ctx context.Context, s store.Store, in *DurableRun) error {
	if in.Prompt == "" {
		return ErrEmptyPrompt
	}
	if err := CheckConfig(in.Config); err != nil {
		return err
	}
	if err := CheckOwner(in.Owner); err != nil {
		return err
	}
	if in.RunID == "" {
		in.RunID = NewRunID()
	}
	// The files that govern the run are pinned as they are now (see
	// [PinFiles]); in.Config carries the pins to the engine.
	pinned, err := PinFiles(in.Config)
	if err != nil {
		return err
	}
	in.Config = pinned
	cfgJSON, err := json.Marshal(in.Config)
	if err != nil {
		return err
	}
	started := StartedData(in.Config, in.Owner, true)
	_, err = s.CreateRun(ctx, store.CreateRunRequest{
		Run:    store.Run{ID: in.RunID, Tenant: in.Tenant, Owner: in.Owner.String(), Status: store.RunRunning, Config: cfgJSON},
		Holder: DurableHolder, LeaseTTL: durableLease,
		Events: []store.Event{{Tenant: in.Tenant, RunID: in.RunID, Type: EventRunStarted, Data: started}},
	})
	if err != nil {
		return fmt.Errorf("runs: storing run %s: %w", in.RunID, err)
	}
	in.Stored = true
	return nil
}

// Drive is the workflow body of a durable run: it drives the run in until
// it ends, waiting durably on every pending request, and stores how it
// ended. Call it from the engine's workflow, with the engine's Step and
// Recv for that workflow. It returns the agent's result and error (a failed
// run is a result too); errors of the store and the engine are returned as
// well.
func (d *Durable) Drive(ctx context.Context, eng Engine, in DurableRun) (*agent.Result, error) {
	if err := CheckConfig(in.Config); err != nil {
		return nil, err
	}
	in, err := d.stored(ctx, eng, in)
	if err != nil {
		return nil, err
	}
	built, err := BuildPinned(WithBuildTenant(ctx, in.Tenant), d.build, in.Config)
	if err != nil {
		return nil, d.finish(ctx, in, store.RunRunning, nil, err, nil)
	}
	defer CloseBuilt(built)
	seq := &sequencer{}
	c := &collector{d: d, in: in}
	a, err := d.newAgent(ctx, eng, in, built, seq, c)
	if err != nil {
		return nil, d.finish(ctx, in, store.RunRunning, nil, err, built)
	}
	res, runErr := d.part(ctx, in, c, func(ctx context.Context) iter2 {
		return a.Stream(ctx, in.Prompt, agent.WithRunID(in.RunID), agent.WithHistory(in.History...))
	})
	status := store.RunRunning // the stored status while the part runs
	for halt := 1; runErr == nil && res != nil && res.Status == agent.StatusPending && res.State != nil; halt++ {
		answers, err := d.answered(ctx, eng, in, res, halt, status, c)
		if err != nil {
			return res, d.finish(ctx, in, status, res, err, built, c.take()...)
		}
		status = store.RunResuming
		var ids []string
		for _, w := range res.State.Waiting() {
			ids = append(ids, w.Call.ID)
		}
		seq.reset(ids)
		st := res.State
		res, runErr = d.part(ctx, in, c, func(ctx context.Context) iter2 { return a.ResumeStream(ctx, st, answers...) })
	}
	return res, d.finish(ctx, in, status, res, runErr, built, c.take()...)
}

// stored makes sure the run is in the store. A run whose input says it is
// (in.Stored, set by PrepareDurable) and carries its pins, if it has
// governing files, is not looked for: that costs the run nothing.
// Otherwise, as a step, it may have been stored by whoever enqueued it, and
// is stored here if not (an engine started without PrepareDurable); such
// an engine has no pins in its input: the stored configuration's, taken
// when the run was stored, are returned in in. The step is there or not by
// the input alone, so a replay finds the same steps.
func (d *Durable) stored(ctx context.Context, eng Engine, in DurableRun) (DurableRun, error) {
	if in.Stored && (len(in.Config.Pins) > 0 || len(GoverningFiles(in.Config)) == 0) {
		return in, nil
	}
	if _, err := eng.Step(ctx, "store run", func(ctx context.Context) ([]byte, error) {
		if _, err := d.store.GetRun(ctx, in.RunID); err == nil {
			return nil, nil
		}
		c := in
		if err := PrepareDurable(ctx, d.store, &c); err != nil && !errors.Is(err, store.ErrExists) {
			return nil, err
		}
		return nil, nil
	}); err != nil {
		return in, err
	}
	if len(in.Config.Pins) == 0 {
		if run, err := d.store.GetRun(ctx, in.RunID); err == nil {
			if stored, err := LoadConfig(run); err == nil {
				in.Config.Pins = stored.Pins
			}
		}
	}
	return in, nil
}

// newAgent makes the run's agent from built, with the engine's steps as
// the outermost middleware (a replayed step skips everything inside it,
// tracing included), no WaitFor (a request halts the part that runs; the
// engine waits) and no checkpoint (the steps are the record), and attaches
// what the builder attaches.
func (d *Durable) newAgent(ctx context.Context, eng Engine, in DurableRun, built *Built, seq *sequencer, c *collector) (*agent.Agent, error) {
	opts := built.Options
	opts.Middleware = append(append([]agent.Middleware{d.steps(eng, in, seq, c)}, d.mw...), opts.Middleware...)
	opts.WaitFor = nil
	opts.Checkpoint = nil
	a, err := agent.New(&opts)
	if err != nil {
		return nil, err
	}
	if built.Attach != nil {
		if err := built.Attach(ctx, a); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// answered stores the halt numbered halt of the part that ended with res
// (the run was stored in status from), waits durably for the answer to
// each of its requests, and stores the run resuming, as steps; it returns
// the answers. A run cancelled meanwhile is [ErrCancelRequested].
func (d *Durable) answered(ctx context.Context, eng Engine, in DurableRun, res *agent.Result, halt int, from store.RunStatus, c *collector) ([]tool.Answer, error) {
	if err := d.halt(ctx, eng, in, res, c.take(), halt, from); err != nil {
		return nil, err
	}
	var answers []tool.Answer
	for _, w := range res.State.Waiting() {
		ans, err := d.await(ctx, eng, in, w)
		if err != nil {
			return nil, err
		}
		answers = append(answers, ans)
	}
	b, err := eng.Step(ctx, fmt.Sprintf("resume %d", halt), func(ctx context.Context) ([]byte, error) {
		data, _ := json.Marshal(map[string]any{"from": string(store.RunPending), "holder": DurableHolder})
		_, err := d.store.UpdateRun(ctx, in.RunID, store.RunUpdate{From: store.RunPending, Status: store.RunResuming,
			Events: []store.Event{{Tenant: in.Tenant, RunID: in.RunID, Type: EventRunResumed, Data: data}}})
		return d.cancelledOr(ctx, in.RunID, store.RunResuming, err)
	})
	if err == nil && string(b) == cancelledMark {
		err = ErrCancelRequested
	}
	return answers, err
}

// part drives one part of the run (up to its end or a halt), within the
// configuration's timeout: the time spent waiting for answers does not
// count, as for a [Host].
func (d *Durable) part(ctx context.Context, in DurableRun, c *collector, stream func(context.Context) iter2) (*agent.Result, error) {
	if t := time.Duration(in.Config.Timeout); t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, t, fmt.Errorf("the run took longer than its timeout %s", t))
		defer cancel()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := d.watchCancel(ctx, in.RunID, cancel)
	res, err := c.drain(stream(ctx))
	cause := context.Cause(ctx)
	cancel(nil) // ends the watch
	stop()
	switch {
	case errors.Is(cause, ErrCancelRequested):
		err = ErrCancelRequested
	case err != nil && cause != nil && !errors.Is(cause, context.Canceled):
		err = fmt.Errorf("%w (%v)", err, cause)
	}
	return res, err
}

// watchCancel follows the run's events in the store while a part runs and
// cancels it when a cancel is requested or stored (Engine adapters' Cancel,
// [Host.Cancel]), so that a model turn or a tool that is running stops
// rather than finishing first. It reads the events cancelWatchDelay after
// the part starts and after each wake-up, once however many events woke
// it: a part shorter than that reads nothing, and the part's own writes,
// which wake it too, cost one read for all of them.
func (d *Durable) watchCancel(ctx context.Context, runID string, cancel context.CancelCauseFunc) (stop func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		var after int64
		for more := false; ; {
			if !more && !sleepCtx(ctx, cancelWatchDelay) {
				return
			}
			// A read is not cut off when the part ends: a cancelled query
			// costs the store's pool its connection.
			rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), cancelWatchRead)
			evs, err := d.store.ListEvents(rctx, store.EventFilter{AllTenants: true, RunID: runID, AfterSeq: after, Limit: store.MaxLimit})
			rcancel()
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				d.log.Warn("watching a run for a cancel failed", "run", runID, "error", err)
			}
			for _, e := range evs {
				after = e.Seq
				if e.Type == EventRunCancelled || e.Type == EventCancelRequested {
					cancel(ErrCancelRequested)
					return
				}
			}
			if more = len(evs) == store.MaxLimit; more {
				continue
			}
			if err := d.store.WaitEvents(ctx, store.EventFilter{AllTenants: true, RunID: runID, AfterSeq: after}); err != nil && ctx.Err() != nil {
				return
			}
		}
	}()
	return func() { <-done }
}

// cancelWatchDelay is how long watchCancel waits before it reads a run's
// events: a running part is stopped within it of a cancel. cancelWatchRead
// bounds a read.
const (
	cancelWatchDelay = 100 * time.Millisecond
	cancelWatchRead  = 10 * time.Second
)

// sleepCtx waits for d, or until ctx ends (false).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// cancelledMark is what a step records when it found the run cancelled.
const cancelledMark = "cancelled"

// cancelledOr returns what a step that moved the run's status to target
// records when the store refused the move (err, store.ErrConflict):
// cancelledMark when the run was cancelled meanwhile, nothing when it has
// target already (the step ran before and was interrupted before it was
// recorded), else err.
func (d *Durable) cancelledOr(ctx context.Context, runID string, target store.RunStatus, err error) ([]byte, error) {
	if errors.Is(err, store.ErrConflict) {
		r, gerr := d.store.GetRun(ctx, runID)
		switch {
		case gerr != nil:
			return nil, errors.Join(err, gerr)
		case r.Status == store.RunCancelled:
			return []byte(cancelledMark), nil
		case r.Status == target:
			return nil, nil
		}
	}
	return nil, err
}

// finish stores how the run ended, releases its lease and fires ON_STOP;
// stored is the status the driver last stored (the store is read only when
// the run's has changed since).
// It is not a step of the engine: the workflow's end, which the engine
// records, follows it, and a replay that comes to it again (the process died
// in between) finds the run ended in the store and writes nothing. The
// store is asked again when it fails, as the engine asks a step again.
func (d *Durable) finish(ctx context.Context, in DurableRun, stored store.RunStatus, res *agent.Result, runErr error, built *Built, evs ...store.Event) error {
	status := EndStatus(res, runErr)
	err := retryStore(ctx, func() error {
		var err error
		status, err = d.storeEnd(ctx, in, stored, res, runErr, evs)
		return err
	})
	if built != nil && built.OnStop != nil {
		built.OnStop(context.WithoutCancel(ctx), in.RunID, status)
	}
	if err != nil {
		return errors.Join(runErr, fmt.Errorf("runs: storing the end of run %s: %w", in.RunID, err))
	}
	return runErr
}

// storeEnd stores the end of the run with its result and the events evs,
// if the run's status is still cur, and returns the status the run ended
// with: a run cancelled meanwhile keeps that status (and its event), and
// gets the result and the events; a run that has ended otherwise (a replay
// of an execution that stored its end) is left as it is. The status is
// read again when the run's is no longer cur.
func (d *Durable) storeEnd(ctx context.Context, in DurableRun, cur store.RunStatus, res *agent.Result, runErr error, evs []store.Event) (store.RunStatus, error) {
	status := EndStatus(res, runErr)
	for range 4 {
		u := store.RunUpdate{From: cur, Status: status, Result: ResultJSON(res), ReleaseLease: true, Events: evs}
		switch {
		case cur == store.RunCancelled:
			// Cancelled while it ran: its end keeps the status. A replay
			// of an execution that stored the end already (or a retry of
			// a write that committed) finds the lease let go and the
			// result stored, and writes nothing: its events were stored
			// with it. (A cancel alone keeps the lease.)
			if r, err := d.store.GetRun(ctx, in.RunID); err != nil || (r.Lease == nil && len(r.Result) > 0) {
				return store.RunCancelled, err
			}
			u.Status = ""
		case cur.Finished():
			return cur, nil
		default:
			typ := EventRunFinished
			if status == store.RunCancelled {
				typ = EventRunCancelled
			}
			data, _ := json.Marshal(map[string]any{"status": string(status), "reason": ReasonOf(res, runErr)})
			u.Events = append(slices.Clip(evs), store.Event{Tenant: in.Tenant, RunID: in.RunID, Type: typ, Time: d.now(), Data: data})
		}
		_, err := d.store.UpdateRun(ctx, in.RunID, u)
		if errors.Is(err, store.ErrConflict) {
			// Changed meanwhile (cancelled, or ended by an execution
			// this one replays): look again.
			r, err := d.store.GetRun(ctx, in.RunID)
			if err != nil {
				return status, err
			}
			cur = r.Status
			continue
		}
		if u.Status == "" {
			return store.RunCancelled, err
		}
		return status, err
	}
	return status, fmt.Errorf("runs: run %s: its status keeps changing", in.RunID)
}

// retryStore runs f until it succeeds, up to storeRetries more times over
// about 20 s, unless ctx ends: what the engine does for a failing step.
func retryStore(ctx context.Context, f func() error) error {
	delay := 100 * time.Millisecond
	for i := 0; ; i++ {
		err := f()
		if err == nil || i == storeRetries || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// storeRetries is how often retryStore tries again.
const storeRetries = 8
