package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/toolctx"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// processCall runs one call through the pipeline; with a WaitFor it waits for
// the answer to a pending request and retries the call once with it.
func (r *runner) processCall(ctx context.Context, call model.ToolCall, prior *gate.Pending, ans *tool.Answer, emit func(Event)) gate.Ruling {
	// Announced on the first attempt and again when a resume takes the call up.
	c := call
	emit(Event{Kind: EventToolCall, Turn: r.st.Turn, Call: &c, CallID: call.ID})
	oc := r.pipeline(ctx, call, prior, ans, emit)
	wait := r.a.opts.WaitFor
	if g := inherited(ctx); wait == nil && g != nil {
		wait = g.waitFor
	}
	if oc.Pending == nil || wait == nil {
		return oc
	}
	for i := len(r.a.opts.Middleware) - 1; i >= 0; i-- {
		if m := r.a.opts.Middleware[i].Wait; m != nil {
			wait = m(wait)
		}
	}
	// The call is retried once per answer; the gate raises a request after
	// an answer only when the tool asks while it runs on an approval
	// ([gate.Pending].Approved), and a second time never, so this waits at
	// most twice.
	for waits := 0; oc.Pending != nil && waits < 2; waits++ {
		req := oc.Pending.Request
		answer, err := r.safeWait(context.WithValue(ctx, waitingKey{}, oc.Pending), wait, req)
		if err != nil {
			if ctx.Err() != nil {
				return gate.Ruling{Err: ctx.Err()}
			}
			return r.end(ctx, call, tool.Errorf("no answer to request %s: %v", req.ID, err),
				gate.Decision{Outcome: gate.OutcomeDeclined, By: approval.Runtime, Reason: err.Error(), Votes: oc.Pending.Votes}, emit)
		}
		// The gate checks the answer against the request (its ID, its
		// answerers) before anything runs.
		oc = r.pipeline(ctx, call, oc.Pending, &answer, emit)
	}
	return oc
}

type waitingKey struct{}

// PendingCallFrom returns a copy of the pending call whose request the wait
// that ctx was handed to is for (a [Middleware]'s Wait, Options.WaitFor):
// its request, origin, asking hook, arguments and the votes heard before it,
// as a halted run's state would hold it. A tracer counts and annotates the
// pending step with it as it would on a halt. ok is false for any other
// context.
func PendingCallFrom(ctx context.Context) (p *gate.Pending, ok bool) {
	w, ok := ctx.Value(waitingKey{}).(*gate.Pending)
	if !ok {
		return nil, false
	}
	var c gate.Pending
	var cl cloner
	cl.pending(&c, w)
	return &c, true
}

// pipeline is one pass of docs/architecture.md's tool-call pipeline through
// the agent's gate: Decide, then, for a call that runs, Complete with the
// tool run under the call's limits. prior and ans are set when the call is
// retried after an answer.
func (r *runner) pipeline(ctx context.Context, call model.ToolCall, prior *gate.Pending, ans *tool.Answer, emit func(Event)) gate.Ruling {
	env := r.env(ctx, emit)
	ru := r.a.gate.Decide(ctx, env, r.gateCall(call), prior, ans)
	if ru.Allowed != nil {
		ru = r.a.gate.Complete(ctx, env, ru.Allowed, r.runTool(emit))
	}
	return gate.Ruling{Record: ru.Record, Pending: ru.Pending, Err: ru.Err}
}

// gateCall is call as the gate sees it.
func (r *runner) gateCall(call model.ToolCall) gate.Call {
	return gate.Call{ID: call.ID, Name: call.Name, Args: call.Arguments, Turn: r.st.Turn, RunID: r.st.RunID, AgentID: r.a.opts.ID,
		Source: gate.SourceAgent, CutOff: r.cutOff[call.ID]}
}

// end records a call that ends without running, for the agent's own
// checks of an answer.
func (r *runner) end(ctx context.Context, call model.ToolCall, res tool.Result, d gate.Decision, emit func(Event)) gate.Ruling {
	return gate.Ruling{Record: r.a.gate.End(ctx, r.env(ctx, emit), r.gateCall(call), res, d)}
}

