package agent

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"

	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// Errors returned by [Agent.Resume].
var (
	// ErrUnknownAnswer: an answer's ID matches no pending request of the state.
	ErrUnknownAnswer = errors.New("agent: answer matches no pending request")
	// ErrDuplicateAnswer: two answers carry the same ID.
	ErrDuplicateAnswer = errors.New("agent: more than one answer for one request")
	// ErrNotPending: the state has no pending request to answer.
	ErrNotPending = errors.New("agent: the run has no pending request")
	// ErrStateVersion: the state was written by an incompatible version.
	ErrStateVersion = errors.New("agent: unsupported state version")
)

// runner drives one run (or one resume) on the goroutine that iterates the stream.
type runner struct {
	a       *Agent
	st      *State
	yield   func(Event, error) bool
	stopped bool // the consumer stopped iterating
	cancel  context.CancelFunc

	tools map[string]tool.Tool
	defs  []model.ToolDef

	// idMu guards pendingIDs (the request IDs issued in this run) and
	// st.Requests, which claimRequestID appends to from the calls' goroutines.
	idMu       sync.Mutex
	pendingIDs map[string]bool

	toolState *tool.RunState // handed to every tool call; saved into st by result
}

// Stream runs the agent on prompt like [Agent.Run] and yields its events as they
// happen: text deltas, each tool call before it runs, its decision, pending
// requests, tool results (as the AfterTool chain left them), usage per turn, and
// last a done event with the final result. When the run fails, the last element
// is a done event with the partial result together with the error.
//
// Breaking out of the loop early cancels the run: running tool calls see their
// context cancelled, and Stream returns only after every goroutine it started has
// ended.
func (a *Agent) Stream(ctx context.Context, prompt string) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		st := &State{Version: StateVersion, RunID: newID("run_"), AgentID: a.opts.ID, Model: a.opts.ModelName}
		if a.opts.SystemPrompt != "" {
			st.Messages = append(st.Messages, model.System(a.opts.SystemPrompt))
		}
		st.Messages = append(st.Messages, model.User(prompt))
		a.drive(ctx, st, yield, func(r *runner, ctx context.Context) (*Result, error) { return r.loop(ctx) })
	}
}

// ResumeStream is [Agent.Resume] as a stream of events, like [Agent.Stream].
func (a *Agent) ResumeStream(ctx context.Context, state *State, answers ...tool.Answer) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		if state == nil {
			yield(Event{}, ErrNotPending)
			return
		}
		if state.Version != StateVersion {
			yield(Event{}, fmt.Errorf("%w: %d (this agent reads %d)", ErrStateVersion, state.Version, StateVersion))
			return
		}
		st, err := state.clone()
		if err != nil {
			yield(Event{}, fmt.Errorf("agent: copying state: %w", err))
			return
		}
		byIndex, err := routeAnswers(st, answers)
		if err != nil {
			// Nothing changes: the caller gets the run as it was, still pending.
			res := (&runner{a: a, st: st}).result(StatusPending, "")
			yield(Event{Kind: EventDone, Result: res}, err)
			return
		}
		a.drive(ctx, st, yield, func(r *runner, ctx context.Context) (*Result, error) {
			if res, ended, err := r.settleBatch(ctx, byIndex); ended {
				return res, err
			}
			return r.loop(ctx)
		})
	}
}

