package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

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
	// ErrInvalidAnswer: an answer names its answerer twice, differently (By
	// and Principal both set, By not Principal.Name; see [tool.Answer.Check]).
	ErrInvalidAnswer = errors.New("agent: invalid answer")
	// ErrNotPending: the state has no pending request to answer.
	ErrNotPending = errors.New("agent: the run has no pending request")
	// ErrStateVersion: the state was written by an incompatible version.
	ErrStateVersion = errors.New("agent: unsupported state version")
	// ErrAlreadyResumed: this state (or a later one of the same run) was
	// already resumed by this agent; resuming it again could run an approved
	// call twice. Resume the state the last resume returned instead.
	ErrAlreadyResumed = errors.New("agent: this state was already resumed")
)

// TooManyToolCallsError ends a run whose model asked for more tool calls in
// one turn than Options.MaxToolCalls allows. None of that turn's calls ran:
// running an arbitrary first part of them would carry out part of a plan the
// model cannot see was cut, and a model that asks for that many is broken or
// hostile. Test for it with errors.As.
type TooManyToolCallsError struct {
	Turn  int // the model turn, from 1
	Calls int // the number of tool calls the model asked for
	Limit int // Options.MaxToolCalls
}

// Error says the turn, how many calls were asked for and the limit, and that
// none of them ran.
func (e *TooManyToolCallsError) Error() string {
	return fmt.Sprintf("agent: model turn %d asked for %d tool calls, more than the limit of %d per turn (Options.MaxToolCalls); none of them ran", e.Turn, e.Calls, e.Limit)
}

// runner drives one run (or one resume) on the goroutine that iterates the stream.
type runner struct {
	a       *Agent
	st      *stateData
	yield   func(Event, error) bool
	stopped bool // the consumer stopped iterating
	cancel  context.CancelFunc
	// generate: nobody reads the events but the done one (Run, Resume), so
	// each model turn is one Generate call even when the model can stream,
	// and the other events are numbered (the state's sequence number counts
	// them as in Stream) but never delivered.
	generate bool
	// uncounted counts the events the running calls dropped (generate).
	uncounted atomic.Int64

	tools map[string]tool.Tool
	defs  []model.ToolDef

	// idMu guards pendingIDs (the request IDs issued in this run),
	// st.Requests, which claimRequestID appends to from the calls' goroutines,
	// and st.Batch while a turn's calls run (claimRequestID reads it).
	idMu       sync.Mutex
	pendingIDs map[string]bool

	toolState *tool.RunState // handed to every tool call; saved into st by result
	gov       *governance    // handed down to every tool call (sub-agents)

	// lastFinish is the finish reason of the last model turn; cutOff holds the
	// IDs of the calls of that turn that the output limit cut off (written
	// before the batch starts, read by its goroutines).
	lastFinish model.FinishReason
	cutOff     map[string]bool

	// chunks takes a streamed turn's chunks through onChunk, its take
	// method bound once per run (see streamTurn).
	chunks  chunkSink
	onChunk func(model.Chunk, error) bool
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
func (a *Agent) Stream(ctx context.Context, prompt string, opts ...RunOption) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) { a.start(ctx, prompt, opts, yield) }
}

// transcriptRoom is the room a run's transcript has after its prompt when
// it starts, so that a short run (a turn of tool calls, their results and
// the answer) never grows it. The model and the hooks see it capped at its
// length (see modelTurn).
const transcriptRoom = 6

