// Package dbosengine runs tollgate's runs durably on DBOS Transact
// (github.com/dbos-inc/dbos-transact-golang), a library that checkpoints
// workflows and their steps in a system database: SQLite (sqlite:FILE, one
// machine) or PostgreSQL (many machines).
//
// A run is a DBOS workflow whose ID is the run ID, driven by
// [runs.Durable.Drive]: each model turn is a step, each tool call's first
// pass (hooks and authorization, and the tool when nothing asks) a
// "decide" step, the pass after an answer an "execute" step, and between
// them the workflow waits with DBOS's Recv on the request's topic
// ([runs.AnswerTopic]) until the request expires. [Engine.Answer] records
// an answer in the tollgate store (single use and digest binding stay the
// store's) and then sends the message that wakes the run.
//
// A run to start is stored in a table of the system database
// (tollgate_starts, on a queue: [DefaultQueue] unless named), and worker
// processes ([Options.Worker]) start it as a DBOS workflow, each at most
// [Options.Concurrency] at a time. Workers are woken by the database's
// NOTIFY on PostgreSQL, by [Engine.Start] in the same process, and
// otherwise look every [Options.QueuePoll]. DBOS's own queue cannot be
// woken: its runner (queueRunner.runQueue in dbos/queue.go of DBOS
// Transact 1.8) sleeps its polling interval with time.After, and starting
// a workflow that sits in the queue is that runner's alone; so the
// workflow is started directly (dbos.RunWorkflow with the run ID, which
// DBOS starts once: a second start is rejected). Runs that an older build
// enqueued on DBOS's queue are still taken from it, every second. A worker
// writes a heartbeat every [Options.Heartbeat]; a worker whose heartbeat is
// older than [Options.DeadAfter] is presumed dead, and the first worker to
// notice recovers its runs (DBOS re-enqueues them and a live worker replays
// each from its last recorded step).
//
// # Versions
//
// DBOS recovers a workflow only on executors of the application version
// that started it. The version is pinned to [ApplicationVersion], made of
// the agent's state version and [WorkflowVersion], not to a hash of the
// binary, so a rebuild or a deploy that does not change the workflow's
// steps keeps every pending run recoverable. A deploy that changes the
// order or names of the steps must raise WorkflowVersion: runs started
// before it stay on the old version, and are finished by workers of the
// old build (keep one running until `dbos` lists none of the old version
// pending), never replayed by code that would record other steps.
package dbosengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	_ "github.com/dbos-inc/dbos-transact-golang/dbos/driver/sqlite" // sqlite: system databases

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// WorkflowName is the name of the run workflow in DBOS.
const WorkflowName = "tollgate.run"

// DefaultQueue is the DBOS queue runs are enqueued on.
const DefaultQueue = "tollgate-runs"

// WorkflowVersion is the version of the run workflow's step layout (see
// the package documentation, Versions). 2: a run stored before it starts
// records no "store run" step, a turn's events ride in its step's record,
// and the end is stored without a "finish" step; a worker of version 1
// replaying such a run would meet steps it did not record.
const WorkflowVersion = 2

// ApplicationVersion is the DBOS application version of every executor of
// this build: "tollgate-s<state version>-w<workflow version>".
var ApplicationVersion = fmt.Sprintf("tollgate-s%d-w%d", agent.StateVersion, WorkflowVersion)

// Defaults of [Options].
const (
	DefaultConcurrency = 64
	DefaultHeartbeat   = 5 * time.Second
	DefaultDeadAfter   = 30 * time.Second
	DefaultQueuePoll   = 50 * time.Millisecond
	appName            = "tollgate"
)

// legacyQueuePoll is how often a worker looks in DBOS's queue, where an
// older build enqueued its runs.
const legacyQueuePoll = time.Second

