package agent

import (
	"context"
	"fmt"
	"iter"

	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/hookrun"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// ResumeStream is [Agent.Resume] as a stream of events, like [Agent.Stream].
func (a *Agent) ResumeStream(ctx context.Context, state *State, answers ...tool.Answer) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) { a.resume(ctx, state, answers, yield) }
}

// resume resumes state with answers, yielding the events when yield is not
// nil, and returns the result (that of the done event). With a nil yield
// nobody reads the events (Resume; see runner.generate).
func (a *Agent) resume(ctx context.Context, state *State, answers []tool.Answer, yield func(Event, error) bool) (*Result, error) {
	// end ends the resume before it starts with ev (its only event) and err.
	end := func(ev Event, err error) (*Result, error) {
		if yield != nil {
			yield(ev, err)
		}
		return ev.Result, err
	}
	if state == nil {
		return end(Event{}, ErrNotPending)
	}
	if v := state.s.Version; v < 1 || v > StateVersion {
		return end(Event{}, fmt.Errorf("%w: %d (this agent reads 1 to %d)", ErrStateVersion, v, StateVersion))
	}
	st, err := state.s.clone()
	if err != nil {
		return end(Event{}, fmt.Errorf("agent: copying state: %w", err))
	}
	st.Version = StateVersion // what this resume stores is in this version's encoding
	byIndex, err := routeAnswers(st, answers)
	if err != nil {
		// Nothing changes: the caller gets the run as it was, still pending.
		res := (&runner{a: a, st: st}).result(StatusPending, "")
		return end(Event{Kind: EventDone, Result: res}, err)
	}
	if err := a.claimResume(st.RunID, st.Seq); err != nil {
		res := (&runner{a: a, st: st}).result(StatusPending, "")
		return end(Event{Kind: EventDone, Result: res}, err)
	}
	return a.drive(ctx, st, true, yield, func(r *runner, ctx context.Context) (*Result, error) {
		if _, err := hookrun.Start(ctx, a.opts.Hooks, hooks.StartEvent{Resumed: true}); err != nil {
			return r.fail(err)
		}
		if len(st.Batch) > 0 {
			// The calls the output limit cut off stay cut off: a recovery
			// runs the calls of the turn that neither finished nor suspended.
			for _, b := range st.Batch {
				if b.CutOff {
					if r.cutOff == nil {
						r.cutOff = map[string]bool{}
					}
					r.cutOff[b.Call.ID] = true
				}
			}
			if res, ended, err := r.settleBatch(ctx, byIndex); ended {
				return res, err
			}
			if err := r.checkpoint(ctx, CheckpointResults); err != nil {
				return r.fail(err)
			}
		}
		return r.loop(ctx)
	})
}

// maxResumed bounds the agent's memory of resumed states.
const maxResumed = 1 << 14

// claimResume records that a resume of run id starts from sequence number seq,
// or returns ErrAlreadyResumed when one started from seq or later before.
func (a *Agent) claimResume(id string, seq int64) error {
	a.resumedMu.Lock()
	defer a.resumedMu.Unlock()
	if last, ok := a.resumed[id]; ok && seq <= last {
		return fmt.Errorf("%w: run %s at event %d (a resume already started from event %d)", ErrAlreadyResumed, id, seq, last)
	}
	if a.resumed == nil {
		a.resumed = map[string]int64{}
	}
	if len(a.resumed) >= maxResumed {
		for k := range a.resumed { // forget an arbitrary old run
			delete(a.resumed, k)
			break
		}
	}
	a.resumed[id] = seq
	return nil
}

// routeAnswers maps each answer to the batch index of its pending request.
func routeAnswers(st *stateData, answers []tool.Answer) (map[int]*tool.Answer, error) {
	ids := map[string]int{}
	for i, b := range st.Batch {
		if b.Pending != nil {
			ids[b.Pending.Request.ID] = i
		}
	}
	out := map[int]*tool.Answer{}
	// Calls of a checkpointed turn that had neither finished nor suspended
	// run now (a recovery); those that finished are never run again.
	for i, b := range st.Batch {
		if b.Record == nil && b.Pending == nil {
			out[i] = nil
		}
	}
	if len(ids) == 0 && len(out) == 0 && !resumable(st) {
		return nil, ErrNotPending
	}
	for _, ans := range answers {
		if err := ans.Check(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidAnswer, err)
		}
		i, ok := ids[ans.ID]
		if !ok {
			return nil, fmt.Errorf("%w: %q (pending: %v)", ErrUnknownAnswer, ans.ID, pendingIDs(st))
		}
		if _, dup := out[i]; dup {
			return nil, fmt.Errorf("%w: %q", ErrDuplicateAnswer, ans.ID)
		}
		a := ans
		out[i] = &a
	}
	return out, nil
}

// resumable reports whether a state with no pending request can still go on:
// a checkpoint taken after a turn's results entered the transcript, whose
// next step is a model turn.
func resumable(st *stateData) bool {
	if len(st.Batch) > 0 {
		return true
	}
	n := len(st.Messages)
	return n > 0 && st.Messages[n-1].Role == model.RoleTool
}

func pendingIDs(st *stateData) []string {
	var ids []string
	for _, r := range st.PendingRequests() {
		ids = append(ids, r.ID)
	}
	return ids
}