// start runs the agent on prompt, yielding its events when yield is not nil,
// and returns the result (that of the done event). With a nil yield nobody
// reads the events (Run; see runner.generate).
func (a *Agent) start(ctx context.Context, prompt string, opts []RunOption, yield func(Event, error) bool) (*Result, error) {
	var ro runOptions
	if len(opts) > 0 {
		ro = runOptionsOf(opts)
	}
	id := ro.runID
	if id == "" {
		id = a.opts.NewID("run_")
	}
	st := &stateData{Version: StateVersion, RunID: id, AgentID: a.opts.ID, Model: a.opts.ModelName}
	st.Messages = make([]model.Message, 0, 2+len(ro.history)+transcriptRoom)
	if a.opts.SystemPrompt != "" && !hasSystem(ro.history) {
		st.Messages = append(st.Messages, model.System(a.opts.SystemPrompt))
	}
	st.Messages = append(st.Messages, ro.history...)
	st.Messages = append(st.Messages, model.User(prompt))
	return a.drive(ctx, st, false, yield, func(r *runner, ctx context.Context) (*Result, error) {
		p, err := a.opts.Hooks.RunStart(ctx, hooks.StartEvent{Prompt: prompt})
		if err != nil {
			return r.fail(err)
		}
		st.Messages[len(st.Messages)-1] = model.User(p)
		return r.loop(ctx)
	})
}

// runOptionsOf applies opts. (A function of its own: the options it hands
// to each option escape, and a run without options need not allocate them.)
func runOptionsOf(opts []RunOption) runOptions {
	var ro runOptions
	for _, o := range opts {
		o(&ro)
	}
	return ro
}

