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
	"github.com/tollgate-dev/tollgate/internal/argcheck"
	"github.com/tollgate-dev/tollgate/internal/hookrun"
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
		p, err := hookrun.Start(ctx, a.opts.Hooks, hooks.StartEvent{Prompt: prompt})
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

// drive runs body as a run (or resume) of st, and returns its result. A nil
// yield means that nobody reads the events (Run, Resume): then the result is
// only returned; otherwise it also ends the events, in a done event.
func (a *Agent) drive(ctx context.Context, st *stateData, resume bool, yield func(Event, error) bool, body func(*runner, context.Context) (*Result, error)) (*Result, error) {
	ctx, cancel := context.WithCancel(hookrun.WithRun(ctx, hooks.RunInfo{RunID: st.RunID, AgentID: a.opts.ID}))
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
	if len(a.opts.Hooks.Chain(hooks.StageEnd)) > 0 {
		if herr := hookrun.End(context.WithoutCancel(ctx), a.opts.Hooks, end); herr != nil {
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
func (r *runner) checkpoint(ctx context.Context, kind string) error {
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
			if r.st.StopContinuations < hookrun.MaxStopContinuations { // Stop hooks may continue the run
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
			r.st.Batch[i] = batchCall{Call: c, CutOff: r.cutOff[c.ID]}
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
	reason, err := hookrun.Stop(ctx, r.a.opts.Hooks, ev)
	if err != nil || reason != "" {
		return reason, err
	}
	g := inherited(ctx)
	if g == nil || len(g.hooks.Chain(hooks.StageSubagentStop)) == 0 {
		return "", nil
	}
	return hookrun.SubagentStop(ctx, g.hooks, hooks.SubagentStopEvent{
		StopEvent: ev, AgentID: r.a.opts.ID, RunID: r.st.RunID,
		ParentAgentID: g.parent.AgentID, ParentRunID: g.parent.RunID,
	})
}

// isObject reports whether args is a JSON object.
func isObject(args []byte) bool {
	var obj map[string]json.RawMessage
	return json.Unmarshal(args, &obj) == nil && obj != nil
}

// normalizeCalls gives every call a non-empty ID unique within the turn, and
// an arguments object ({} when the model sent none); arguments nested deeper
// than argcheck.MaxDepth become a JSON string of their text.
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
		} else if argcheck.TooDeep(out[i].Arguments) {
			// Kept as the model's text, as a provider keeps arguments that
			// are not JSON: the transcript, the records and the store hold a
			// string, and validation tells the model what is wrong.
			out[i].Arguments, _ = json.Marshal(string(out[i].Arguments))
		}
	}
	return out
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
		ToolCalls:  st.finishedCalls(),
		Turns:      st.Turn, Usage: st.Usage,
		FinishReason: r.lastFinish,
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