// Options configures an [Engine].
type Options struct {
	// DatabaseURL is DBOS's system database: postgres://… (or a key=value
	// DSN) or sqlite:FILE. Required.
	DatabaseURL string
	// Store keeps the runs, approvals and events (as for runs.Host).
	// Required.
	Store store.Store
	// Builder builds a run's agent; required for a worker.
	Builder runs.Builder
	// Worker makes the engine take runs from the queue and drive them;
	// otherwise it only enqueues runs and sends answers (a server with no
	// worker of its own).
	Worker bool
	// Queue is the queue's name (default DefaultQueue).
	Queue string
	// Concurrency is how many runs this worker drives at once (default
	// DefaultConcurrency). A run waiting for an answer counts: it holds a
	// goroutine and a wait in the database, not a thread.
	Concurrency int
	// ExecutorID names this process to DBOS (default hostname, PID and a
	// random suffix). Two live processes must never share one.
	ExecutorID string
	// Heartbeat is how often a worker records that it is alive, and
	// DeadAfter how old a heartbeat must be for its worker's runs to be
	// recovered elsewhere (defaults DefaultHeartbeat, DefaultDeadAfter).
	// DeadAfter must exceed any pause of a live worker, and the clocks of
	// the database server decide (not the workers').
	Heartbeat, DeadAfter time.Duration
	// QueuePoll is how often an idle worker looks for runs to start when
	// nothing can wake it (default DefaultQueuePoll): with a SQLite system
	// database shared with other processes, and with PostgreSQL while its
	// listener reconnects: the start latency of a run then, and each
	// worker's load on the database when nothing happens. Otherwise a
	// start wakes the workers at once, and they look every few seconds
	// (or every QueuePoll, if longer) as a safety net.
	QueuePoll time.Duration
	// AnswerPoll: runcore.DurableOptions.AnswerPoll.
	AnswerPoll time.Duration
	// Middleware is added to every agent (runcore.DurableOptions.Middleware).
	Middleware []agent.Middleware
	// Logger receives the engine's and DBOS's logs (default discards).
	Logger *slog.Logger
}

// Engine drives durable runs on DBOS, or enqueues them for workers that do.
// It is a runcore.DurableQueue for a server.
type Engine struct {
	opts    Options
	client  dbos.Client
	ctx     dbos.Context // nil unless a worker
	durable *runcore.Durable
	tables  *tables
	disp    *dispatcher
	stop    context.CancelFunc
	wg      sync.WaitGroup
	log     *slog.Logger
}

var _ runcore.DurableQueue = (*Engine)(nil)

