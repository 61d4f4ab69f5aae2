package dbosengine

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"

	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/store"
)

// sweepEvery is how often, at most, a worker whose PostgreSQL listener is
// in place looks for starts anyway (QueuePoll if longer): a safety net,
// since every start and every freed claim is notified.
const sweepEvery = 5 * time.Second

// relisten is how long a worker waits before listening again after its
// listener's connection failed; it polls every QueuePoll meanwhile.
const relisten = time.Second

// dispatcher starts the runs of tollgate_starts as DBOS workflows on this
// worker, as many as its free places, when it is woken: by the store's
// NOTIFY on PostgreSQL, by [Engine.Start] in this process, by a run of its
// own ending while starts may be waiting, and otherwise every QueuePoll (a
// system database that cannot notify: SQLite shared with other processes).
//
// A start is claimed (claimed_by) before its workflow is started and
// removed once the workflow exists: a worker that dies in between leaves a
// claim, which the worker that reaps it frees; a start whose workflow
// exists already is rejected by DBOS (WorkflowIDReusePolicyReject) and only
// removed, so a run's workflow is started once.
type dispatcher struct {
	wake      chan struct{} // capacity 1: a pending wake-up
	listening atomic.Bool

	mu sync.Mutex
	// busy counts the runs this worker drives or has claimed, its
	// Concurrency bounding it; claims are the runs claimed and not yet
	// entered (whose places busy already counts).
	busy   int
	claims map[string]bool
	// more: the last claim filled every free place, so starts may be left.
	more bool
}

func newDispatcher() *dispatcher {
	return &dispatcher{wake: make(chan struct{}, 1), claims: map[string]bool{}}
}

// signal wakes the dispatcher, once however often it is called before it
// looks.
func (d *dispatcher) signal() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// enter counts a run whose workflow starts on this worker: one it claimed
// (counted when claimed) or one DBOS recovered here.
func (d *dispatcher) enter(runID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.claims[runID] {
		delete(d.claims, runID)
		return
	}
	d.busy++
}

// leave frees the place of a run that entered, and wakes the dispatcher
// when starts may be waiting for it.
func (d *dispatcher) leave() {
	d.mu.Lock()
	d.busy--
	more := d.more
	d.mu.Unlock()
	if more {
		d.signal()
	}
}

// free returns how many places of limit are free.
func (d *dispatcher) free(limit int) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return max(0, limit-d.busy)
}

// claimed counts the claimed runs, of want places asked for.
func (d *dispatcher) claimed(ids []string, want int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, id := range ids {
		d.claims[id] = true
	}
	d.busy += len(ids)
	d.more = len(ids) == want
}

// take takes a free place of limit for runID, started by this process
// without a claim; false when none is free.
func (d *dispatcher) take(runID string, limit int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.busy >= limit {
		return false
	}
	d.claims[runID] = true
	d.busy++
	return true
}

// unclaim gives back the place of a claimed run whose workflow was not
// started here.
func (d *dispatcher) unclaim(runID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.claims[runID] {
		delete(d.claims, runID)
		d.busy--
	}
}

// dispatch claims and starts runs until ctx ends.
func (e *Engine) dispatch(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		e.claimAndStart(ctx)
		poll := e.opts.QueuePoll
		if e.disp.listening.Load() {
			poll = max(poll, sweepEvery)
		}
		t.Reset(poll)
		select {
		case <-ctx.Done():
			return
		case <-e.disp.wake:
		case <-t.C:
		}
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
	}
}

// claimAndStart claims as many starts as this worker has free places and
// starts each as a workflow.
func (e *Engine) claimAndStart(ctx context.Context) {
	n := e.disp.free(e.opts.Concurrency)
	if n == 0 {
		e.disp.mu.Lock()
		e.disp.more = true // a place freed later looks again
		e.disp.mu.Unlock()
		return
	}
	got, err := e.tables.claimStarts(ctx, e.opts.Queue, n)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn("claiming runs to start failed", "error", err)
		}
		return
	}
	ids := make([]string, len(got))
	for i, c := range got {
		ids[i] = c.runID
	}
	e.disp.claimed(ids, n)
	for _, c := range got {
		e.wg.Add(1)
		go func() { defer e.wg.Done(); e.startClaimed(ctx, c) }()
	}
}

// startClaimed starts the workflow of a claimed run and removes its start.
func (e *Engine) startClaimed(ctx context.Context, c claimedStart) {
	var in runcore.DurableRun
	if err := json.Unmarshal(c.input, &in); err != nil {
		// Not written by this build: left for a worker that reads it.
		e.disp.unclaim(c.runID)
		e.log.Error("a run to start has an unreadable input", "run", c.runID, "error", err)
		return
	}
	_, err := dbos.RunWorkflow(e.ctx, e.workflow, in, dbos.WithWorkflowID(c.runID), dbos.WithWorkflowIDReusePolicy(dbos.WorkflowIDReusePolicyReject))
	inUse := errors.Is(err, dbos.ErrWorkflowIDInUse)
	if inUse {
		// Started before (by a worker that died before removing the
		// start): DBOS has it, and recovers it if it did not finish.
		e.disp.unclaim(c.runID)
	} else if err != nil {
		e.disp.unclaim(c.runID)
		e.log.Warn("starting a run failed; it is tried again", "run", c.runID, "error", err)
		if err := e.tables.releaseStart(context.WithoutCancel(ctx), c.runID); err != nil {
			e.log.Warn("freeing a claimed run failed", "run", c.runID, "error", err)
		}
		return
	}
	kept, err := e.tables.doneStart(context.WithoutCancel(ctx), c.runID)
	if err != nil {
		// The claim stays until this worker restarts or is reaped; the
		// workflow exists, so its next start is rejected.
		e.log.Warn("removing a started run's start failed", "run", c.runID, "error", err)
		return
	}
	if kept || inUse {
		return
	}
	// The start was removed meanwhile: by Cancel, which found no workflow
	// to cancel when the run was cancelled between its claim and here.
	if r, err := e.opts.Store.GetRun(context.WithoutCancel(ctx), c.runID); err == nil && r.Status == store.RunCancelled {
		if err := dbos.CancelWorkflow(e.ctx, c.runID); err != nil {
			e.log.Warn("cancelling a run cancelled as it started failed", "run", c.runID, "error", err)
		}
	}
}

// listen keeps a PostgreSQL LISTEN for starts, waking the dispatcher on
// each, until ctx ends; a failed connection is opened again after
// relisten. On SQLite it returns at once.
func (e *Engine) listen(ctx context.Context) {
	for {
		err := e.tables.listen(ctx, e.disp.listening.Store, e.disp.signal)
		if errors.Is(err, errNoListener) || ctx.Err() != nil {
			return
		}
		e.log.Warn("listening for runs to start failed; looking every queuePoll meanwhile", "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(relisten):
		}
	}
}