// env is what the run lends the gate for one call: its tools, the
// authorizers a parent agent handed down, the events, the run's request IDs.
func (r *runner) env(ctx context.Context, emit func(Event)) *gate.Env {
	ce := &callEnv{events: callEvents{emit: emit}}
	ce.Env = gate.Env{Tools: r, Observer: &ce.events, ClaimID: r.claimRequestID}
	if g := inherited(ctx); g != nil {
		ce.Env.Authorizers = g.authorizers
	}
	return &ce.Env
}

// callEnv is a call's environment and the events its observer makes,
// made together.
type callEnv struct {
	gate.Env
	events callEvents
}

// Tool returns the run's tool called name (gate.Tools).
func (r *runner) Tool(name string) (tool.Tool, bool) {
	t, ok := r.tools[name]
	return t, ok
}

// Names lists the run's tools, sorted (gate.Tools).
func (r *runner) Names() []string { return r.toolNames() }

// callEvents turns what the gate tells of one call into the run's events.
type callEvents struct {
	emit func(Event)
}

func (e *callEvents) Decided(c *gate.Call, d gate.Decision) {
	e.emit(Event{Kind: EventDecision, Turn: c.Turn, CallID: c.ID, Decision: &d})
}

func (e *callEvents) Pending(c *gate.Call, req tool.Request) {
	e.emit(Event{Kind: EventPending, Turn: c.Turn, CallID: c.ID, Request: &req})
}

func (e *callEvents) Recorded(c *gate.Call, rec *gate.Record) {
	cp := *rec
	e.emit(Event{Kind: EventToolResult, Turn: c.Turn, CallID: c.ID, Record: &cp})
}

// runTool is the gate's runner for the agent: the tool, on a goroutine of
// its own, bounded by the call's limits, with the call's context.
func (r *runner) runTool(emit func(Event)) gate.Runner {
	return func(ctx context.Context, a *gate.Allowed) gate.Ran {
		t := r.tools[a.Call.Name]
		spec := t.Spec()
		start := time.Now()
		cc := &callContext{Context: ctx, gov: r.gov, rep: reporter{emit: emit, turn: a.Call.Turn, callID: a.Call.ID}}
		cc.inv = tool.Invocation{RunID: r.st.RunID, AgentID: r.a.opts.ID, CallID: a.Call.ID, Turn: a.Call.Turn, State: r.toolState, Reporter: &cc.rep}
		if a.Answer != nil {
			// The tool's own copy of the answer, which the gate put on ctx.
			cc.inv.Answer = tool.InvocationFrom(ctx).Answer
		}
		if spec.InputSchema != nil && len(a.Args) > 0 {
			// The gate validated a.Args against this schema: the tool
			// need not again.
			cc.validated, cc.isValidated = toolctx.Validated{Schema: spec.InputSchema, Args: a.Args}, true
		}
		res := executeBounded(cc, t, a.Args, r.a.limits(a.Call.Name))
		cc.rep.close()
		return gate.Ran{Result: res, Latency: time.Since(start), Refusal: cc.refusal.Load()}
	}
}

// execute calls the tool, turning an error or a panic into an error result.
func execute(ctx context.Context, t tool.Tool, args json.RawMessage) (res tool.Result) {
	defer func() {
		if p := recover(); p != nil {
			res = tool.Recovered(t.Spec().Name, p)
		}
	}()
	res, err := t.Call(ctx, args)
	if err != nil {
		return tool.Error(err.Error())
	}
	return res
}