// New opens DBOS's system database (creating or migrating its tables, for
// an engine that only enqueues too), and for a worker
// registers the workflow and the queue, starts taking runs and recovers
// this executor's interrupted ones. Close it when done.
func New(ctx context.Context, opts Options) (*Engine, error) {
	if opts.DatabaseURL == "" {
		return nil, errors.New("dbosengine: Options.DatabaseURL is required (postgres://… or sqlite:FILE)")
	}
	if opts.Store == nil {
		return nil, errors.New("dbosengine: Options.Store is required")
	}
	if opts.Worker && opts.Builder == nil {
		return nil, errors.New("dbosengine: a worker needs Options.Builder")
	}
	if opts.Concurrency < 0 || opts.Heartbeat < 0 || opts.DeadAfter < 0 || opts.QueuePoll < 0 {
		return nil, fmt.Errorf("dbosengine: Concurrency (%d), Heartbeat (%s), DeadAfter (%s) and QueuePoll (%s) must not be negative",
			opts.Concurrency, opts.Heartbeat, opts.DeadAfter, opts.QueuePoll)
	}
	if opts.QueuePoll == 0 {
		opts.QueuePoll = DefaultQueuePoll
	}
	if opts.Queue == "" {
		opts.Queue = DefaultQueue
	}
	if opts.Concurrency == 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.Heartbeat == 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	if opts.DeadAfter == 0 {
		opts.DeadAfter = DefaultDeadAfter
	}
	if opts.DeadAfter <= opts.Heartbeat {
		return nil, fmt.Errorf("dbosengine: DeadAfter (%s) must be longer than Heartbeat (%s)", opts.DeadAfter, opts.Heartbeat)
	}
	if opts.ExecutorID == "" {
		host, _ := os.Hostname()
		opts.ExecutorID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), strings.TrimPrefix(runcore.NewRunID(), "run_")[:8])
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &Engine{opts: opts, log: log}
	if !opts.Worker {
		// A client does not create DBOS's tables: a server that only
		// enqueues may start before any worker has.
		if err := dbos.Migrate(ctx, opts.DatabaseURL, dbos.WithMigrateLogger(log)); err != nil {
			return nil, fmt.Errorf("dbosengine: creating DBOS's tables: %w", err)
		}
		c, err := dbos.NewClient(ctx, dbos.ClientConfig{DatabaseURL: opts.DatabaseURL, AppName: appName, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("dbosengine: %w", err)
		}
		e.client = c
		if e.tables, err = openTables(ctx, opts.DatabaseURL, ""); err != nil {
			dbos.Shutdown(c, time.Second)
			return nil, err
		}
		return e, nil
	}
	d, err := runcore.NewDurable(opts.Store, opts.Builder, &runcore.DurableOptions{Middleware: opts.Middleware, AnswerPoll: opts.AnswerPoll, Logger: log})
	if err != nil {
		return nil, err
	}
	e.durable = d
	dctx, err := dbos.NewContext(context.WithoutCancel(ctx), dbos.Config{
		AppName: appName, DatabaseURL: opts.DatabaseURL, Logger: log,
		ApplicationVersion: ApplicationVersion, ExecutorID: opts.ExecutorID,
	})
	if err != nil {
		return nil, fmt.Errorf("dbosengine: %w", err)
	}
	e.ctx, e.client = dctx, dctx
	dbos.RegisterWorkflow(dctx, e.workflow, dbos.WithWorkflowName(WorkflowName))
	if _, err := dbos.RegisterQueue(dctx, opts.Queue, dbos.WithWorkerConcurrency(opts.Concurrency), dbos.WithQueueBasePollingInterval(legacyQueuePoll)); err != nil {
		dbos.Shutdown(dctx, time.Second)
		return nil, fmt.Errorf("dbosengine: queue %s: %w", opts.Queue, err)
	}
	e.tables, err = openTables(ctx, opts.DatabaseURL, opts.ExecutorID)
	if err != nil {
		dbos.Shutdown(dctx, time.Second)
		return nil, err
	}
	// Alive before taking anything: a worker that dies at once is still
	// reaped. What this executor claimed before a restart is free again.
	if err := e.tables.beat(ctx); err != nil {
		e.tables.close()
		dbos.Shutdown(dctx, time.Second)
		return nil, err
	}
	if err := e.tables.releaseStarts(ctx, opts.ExecutorID); err != nil {
		e.tables.close()
		dbos.Shutdown(dctx, time.Second)
		return nil, fmt.Errorf("dbosengine: freeing this executor's claimed runs: %w", err)
	}
	e.disp = newDispatcher()
	if err := dctx.Launch(); err != nil {
		e.tables.close()
		dbos.Shutdown(dctx, time.Second)
		return nil, fmt.Errorf("dbosengine: %w", err)
	}
	bctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	e.stop = stop
	e.wg.Add(3)
	go func() { defer e.wg.Done(); e.reaper(bctx) }()
	go func() { defer e.wg.Done(); e.listen(bctx) }()
	go func() { defer e.wg.Done(); e.dispatch(bctx) }()
	return e, nil
}

// ExecutorID returns the name of this process in DBOS.
func (e *Engine) ExecutorID() string { return e.opts.ExecutorID }

// Close stops taking runs, waits up to timeout for the runs this worker
// drives to reach a step boundary, and closes the system database. Runs
// that did not finish stay pending in DBOS: a restart with the same
// ExecutorID, or the reaper of another worker, takes them up.
func (e *Engine) Close(timeout time.Duration) error {
	if e.stop != nil {
		e.stop()
		e.wg.Wait()
	}
	err := dbos.Shutdown(e.client, timeout)
	if e.tables != nil {
		e.tables.close()
	}
	return err
}