// routeAnswers maps each answer to the batch index of its pending request.
func routeAnswers(st *State, answers []tool.Answer) (map[int]*tool.Answer, error) {
	ids := map[string]int{}
	for i, b := range st.Batch {
		if b.Pending != nil {
			ids[b.Pending.Request.ID] = i
		}
	}
	if len(ids) == 0 {
		return nil, ErrNotPending
	}
	out := map[int]*tool.Answer{}
	for _, ans := range answers {
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

func pendingIDs(st *State) []string {
	var ids []string
	for _, r := range st.PendingRequests() {
		ids = append(ids, r.ID)
	}
	return ids
}

func (a *Agent) drive(ctx context.Context, st *State, yield func(Event, error) bool, body func(*runner, context.Context) (*Result, error)) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := &runner{a: a, st: st, yield: yield, cancel: cancel, toolState: tool.NewRunState(st.ToolState)}
	r.snapshotTools()
	res, err := body(r, ctx)
	if r.stopped {
		return
	}
	if res == nil && err != nil {
		res, _ = r.fail(err)
	}
	yield(Event{Kind: EventDone, Result: res}, err)
}

// emit yields ev unless the consumer has stopped; it must run on the driving goroutine.
func (r *runner) emit(ev Event) {
	if r.stopped {
		return
	}
	if !r.yield(ev, nil) {
		r.stopped = true
		r.cancel()
	}
}

func (r *runner) snapshotTools() {
	r.tools = map[string]tool.Tool{}
	if r.a.opts.Tools == nil {
		return
	}
	for _, t := range r.a.opts.Tools.Tools() {
		s := t.Spec()
		if _, dup := r.tools[s.Name]; dup {
			continue
		}
		r.tools[s.Name] = t
		def := model.ToolDef{Name: s.Name, Description: s.Description}
		if s.InputSchema != nil {
			if b, err := s.InputSchema.MarshalJSON(); err == nil {
				def.InputSchema = b
			}
		}
		r.defs = append(r.defs, def)
	}
}

func (r *runner) fail(err error) (*Result, error) {
	res := r.result(StatusError, err.Error())
	return res, err
}

// loop runs model turns until the run ends.
func (r *runner) loop(ctx context.Context) (*Result, error) {
	for {
		if err := ctx.Err(); err != nil {
			return r.fail(err)
		}
		if r.st.Turn >= r.a.opts.MaxTurns {
			return r.result(StatusIncomplete, fmt.Sprintf("reached MaxTurns (%d) before the model gave a final answer", r.a.opts.MaxTurns)), nil
		}
		r.st.Turn++
		resp, err := r.modelTurn(ctx)
		if err != nil {
			return r.fail(err)
		}
		if r.stopped {
			return nil, ctx.Err()
		}
		msg := resp.Message
		msg.Role = model.RoleAssistant
		msg.ToolCalls = normalizeCalls(msg.ToolCalls)
		r.st.Messages = append(r.st.Messages, msg)
		if len(msg.ToolCalls) == 0 {
			return r.result(StatusDone, ""), nil
		}
		r.st.Batch = make([]BatchCall, len(msg.ToolCalls))
		all := map[int]*tool.Answer{}
		for i, c := range msg.ToolCalls {
			r.st.Batch[i] = BatchCall{Call: c}
			all[i] = nil
		}
		if res, ended, err := r.settleBatch(ctx, all); ended {
			return res, err
		}
	}
}

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

// normalizeCalls gives every call a non-empty ID unique within the turn, and
// an arguments object ({} when the model sent none).
func normalizeCalls(calls []model.ToolCall) []model.ToolCall {
	seen := map[string]bool{}
	out := slices.Clone(calls)
	for i := range out {
		if out[i].ID == "" || seen[out[i].ID] {
			out[i].ID = newID("call_")
		}
		seen[out[i].ID] = true
		if len(out[i].Arguments) == 0 {
			out[i].Arguments = []byte("{}")
		}
	}
	return out
}

func (r *runner) modelTurn(ctx context.Context) (*model.Response, error) {
	turn := r.st.Turn
	h := r.a.opts.Hooks
	out, err := h.RunBeforeLLM(ctx, hooks.BeforeLLMEvent{Messages: slices.Clone(r.st.Messages), Tools: slices.Clone(r.defs), Model: r.st.Model, Turn: turn})
	if err != nil {
		return nil, err
	}
	var resp *model.Response
	if out.Response != nil {
		c := *out.Response
		resp = &c
		if resp.Message.Content != "" {
			r.emit(Event{Kind: EventText, Turn: turn, Delta: resp.Message.Content})
		}
	} else {
		req := &model.Request{Model: out.Model, Messages: out.Messages, Tools: out.Tools}
		if s, ok := r.a.opts.Model.(model.Streamer); ok {
			for ch, err := range s.Stream(ctx, req) {
				if err != nil {
					return nil, fmt.Errorf("agent: model turn %d: %w", turn, err)
				}
				if ch.Delta != "" {
					r.emit(Event{Kind: EventText, Turn: turn, Delta: ch.Delta})
				}
				if ch.Response != nil {
					resp = ch.Response
				}
			}
		} else {
			resp, err = r.a.opts.Model.Generate(ctx, req)
			if err != nil {
				return nil, fmt.Errorf("agent: model turn %d: %w", turn, err)
			}
			if resp != nil && resp.Message.Content != "" {
				r.emit(Event{Kind: EventText, Turn: turn, Delta: resp.Message.Content})
			}
		}
		if resp == nil {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("agent: model turn %d: the model returned no response", turn)
		}
	}
	if err := h.RunAfterLLM(ctx, hooks.AfterLLMEvent{Response: resp, Model: out.Model, Turn: turn}); err != nil {
		return nil, err
	}
	r.st.Usage = r.st.Usage.Add(resp.Usage)
	u := resp.Usage
	r.emit(Event{Kind: EventUsage, Turn: turn, Usage: &u})
	return resp, nil
}

// runBatch runs the given calls of the current batch concurrently (bounded by
// MaxParallel), with the given answers (nil for a first attempt). Worker events
// are funnelled to the driving goroutine. It returns the first hook error.
func (r *runner) runBatch(ctx context.Context, which map[int]*tool.Answer) error {
	type done struct {
		i  int
		oc callOutcome
	}
	evCh := make(chan Event)
	doneCh := make(chan done)
	sem := make(chan struct{}, r.a.opts.MaxParallel)
	var wg sync.WaitGroup
	order := make([]int, 0, len(which))
	for i := range r.st.Batch {
		if _, ok := which[i]; ok {
			order = append(order, i)
		}
	}
	send := func(ev Event) { evCh <- ev }
	// One feeder starts the calls in the model's order, each once a slot is
	// free, so that with MaxParallel 1 they run one after another in order.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for k, i := range order {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				for _, j := range order[k:] {
					doneCh <- done{j, callOutcome{err: ctx.Err()}}
				}
				return
			}
			i, ans, b := i, which[i], r.st.Batch[i]
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				doneCh <- done{i, r.processCall(ctx, b.Call, b.Pending, ans, send)}
			}()
		}
	}()
	go func() { wg.Wait(); close(doneCh) }()
	var firstErr error
	outcomes := make(map[int]callOutcome, len(order))
	for evCh != nil || doneCh != nil {
		select {
		case ev := <-evCh:
			r.emit(ev)
		case d, ok := <-doneCh:
			if !ok {
				doneCh = nil
				evCh = nil
				continue
			}
			outcomes[d.i] = d.oc
		}
	}
	for _, i := range order {
		oc := outcomes[i]
		if oc.err != nil && firstErr == nil {
			firstErr = oc.err
		}
		switch {
		case oc.rec != nil:
			r.st.Batch[i].Record, r.st.Batch[i].Pending = oc.rec, nil
		case oc.pending != nil:
			r.st.Batch[i].Pending = oc.pending
		}
	}
	return firstErr
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
	for _, b := range r.st.Batch {
		rec := b.Record
		r.st.Messages = append(r.st.Messages, model.ToolResult(b.Call.ID, b.Call.Name, rec.Output, rec.IsError))
		r.st.ToolCalls = append(r.st.ToolCalls, *rec)
	}
	r.st.Batch = nil
}

// result builds the Result for the run's current state.
func (r *runner) result(status Status, reason string) *Result {
	st := r.st
	if r.toolState != nil {
		st.ToolState = r.toolState.Values()
	}
	res := &Result{
		RunID: st.RunID, Status: status, Reason: reason,
		Transcript: slices.Clone(st.Messages),
		ToolCalls:  append([]ToolCallRecord{}, st.ToolCalls...), // [] rather than null in JSON
		Turns:      st.Turn, Usage: st.Usage,
	}
	for _, b := range st.Batch {
		if b.Record != nil {
			res.ToolCalls = append(res.ToolCalls, *b.Record)
		}
	}
	switch status {
	case StatusDone:
		if n := len(st.Messages); n > 0 {
			res.Text = st.Messages[n-1].Content
		}
	case StatusPending:
		res.Pending = st.PendingRequests()
		if c, err := st.clone(); err == nil {
			res.State = c
		} else {
			res.State = st
		}
	}
	return res
}