func hasSystem(msgs []model.Message) bool {
	return len(msgs) > 0 && msgs[0].Role == model.RoleSystem
}

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
		if _, err := a.opts.Hooks.RunStart(ctx, hooks.StartEvent{Resumed: true}); err != nil {
			return r.fail(err)
		}
		if len(st.Batch) > 0 {
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

// drive runs body as a run (or resume) of st, and returns its result. A nil
// yield means that nobody reads the events (Run, Resume): then the result is
// only returned; otherwise it also ends the events, in a done event.
func (a *Agent) drive(ctx context.Context, st *stateData, resume bool, yield func(Event, error) bool, body func(*runner, context.Context) (*Result, error)) (*Result, error) {
	ctx, cancel := context.WithCancel(hooks.WithRun(ctx, hooks.RunInfo{RunID: st.RunID, AgentID: a.opts.ID}))
	defer cancel()
	r := &runner{a: a, st: st, yield: yield, cancel: cancel, generate: yield == nil, toolState: tool.NewRunState(st.ToolState), gov: a.handDown(ctx)}
	r.snapshotTools()
	var res *Result
	var err error
	if len(a.opts.Middleware) == 0 {
		res, err = body(r, ctx)
	} else {
		run := RunHandler(func(ctx context.Context, _ *RunInfo) (*Result, error) { return body(r, ctx) })
		for i := len(a.opts.Middleware) - 1; i >= 0; i-- {
			if m := a.opts.Middleware[i].Run; m != nil {
				run = m(run)
			}
		}
		res, err = run(ctx, &RunInfo{RunID: st.RunID, AgentID: a.opts.ID, Model: st.Model, Resume: resume})
	}
	if res == nil && err != nil && !r.stopped {
		res, _ = r.fail(err)
	}
	end := hooks.EndEvent{Status: string(StatusError), Reason: "the consumer stopped reading the run's events"}
	if res != nil {
		end = hooks.EndEvent{Status: string(res.Status), Reason: res.Reason}
	}
	if a.opts.Hooks.Len(hooks.StageEnd) > 0 {
		if herr := a.opts.Hooks.RunEnd(context.WithoutCancel(ctx), end); herr != nil {
			a.log.LogAttrs(ctx, slog.LevelWarn, "end hook failed", slog.String("run", st.RunID), slog.String("error", herr.Error()))
		}
	}
	if r.stopped {
		return res, err
	}
	st.Seq++
	if yield != nil {
		yield(Event{Kind: EventDone, RunID: st.RunID, Seq: st.Seq, Turn: st.Turn, Result: res}, err)
	}
	return res, err
}

// emit yields ev, numbered, unless the consumer has stopped; it must run on
// the driving goroutine. When nobody reads the events (r.generate), it only
// numbers ev.
func (r *runner) emit(ev Event) {
	if r.stopped {
		return
	}
	r.st.Seq++
	if r.generate {
		return
	}
	ev.RunID, ev.Seq = r.st.RunID, r.st.Seq
	if !r.yield(ev, nil) {
		r.stopped = true
		r.cancel()
	}
}

// checkpoint hands a copy of the run's state to Options.Checkpoint.
func (r *runner) checkpoint(ctx context.Context, kind CheckpointKind) error {
	f := r.a.opts.Checkpoint
	if f == nil {
		return nil
	}
	r.idMu.Lock() // the calls' goroutines append request IDs
	if r.toolState != nil {
		r.st.ToolState = r.toolState.Values()
	}
	c, err := r.st.clone()
	r.idMu.Unlock()
	if err != nil {
		return fmt.Errorf("agent: checkpoint: %w", err)
	}
	var cerr error
	func() {
		defer func() {
			if p := recover(); p != nil {
				cerr = fmt.Errorf("checkpoint panicked: %v", p)
			}
		}()
		cerr = f(ctx, Checkpoint{Kind: kind, RunID: c.RunID, Seq: c.Seq, Turn: c.Turn, State: &State{s: *c}})
	}()
	if cerr != nil {
		return fmt.Errorf("agent: checkpoint after %s: %w", kind, cerr)
	}
	return nil
}

// refreshTools asks a RefreshingToolset whether its tools changed and, if
// so, takes a new snapshot.
func (r *runner) refreshTools(ctx context.Context) {
	rs, ok := r.a.opts.Tools.(RefreshingToolset)
	if !ok {
		return
	}
	changed, err := func() (changed bool, err error) {
		defer func() {
			if p := recover(); p != nil {
				changed, err = false, fmt.Errorf("Refresh panicked: %v", p)
			}
		}()
		return rs.Refresh(ctx)
	}()
	if err != nil {
		r.a.log.LogAttrs(ctx, slog.LevelWarn, "refreshing the tools failed", slog.String("run", r.st.RunID), slog.String("error", err.Error()))
	}
	if changed {
		r.snapshotTools()
		r.a.log.LogAttrs(ctx, slogInfo, "tools changed", slog.String("run", r.st.RunID), slog.Int("tools", len(r.defs)))
	}
}

func (r *runner) snapshotTools() {
	r.tools, r.defs = nil, nil
	if r.a.opts.Tools == nil {
		r.tools = map[string]tool.Tool{}
		return
	}
	list := r.a.opts.Tools.Tools()
	if _, fixed := r.a.opts.Tools.(ToolList); fixed {
		// A ToolList's snapshot is shared, read-only, by every run while
		// its tools' specs stay the same (the model and the hooks get copies
		// or capped slices of defs); a tool whose name, description or
		// schema changed makes a new one.
		if c := r.a.fixed.Load(); c != nil && c.same(list) {
			r.tools, r.defs = c.tools, c.defs
			return
		}
		r.snapshotList(list)
		c := &toolSnapshot{tools: r.tools, defs: r.defs, specs: make([]tool.Spec, len(list))}
		for i, t := range list {
			c.specs[i] = t.Spec()
		}
		r.a.fixed.Store(c)
		return
	}
	r.snapshotList(list)
}

// toolSnapshot is the snapshot of a ToolList's tools with the specs it was
// made from.
type toolSnapshot struct {
	tools map[string]tool.Tool
	defs  []model.ToolDef
	specs []tool.Spec
}

// same reports whether list's tools still have the specs c was made from
// (the same name, description and schema).
func (c *toolSnapshot) same(list []tool.Tool) bool {
	if len(list) != len(c.specs) {
		return false
	}
	for i, t := range list {
		s, o := t.Spec(), &c.specs[i]
		if s.Name != o.Name || s.Description != o.Description || s.InputSchema != o.InputSchema {
			return false
		}
	}
	return true
}

// snapshotList sets the runner's tools and their definitions from list; the
// first of two tools with one name wins ([New] refuses such lists).
func (r *runner) snapshotList(list []tool.Tool) {
	r.tools = make(map[string]tool.Tool, len(list))
	if len(list) > 0 {
		r.defs = make([]model.ToolDef, 0, len(list))
	}
	for _, t := range list {
		s := t.Spec()
		if _, dup := r.tools[s.Name]; dup {
			continue
		}
		r.tools[s.Name] = t
		r.defs = append(r.defs, model.ToolDef{Name: s.Name, Description: s.Description, InputSchema: r.a.schemaJSON(s)})
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
		r.refreshTools(ctx)
		r.st.Turn++
		resp, err := r.turn(ctx)
		if err != nil {
			return r.fail(err)
		}
		if r.stopped {
			return nil, ctx.Err()
		}
		msg := resp.Message
		if n := len(msg.ToolCalls); n > r.a.opts.MaxToolCalls {
			return r.fail(&TooManyToolCallsError{Turn: r.st.Turn, Calls: n, Limit: r.a.opts.MaxToolCalls})
		}
		msg.Role = model.RoleAssistant
		msg.ToolCalls = r.normalizeCalls(msg.ToolCalls)
		r.st.Messages = append(r.st.Messages, msg)
		r.lastFinish, r.cutOff = resp.FinishReason, nil
		if resp.FinishReason == model.FinishLength {
			// The limit fell in the last call, or after it: a call whose
			// arguments are not an object was cut, and so may be the last
			// one even when what arrived parses (a server that sends the
			// part of a cut input it could parse, {} at worst).
			for i, c := range msg.ToolCalls {
				if !isObject(c.Arguments) || i == len(msg.ToolCalls)-1 {
					if r.cutOff == nil {
						r.cutOff = map[string]bool{}
					}
					r.cutOff[c.ID] = true
				}
			}
		}
		if len(msg.ToolCalls) == 0 {
			if resp.FinishReason == model.FinishLength {
				res := r.result(StatusIncomplete, "the model's answer was cut off at its output limit (finish reason length)")
				res.Text = msg.Content
				return res, nil
			}
			if r.st.StopContinuations < hooks.MaxStopContinuations { // Stop hooks may continue the run
				reason, err := r.stopHooks(ctx, hooks.StopEvent{Text: msg.Content, Turn: r.st.Turn, Continuations: r.st.StopContinuations})
				if err != nil {
					return r.fail(err)
				}
				if reason != "" {
					r.st.StopContinuations++
					r.st.Messages = append(r.st.Messages, model.User(reason))
					continue
				}
			}
			return r.result(StatusDone, ""), nil
		}
		r.st.Batch = make([]batchCall, len(msg.ToolCalls))
		all := map[int]*tool.Answer{}
		for i, c := range msg.ToolCalls {
			r.st.Batch[i] = batchCall{Call: c}
			all[i] = nil
		}
		if err := r.checkpoint(ctx, CheckpointTurn); err != nil {
			return r.fail(err)
		}
		if res, ended, err := r.settleBatch(ctx, all); ended {
			return res, err
		}
		if err := r.checkpoint(ctx, CheckpointResults); err != nil {
			return r.fail(err)
		}
	}
}

// stopHooks asks the agent's Stop hooks about a final answer and, when they
// let the run end and the run is a sub-agent's (a tool of another agent
// started it), the caller's SubagentStop hooks. A non-empty reason continues
// the run.
func (r *runner) stopHooks(ctx context.Context, ev hooks.StopEvent) (string, error) {
	reason, err := r.a.opts.Hooks.RunStop(ctx, ev)
	if err != nil || reason != "" {
		return reason, err
	}
	g := inherited(ctx)
	if g == nil || g.hooks.Len(hooks.StageSubagentStop) == 0 {
		return "", nil
	}
	return g.hooks.RunSubagentStop(ctx, hooks.SubagentStopEvent{
		StopEvent: ev, AgentID: r.a.opts.ID, RunID: r.st.RunID,
		ParentAgentID: g.parent.AgentID, ParentRunID: g.parent.RunID,
	})
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

// isObject reports whether args is a JSON object.
func isObject(args []byte) bool {
	var obj map[string]json.RawMessage
	return json.Unmarshal(args, &obj) == nil && obj != nil
}

// normalizeCalls gives every call a non-empty ID unique within the turn, and
// an arguments object ({} when the model sent none); arguments nested deeper
// than tool.MaxArgumentsDepth become a JSON string of their text.
func (r *runner) normalizeCalls(calls []model.ToolCall) []model.ToolCall {
	seen := map[string]bool{}
	out := slices.Clone(calls)
	for i := range out {
		if out[i].ID == "" || seen[out[i].ID] {
			out[i].ID = r.a.opts.NewID("call_")
		}
		seen[out[i].ID] = true
		if len(out[i].Arguments) == 0 {
			out[i].Arguments = []byte("{}")
		} else if tool.TooDeep(out[i].Arguments) {
			// Kept as the model's text, as a provider keeps arguments that
			// are not JSON: the transcript, the records and the store hold a
			// string, and validation tells the model what is wrong.
			out[i].Arguments, _ = json.Marshal(string(out[i].Arguments))
		}
	}
	return out
}

func (r *runner) modelTurn(ctx context.Context) (*model.Response, error) {
	turn := r.st.Turn
	h := r.a.opts.Hooks
	// Each hook gets copies of its own (RunBeforeLLM); the model gets the
	// run's slices capped at their length, so that a model that appends to
	// its request cannot write into the transcript's spare capacity.
	msgs, defs := r.st.Messages[:len(r.st.Messages):len(r.st.Messages)], r.defs[:len(r.defs):len(r.defs)]
	out, err := h.RunBeforeLLM(ctx, hooks.BeforeLLMEvent{Messages: msgs, Tools: defs, Model: r.st.Model, Turn: turn})
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
		if s, ok := r.a.opts.Model.(model.Streamer); ok && !r.generate {
			if resp, err = r.streamTurn(ctx, s, req, turn); err != nil {
				return nil, err
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
	r.emit(Event{Kind: EventUsage, Turn: turn, Usage: &resp.Usage})
	return resp, nil
}

// streamTurn asks s for turn's response as a stream, emitting its text
// deltas. The chunks go to the runner's chunk sink through a function made
// once per run, so that a streamed turn moves nothing to the heap.
func (r *runner) streamTurn(ctx context.Context, s model.Streamer, req *model.Request, turn int) (*model.Response, error) {
	k := &r.chunks
	*k = chunkSink{r: r, turn: turn}
	if r.onChunk == nil {
		r.onChunk = k.take
	}
	s.Stream(ctx, req)(r.onChunk)
	resp, err := k.resp, k.err
	*k = chunkSink{}
	if err != nil {
		return nil, fmt.Errorf("agent: model turn %d: %w", turn, err)
	}
	return resp, nil
}

// chunkSink takes the chunks of a streamed turn (see streamTurn): it emits
// their text deltas and keeps the response, or the error that ends the
// stream.
type chunkSink struct {
	r    *runner
	turn int
	resp *model.Response
	err  error
	done bool // an error came: the stream must stop
}

// take is the stream's yield function: it returns false once an error has
// come, as a range loop that returns on the error would stop.
func (k *chunkSink) take(ch model.Chunk, err error) bool {
	if k.done {
		return false
	}
	if err != nil {
		k.err, k.done = err, true
		return false
	}
	if ch.Delta != "" {
		k.r.emit(Event{Kind: EventText, Turn: k.turn, Delta: ch.Delta})
	}
	if ch.Response != nil {
		k.resp = ch.Response
	}
	return true
}

// runBatch runs the given calls of the current batch concurrently (bounded by
// MaxParallel), with the given answers (nil for a first attempt). Worker events
// are funnelled to the driving goroutine, which also starts the calls, in the
// model's order, each once a slot is free (so that with MaxParallel 1 they run
// one after another in order): one goroutine per call and no other. It returns the first hook error.
func (r *runner) runBatch(ctx context.Context, which map[int]*tool.Answer) error {
	type done struct {
		i  int
		oc CallOutcome
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
				doneCh <- done{order[next], CallOutcome{Err: ctx.Err()}}
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
		FinishReason: r.lastFinish,
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
		c, err := st.clone()
		if err != nil {
			c = st
		}
		res.State = &State{s: *c}
		// The done event that carries this result comes next: the state
		// goes on from its number.
		res.State.s.Seq = st.Seq + 1
	}
	return res
}