// Start stores a new run (status running) and starts its workflow on this
// worker when it has a free place; otherwise it stores the run's start for
// a worker and wakes the workers (NOTIFY on PostgreSQL; this process's, if
// a worker). It
// fills in in.RunID when empty and returns the run ID. Errors:
// runs.ErrEmptyPrompt, the configuration's, the store's (store.ErrExists
// for a taken ID) and DBOS's.
func (e *Engine) Start(ctx context.Context, in runcore.DurableRun) (string, error) {
	if err := runcore.PrepareDurable(ctx, e.opts.Store, &in); err != nil {
		return "", err
	}
	if e.startHere(in) {
		return in.RunID, nil
	}
	input, err := json.Marshal(in)
	if err == nil {
		err = e.tables.addStart(ctx, e.opts.Queue, in.RunID, input)
	}
	if err == nil && e.disp != nil && !e.disp.listening.Load() {
		e.disp.signal() // else the NOTIFY wakes this worker too
	}
	if err != nil {
		err = fmt.Errorf("dbosengine: enqueuing run %s: %w", in.RunID, err)
		// No worker will ever take it: store it as failed, not running.
		data, _ := json.Marshal(map[string]string{"status": string(store.RunError), "reason": err.Error()})
		_, uerr := e.opts.Store.UpdateRun(context.WithoutCancel(ctx), in.RunID, store.RunUpdate{Status: store.RunError, ReleaseLease: true,
			Events: []store.Event{{Tenant: in.Tenant, RunID: in.RunID, Type: runcore.EventRunFinished, Data: data}}})
		return in.RunID, errors.Join(err, uerr)
	}
	return in.RunID, nil
}

// startHere starts the workflow of in on this worker when it has a free
// place, without a start in tollgate_starts: the workflow, once DBOS has
// stored it, is the run's durable start (recovered on this executor's
// restart, or by the worker that reaps it). It reports whether it did; a
// failure leaves the run to the starts.
func (e *Engine) startHere(in runcore.DurableRun) bool {
	if e.disp == nil || !e.disp.take(in.RunID, e.opts.Concurrency) {
		return false
	}
	_, err := dbos.RunWorkflow(e.ctx, e.workflow, in, dbos.WithWorkflowID(in.RunID), dbos.WithWorkflowIDReusePolicy(dbos.WorkflowIDReusePolicyReject))
	if err != nil {
		e.disp.unclaim(in.RunID)
		e.log.Warn("starting a run on this worker failed; it is left to the workers", "run", in.RunID, "error", err)
		return false
	}
	return true
}

// Answer records a decision on a pending request of a durable run in the
// store, then wakes the run. The store refuses a second decision
// (store.ErrDecided), a late one (store.ErrExpired) and an unknown request
// (store.ErrNotFound); nothing is sent then. d.By must name who decided;
// d.Actor, when set, who acted on its behalf.
func (e *Engine) Answer(ctx context.Context, runID, requestID string, d store.Answer) (store.Approval, error) {
	if d.By.IsZero() {
		return store.Approval{}, errors.New("dbosengine: a decision needs the principal who made it")
	}
	a, err := e.opts.Store.Decide(ctx, runID, requestID, d)
	if err != nil {
		return a, err
	}
	return a, e.Wake(ctx, runID, requestID)
}