func (r *runner) toolNames() []string {
	names := make([]string, 0, len(r.tools))
	for n := range r.tools {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// schemaJSONs holds the JSON of the tools' input schemas for every agent of
// the process, keyed by the schema, weakly: an entry goes once its schema
// is collected. Agents made for each run from the same options (a server
// makes one per run and resume from a built configuration) then marshal a
// schema once, not once per run.
var schemaJSONs sync.Map // weak.Pointer[jsonschema.Schema] -> json.RawMessage

// schemaJSON returns the JSON of spec's input schema (nil for none, or for
// one that does not marshal), from schemaJSONs; a tool whose schema changes
// gives a new schema, marshalled anew. The JSON is shared: never modify it.
func (a *Agent) schemaJSON(spec tool.Spec) json.RawMessage {
	s := spec.InputSchema
	if s == nil {
		return nil
	}
	k := weak.Make(s)
	if b, ok := schemaJSONs.Load(k); ok {
		return b.(json.RawMessage)
	}
	b, err := s.MarshalJSON()
	if err != nil {
		return nil
	}
	if got, loaded := schemaJSONs.LoadOrStore(k, json.RawMessage(b)); loaded {
		return got.(json.RawMessage)
	}
	runtime.AddCleanup(s, func(k weak.Pointer[jsonschema.Schema]) { schemaJSONs.Delete(k) }, k)
	return b
}

// safeWait calls a WaitFor function, turning a panic into an error (no answer).
func (r *runner) safeWait(ctx context.Context, wait tool.WaitFunc, req tool.Request) (a tool.Answer, err error) {
	defer func() {
		if p := recover(); p != nil {
			a, err = tool.Answer{}, fmt.Errorf("WaitFor panicked: %v", p)
		}
	}()
	return wait(ctx, req)
}

// reporter turns a running call's progress and notices into events; after
// close (the call returned) it drops them, since the batch no longer reads
// the call's events then.
// At most maxProgressEvents and maxNoticeEvents of them per call.
type reporter struct {
	emit     func(Event)
	turn     int
	callID   string
	mu       sync.Mutex
	closed   bool
	progress int
	notices  int
}

// Bounds of the reports of one call that become events ([EventProgress],
// [EventNotice]); further reports of the call are dropped, so that a tool (or
// the MCP server behind it) cannot flood a run's events.
const (
	// maxProgressEvents is the most progress events of one call.
	maxProgressEvents = 1000
	// maxNoticeEvents is the most notice events of one call.
	maxNoticeEvents = 32
)

func (p *reporter) Progress(pr tool.Progress) {
	p.send(Event{Kind: EventProgress, Turn: p.turn, CallID: p.callID, Progress: &pr}, &p.progress, maxProgressEvents)
}

func (p *reporter) Notice(n tool.Notice) {
	p.send(Event{Kind: EventNotice, Turn: p.turn, CallID: p.callID, Notice: &n}, &p.notices, maxNoticeEvents)
}

// send emits ev unless the call has returned or *count reached limit. It
// holds mu while emitting, so close waits for a report in flight (the batch
// reads events until every call has returned, so that emit completes).
func (p *reporter) send(ev Event, count *int, limit int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed && *count < limit {
		*count++
		p.emit(ev)
	}
}

func (p *reporter) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
}

// callContext is a tool's context: ctx with the values the agent hands every
// tool call (its governance, for sub-agents; its invocation, with the run's
// state, the answer and the reporter; the arguments' validation), all
// answered from one value rather than one context.WithValue each. Values a tool puts in a context derived from it
// take precedence as usual.
type callContext struct {
	context.Context
	gov         *governance
	inv         tool.Invocation
	validated   toolctx.Validated
	isValidated bool // false: the arguments were not validated as they are
	rep         reporter
	refusal     atomic.Pointer[approval.FileRefusal] // the last file the tool was refused
}

// Refused records a file refusal of approval.CheckFile (toolctx.RefusalSink).
func (c *callContext) Refused(err error) {
	if fr, ok := err.(*approval.FileRefusal); ok {
		c.refusal.Store(fr)
	}
}

// Value answers the keys callContext holds and passes the others on.
func (c *callContext) Value(key any) any {
	switch key.(type) {
	case governanceKey:
		return c.gov
	case toolctx.InvocationKey:
		return &c.inv
	case toolctx.RefusalKey:
		return toolctx.RefusalSink(c)
	case toolctx.ValidatedKey:
		if c.isValidated {
			return &c.validated
		}
	}
	return c.Context.Value(key)
}
