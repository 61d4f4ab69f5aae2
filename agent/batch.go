package agent

import (
	"context"
	"fmt"
	"slices"

	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// settleBatch runs the given calls of the batch and, when none is left
// pending, puts the turn's results in the transcript. ended reports that the
// run ends here (failed, abandoned by the consumer, or pending) with res and err.
func (r *runner) settleBatch(ctx context.Context, which map[int]*tool.Answer) (res *Result, ended bool, err error) {
	if err := r.runBatch(ctx, which); err != nil {
		res, err = r.fail(err)
		return res, true, err
	}
	if r.stopped {
		return nil, true, ctx.Err()
	}
	if r.batchPending() {
		return r.result(StatusPending, ""), true, nil
	}
	r.finishBatch()
	return nil, false, nil
}

// runBatch runs the given calls of the current batch concurrently (bounded by
// MaxParallel), with the given answers (nil for a first attempt). Worker events
// are funnelled to the driving goroutine, which also starts the calls, in the
// model's order, each once a slot is free (so that with MaxParallel 1 they run
// one after another in order): one goroutine per call and no other. It returns the first hook error.
func (r *runner) runBatch(ctx context.Context, which map[int]*tool.Answer) error {
	type done struct {
		i  int
		oc gate.Ruling
	}
	var evCh chan Event                   // nil when nobody reads the events
	doneCh := make(chan done, len(which)) // a finished call never waits
	order := make([]int, 0, len(which))
	for i := range r.st.Batch {
		if _, ok := which[i]; ok {
			order = append(order, i)
		}
	}
	// When nobody reads the events, the calls only count theirs, and the
	// count joins the state's sequence number as each call finishes: no
	// hand-off to this goroutine per event.
	if !r.generate {
		evCh = make(chan Event)
	}
	send := r.sender(evCh)
	next, running, finished := 0, 0, 0
	var stop <-chan struct{} = ctx.Done()
	var firstErr error
	errs := make([]error, len(r.st.Batch))
	for finished < len(order) {
		for next < len(order) && running < r.a.opts.MaxParallel && stop != nil {
			if ctx.Err() != nil {
				break
			}
			i := order[next]
			ans, b := which[i], r.st.Batch[i]
			next++
			running++
			go func() { doneCh <- done{i, r.call(ctx, b.Call, b.Pending, ans, send)} }()
		}
		var d done
		select {
		case ev := <-evCh:
			r.emit(ev)
			continue
		case d = <-doneCh:
			running--
			r.st.Seq += r.uncounted.Swap(0)
		case <-stop:
			// The calls not started yet end with the context's error.
			for ; next < len(order); next++ {
				doneCh <- done{order[next], gate.Ruling{Err: ctx.Err()}}
				running++
			}
			stop = nil
			continue
		}
		finished++
		oc := d.oc
		errs[d.i] = oc.Err
		switch {
		case oc.Record != nil:
			// Under idMu: a call still running reads the batch when it
			// claims a request ID (claimRequestID).
			r.idMu.Lock()
			r.st.Batch[d.i].Record, r.st.Batch[d.i].Pending = oc.Record, nil
			r.idMu.Unlock()
			// A finished call is checkpointed at once, so that a
			// recovered run never runs it again.
			if err := r.checkpoint(ctx, CheckpointCall); err != nil && errs[d.i] == nil {
				errs[d.i] = err
				r.cancel()
			}
		case oc.Pending != nil:
			r.idMu.Lock()
			r.st.Batch[d.i].Pending = oc.Pending
			r.idMu.Unlock()
		}
	}
	for _, i := range order {
		if err := errs[i]; err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

// sender returns the function through which a batch's calls send their
// events: to evCh, or, when nobody reads the events (evCh nil), one that
// only counts them.
func (r *runner) sender(evCh chan Event) func(Event) {
	if evCh == nil {
		return func(Event) { r.uncounted.Add(1) }
	}
	return func(ev Event) { evCh <- ev }
}

// claimRequestID returns id if no other request of the run has had it, and
// otherwise id with "#" and the call ID appended, so that answers can always be
// routed (a hook may reuse one ID for several calls). The ID is fixed before
// the request is emitted, handed to WaitFor or stored.
func (r *runner) claimRequestID(id, callID string) string {
	r.idMu.Lock()
	defer r.idMu.Unlock()
	if r.pendingIDs == nil {
		r.pendingIDs = map[string]bool{}
		for _, id := range r.st.Requests {
			r.pendingIDs[id] = true
		}
		for _, q := range r.st.PendingRequests() {
			r.pendingIDs[q.ID] = true
		}
	}
	if r.pendingIDs[id] {
		base := id + "#" + callID
		id = base
		for n := 2; r.pendingIDs[id]; n++ {
			id = fmt.Sprintf("%s#%d", base, n)
		}
	}
	r.pendingIDs[id] = true
	r.st.Requests = append(r.st.Requests, id)
	return id
}

func (r *runner) batchPending() bool {
	for _, b := range r.st.Batch {
		if b.Pending != nil {
			return true
		}
	}
	return false
}

// finishBatch appends the batch's tool results to the transcript in the model's
// call order and moves its records to the run's records.
func (r *runner) finishBatch() {
	r.st.Messages = slices.Grow(r.st.Messages, len(r.st.Batch))
	r.st.ToolCalls = slices.Grow(r.st.ToolCalls, len(r.st.Batch))
	for _, b := range r.st.Batch {
		rec := b.Record
		r.st.Messages = append(r.st.Messages, model.ToolResult(b.Call.ID, b.Call.Name, rec.Output, rec.IsError))
		r.st.ToolCalls = append(r.st.ToolCalls, *rec)
	}
	r.st.Batch = nil
}