// Cancel stores the run cancelled, with a run.cancelled event naming by
// (runcore.CancelledByData), releases its record, denies its pending requests
// in by's name with the reason runcore.CancelledReason (runcore.DenyPending, as
// runs.Host.Cancel does: they leave every list of pending approvals, and a
// late answer is refused with store.ErrDecided), and cancels its workflow: a
// run waiting for an answer stops at once, a running one at its next step
// (the step it is in finishes; a tool is not interrupted). Errors: a zero or
// unknown principal (runcore.CancelledByData), runs.ErrNotResumable for a run
// that has ended, the store's (store.ErrNotFound) and DBOS's.
func (e *Engine) Cancel(ctx context.Context, runID string, by tool.Principal) error {
	st := e.opts.Store
	data, err := runcore.CancelledByData(by)
	if err != nil {
		return err
	}
	for range 3 {
		r, err := st.GetRun(ctx, runID)
		if err != nil {
			return err
		}
		if r.Status.Finished() {
			return fmt.Errorf("%w: run %s is %s", runs.ErrNotResumable, runID, r.Status)
		}
		_, err = st.UpdateRun(ctx, runID, store.RunUpdate{From: r.Status, Status: store.RunCancelled, ReleaseLease: true,
			Events: []store.Event{{Tenant: r.Tenant, RunID: runID, Type: runcore.EventRunCancelled, Data: data}}})
		if errors.Is(err, store.ErrConflict) {
			continue // its status changed meanwhile: look again
		}
		if err != nil {
			return err
		}
		// Its pending requests are denied as runs.Host.Cancel denies them;
		// whatever that gives, the workflow is cancelled.
		var errs []error
		if err := runcore.DenyPending(ctx, st, r, by); err != nil {
			errs = append(errs, fmt.Errorf("dbosengine: denying the pending requests of cancelled run %s: %w", runID, err))
		}
		// A run not started yet is removed from the starts; one being
		// started has no workflow to cancel yet, and is cancelled by the
		// worker starting it (which finds its start removed).
		dropped, err := e.tables.dropStart(ctx, runID)
		if err != nil {
			errs = append(errs, fmt.Errorf("dbosengine: removing the start of cancelled run %s: %w", runID, err))
		}
		if err := dbos.CancelWorkflow(e.client, runID); err != nil && !(dropped && errors.Is(err, dbos.ErrNonExistentWorkflow)) {
			errs = append(errs, fmt.Errorf("dbosengine: cancelling run %s: %w", runID, err))
		}
		return errors.Join(errs...)
	}
	return fmt.Errorf("dbosengine: cancelling run %s: its status keeps changing", runID)
}

// Wake sends the message that makes a durable run look at the answer to
// its request requestID now rather than at its next poll (for answers
// recorded in the store by other means). Sending twice is harmless: the
// message is sent once per request.
func (e *Engine) Wake(ctx context.Context, runID, requestID string) error {
	err := dbos.Send(e.client, runID, requestID, runcore.AnswerTopic(requestID), dbos.WithIdempotencyKey("answer:"+runID+":"+requestID))
	if err != nil {
		return fmt.Errorf("dbosengine: waking run %s for %s: %w", runID, requestID, err)
	}
	return nil
}

// Output is what the run workflow returns to DBOS (the full result is in
// the store).
type Output struct {
	Status agent.Status `json:"status"`
	Text   string       `json:"text,omitempty"`
	Error  string       `json:"error,omitempty"`
}

// Wait waits until the run has ended (done, incomplete, error or
// cancelled) and returns its stored record. It follows the run's events in
// the store ([store.Store.WaitEvents]), so it wakes as the store does.
// Errors: the store's (store.ErrNotFound), ctx.Err().
func (e *Engine) Wait(ctx context.Context, runID string) (store.Run, error) {
	st := e.opts.Store
	var after int64
	for {
		r, err := st.GetRun(ctx, runID)
		if err != nil || r.Status.Finished() {
			return r, err
		}
		evs, err := st.ListEvents(ctx, store.EventFilter{AllTenants: true, RunID: runID, AfterSeq: after, Limit: store.MaxLimit})
		if err != nil {
			return r, err
		}
		if len(evs) > 0 {
			after = evs[len(evs)-1].Seq
			continue
		}
		if err := st.WaitEvents(ctx, store.EventFilter{AllTenants: true, RunID: runID, AfterSeq: after}); err != nil {
			return r, err
		}
	}
}

func (e *Engine) workflow(ctx dbos.Context, in runcore.DurableRun) (Output, error) {
	e.disp.enter(in.RunID)
	defer e.disp.leave()
	res, err := e.durable.Drive(ctx, steps{ctx}, in)
	if ctx.Err() != nil {
		return Output{}, ctx.Err() // shutting down: the run is recovered later
	}
	out := Output{Status: agent.StatusError}
	if res != nil {
		out.Status, out.Text = res.Status, res.Text
	}
	if err != nil {
		out.Status, out.Error = agent.StatusError, err.Error()
	}
	return out, nil
}

// steps is runcore.Engine on one DBOS workflow.
type steps struct{ wf dbos.Context }

func (s steps) Step(ctx context.Context, name string, fn func(context.Context) ([]byte, error)) ([]byte, error) {
	out, err := dbos.RunAsStep(dbos.From(s.wf, ctx), func(ctx context.Context) (string, error) {
		b, err := fn(ctx)
		return string(b), err
	}, stepOptions(name)...)
	return []byte(out), err
}

// stepOptions names a step and retries it when it fails: what a run's step
// returns as an error is the store's or the database's (a busy SQLite file,
// a dropped connection), since the model's and the tools' failures are part
// of its recorded result. A cancelled step is not retried.
func stepOptions(name string) []dbos.StepOption {
	return []dbos.StepOption{
		dbos.WithStepName(name),
		dbos.WithStepMaxRetries(stepRetries),
		dbos.WithStepBaseInterval(100 * time.Millisecond), dbos.WithStepBackoffFactor(2), dbos.WithStepMaxInterval(5 * time.Second),
		dbos.WithStepRetryPredicate(func(err error) bool {
			return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
		}),
	}
}

// stepRetries is how often a failing step is tried again (over about 20 s)
// before its error is recorded and ends the run.
const stepRetries = 8

func (s steps) Go(ctx context.Context, name string, fn func(context.Context) ([]byte, error)) (func() ([]byte, error), error) {
	ch, err := dbos.Go(dbos.From(s.wf, ctx), func(ctx context.Context) (string, error) {
		b, err := fn(ctx)
		return string(b), err
	}, stepOptions(name)...)
	if err != nil {
		return nil, err
	}
	return func() ([]byte, error) {
		o := <-ch
		return []byte(o.Result), o.Err
	}, nil
}

func (s steps) Recv(ctx context.Context, topic string, timeout time.Duration) ([]byte, bool, error) {
	msg, err := dbos.Recv[string](dbos.From(s.wf, ctx), topic, timeout)
	var de *dbos.Error
	if errors.As(err, &de) && de.Code == dbos.ErrorCodeTimeout {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return []byte(msg), true, nil
}

// recoverer is DBOS's recovery of other executors' workflows (the method
// its Conductor uses), which its Context offers.
type recoverer interface {
	RecoverPendingWorkflows(executorIDs []string) ([]dbos.WorkflowHandle[any], error)
}

// reaper beats and, on each beat, recovers the runs of dead workers.
func (e *Engine) reaper(ctx context.Context) {
	t := time.NewTicker(e.opts.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := e.tables.beat(ctx); err != nil {
			e.log.Warn("heartbeat failed", "executor", e.opts.ExecutorID, "error", err)
			continue
		}
		dead, err := e.tables.reap(ctx, e.opts.DeadAfter)
		if err != nil {
			e.log.Warn("looking for dead workers failed", "error", err)
			continue
		}
		if len(dead) == 0 {
			continue
		}
		r, ok := e.ctx.(recoverer)
		if !ok {
			e.log.Error("this DBOS version cannot recover other executors' workflows", "dead", dead)
			continue
		}
		hs, err := r.RecoverPendingWorkflows(dead)
		if err != nil {
			e.log.Error("recovering the runs of dead workers failed", "dead", dead, "error", err)
			continue
		}
		e.log.Info("recovered the runs of dead workers", "dead", dead, "runs", len(hs))
		// Runs they had claimed but not started are free for any worker.
		if err := e.tables.releaseStarts(ctx, dead...); err != nil {
			e.log.Error("freeing the runs claimed by dead workers failed", "dead", dead, "error", err)
		}
	}
}
