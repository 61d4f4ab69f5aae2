package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"

	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// Stage names one of the four lifecycle stages of seed 002.
type Stage string

// The lifecycle stages.
const (
	StageBeforeLLM  Stage = "before_llm"
	StageAfterLLM   Stage = "after_llm"
	StageBeforeTool Stage = "before_tool"
	StageAfterTool  Stage = "after_tool"
)

// BeforeLLMEvent is passed to BeforeLLM hooks (seed 002 BeforeLlmEvent).
type BeforeLLMEvent struct {
	// Messages is the transcript about to be sent (a copy: edit it and return it
	// in LLMOverride.Messages to change what is sent).
	Messages []model.Message
	// Tools is what the model will be offered.
	Tools []model.ToolDef
	// Model is the model ID about to be called.
	Model string
	// Turn counts model calls in this run, from 1.
	Turn int
}

// LLMOverride is returned by a BeforeLLM hook (seed 002 LlmOverride). Each set
// field replaces that value; a nil *LLMOverride changes nothing.
type LLMOverride struct {
	// Messages, when non-nil, replaces the messages sent for this turn (the run's
	// transcript itself is not rewritten).
	Messages []model.Message
	// Tools, when non-nil, replaces the tools offered (an empty non-nil slice
	// offers none).
	Tools []model.ToolDef
	// Model, when non-empty, replaces the model ID.
	Model string
	// Response, when non-nil, is used as the model's response: the model is not
	// called at all for this turn, and the chain ends here.
	Response *model.Response
}

// AfterLLMEvent is passed to AfterLLM hooks (seed 002 AfterLlmEvent).
type AfterLLMEvent struct {
	// Response is the decoded response, with usage; Response.Raw holds the
	// provider's own payload (on streaming runs too). Treat it as read-only.
	Response *model.Response
	Model    string
	Turn     int
}

// BeforeToolEvent is passed to BeforeTool hooks (seed 002 BeforeToolEvent).
type BeforeToolEvent struct {
	// Name is the tool's name.
	Name string
	// Args is a private copy of the arguments as rewritten so far.
	Args json.RawMessage
	// ID is the tool call ID.
	ID string
	// Turn is the model turn that asked for the call, from 1.
	Turn int
	// Hints are the tool's hints, nil when unknown (treat as mutating).
	Hints *tool.Hints
	// Answer is set when the call is retried after a pending request it raised
	// was answered (see tool.AnswerFrom for the same value from the context).
	// A gate need not check it: an approved hook's ask is satisfied on the
	// retry (see [Hooks.RunBeforeToolApproved]).
	Answer *tool.Answer
}

// AfterToolEvent is passed to AfterTool hooks (seed 002 AfterToolEvent).
type AfterToolEvent struct {
	Name string
	// Args are the arguments the tool ran with (a copy).
	Args json.RawMessage
	// Result is the result as replaced so far (a copy).
	Result tool.Result
	ID     string
	Turn   int
}

// ToolOverride is returned by BeforeTool and AfterTool hooks (seed 002
// ToolOverride). A nil *ToolOverride means no opinion.
//
// In BeforeTool: Result short-circuits (the real tool never runs; use
// tool.Pending for an approval), else Args rewrites the call, else Allow records
// an explicit allow. In AfterTool: Result replaces the result; Args and Allow are
// ignored.
type ToolOverride struct {
	// Result short-circuits (BeforeTool) or replaces the result (AfterTool).
	Result *tool.Result
	// Args rewrites the call's arguments (BeforeTool only); must be a JSON object.
	// Rewritten arguments are validated against the tool's schema again.
	Args json.RawMessage
	// Allow records that this hook allows the call. It is a vote, not a bypass:
	// the authorization step still runs, and deny > ask > allow.
	Allow bool
	// Reason explains the decision for the record.
	Reason string
	// Context, if not empty, is text for the model about this call
	// (BeforeTool only): it is appended to the call's result, whatever the
	// result turns out to be (the tool's output, a denial, a short-circuit),
	// after a blank line. Claude Code's PreToolUse additionalContext maps
	// here. It is not a vote and changes no decision.
	Context string
}

// Deny returns the override that short-circuits a call with an error result
// carrying reason: the model sees reason and the run continues.
func Deny(reason string) *ToolOverride {
	r := tool.Error(reason)
	return &ToolOverride{Result: &r, Reason: reason}
}

// Ask returns the override that suspends a call on a pending request (seed 002:
// "ask = a pending(...) result").
func Ask(req tool.Request) *ToolOverride {
	r := tool.Pending(req)
	return &ToolOverride{Result: &r, Reason: req.Prompt}
}

// Allow returns an explicit allow vote with a reason (see ToolOverride.Allow).
func Allow(reason string) *ToolOverride { return &ToolOverride{Allow: true, Reason: reason} }

// Rewrite returns the override that replaces the call's arguments.
func Rewrite(args json.RawMessage) *ToolOverride { return &ToolOverride{Args: args} }

// Replace returns the AfterTool override that replaces the result.
func Replace(r tool.Result) *ToolOverride { return &ToolOverride{Result: &r} }

// The hook function types. Each takes ctx first and may be called concurrently.
type (
	// BeforeLLMFunc may replace messages, tools and model, or supply a response.
	BeforeLLMFunc func(ctx context.Context, ev *BeforeLLMEvent) (*LLMOverride, error)
	// AfterLLMFunc observes a model response.
	AfterLLMFunc func(ctx context.Context, ev *AfterLLMEvent) error
	// BeforeToolFunc may rewrite, short-circuit or suspend a tool call.
	BeforeToolFunc func(ctx context.Context, ev *BeforeToolEvent) (*ToolOverride, error)
	// AfterToolFunc may replace a tool result.
	AfterToolFunc func(ctx context.Context, ev *AfterToolEvent) (*ToolOverride, error)
)

type named[F any] struct {
	name string
	fn   F
}

// Hooks holds the chains of the four stages. The zero value has no hooks and is
// ready to use. Register hooks before the run starts; a Hooks may then be shared
// by several agents and runs. Names appear in decision records and errors; an
// empty name becomes "<stage>#<n>" (n from 1 in registration order).
type Hooks struct {
	beforeLLM    []named[BeforeLLMFunc]
	afterLLM     []named[AfterLLMFunc]
	beforeTool   []named[BeforeToolFunc]
	afterTool    []named[AfterToolFunc]
	permission   []named[PermissionFunc]
	stop         []named[StopFunc]
	subagentStop []named[SubagentStopFunc]
	start        []named[StartFunc]
	end          []named[EndFunc]
	pending      []named[PendingFunc]
}

func defName(s Stage, name string, n int) string {
	if name != "" {
		return name
	}
	return string(s) + "#" + strconv.Itoa(n)
}

// BeforeLLM appends a BeforeLLM hook and returns h for chaining.
func (h *Hooks) BeforeLLM(name string, fn BeforeLLMFunc) *Hooks {
	h.beforeLLM = append(h.beforeLLM, named[BeforeLLMFunc]{defName(StageBeforeLLM, name, len(h.beforeLLM)+1), fn})
	return h
}

// AfterLLM appends an AfterLLM hook and returns h for chaining.
func (h *Hooks) AfterLLM(name string, fn AfterLLMFunc) *Hooks {
	h.afterLLM = append(h.afterLLM, named[AfterLLMFunc]{defName(StageAfterLLM, name, len(h.afterLLM)+1), fn})
	return h
}

// BeforeTool appends a BeforeTool hook and returns h for chaining.
func (h *Hooks) BeforeTool(name string, fn BeforeToolFunc) *Hooks {
	h.beforeTool = append(h.beforeTool, named[BeforeToolFunc]{defName(StageBeforeTool, name, len(h.beforeTool)+1), fn})
	return h
}

// AfterTool appends an AfterTool hook and returns h for chaining.
func (h *Hooks) AfterTool(name string, fn AfterToolFunc) *Hooks {
	h.afterTool = append(h.afterTool, named[AfterToolFunc]{defName(StageAfterTool, name, len(h.afterTool)+1), fn})
	return h
}

// Merge appends every hook of o to h, stage by stage, after h's own, and returns h.
func (h *Hooks) Merge(o *Hooks) *Hooks {
	if o == nil {
		return h
	}
	h.beforeLLM = append(h.beforeLLM, o.beforeLLM...)
	h.afterLLM = append(h.afterLLM, o.afterLLM...)
	h.beforeTool = append(h.beforeTool, o.beforeTool...)
	h.afterTool = append(h.afterTool, o.afterTool...)
	h.permission = append(h.permission, o.permission...)
	h.stop = append(h.stop, o.stop...)
	h.subagentStop = append(h.subagentStop, o.subagentStop...)
	h.start = append(h.start, o.start...)
	h.end = append(h.end, o.end...)
	h.pending = append(h.pending, o.pending...)
	return h
}

// Len returns the number of hooks registered for stage s.
func (h *Hooks) Len(s Stage) int {
	if h == nil {
		return 0
	}
	switch s {
	case StageBeforeLLM:
		return len(h.beforeLLM)
	case StageAfterLLM:
		return len(h.afterLLM)
	case StageBeforeTool:
		return len(h.beforeTool)
	case StageAfterTool:
		return len(h.afterTool)
	case StagePermission:
		return len(h.permission)
	case StageStop:
		return len(h.stop)
	case StageSubagentStop:
		return len(h.subagentStop)
	case StageStart:
		return len(h.start)
	case StageEnd:
		return len(h.end)
	case StagePending:
		return len(h.pending)
	}
	return 0
}

// Error is the error a run fails with when a hook returns an error or panics
// (seed 002: "an Err fails the run with ClientError::Hook"). Test for it with
// errors.As.
type Error struct {
	// Stage is the stage of the failing hook.
	Stage Stage
	// Hook is the failing hook's name.
	Hook string
	// Err is the hook's error; nil when it panicked.
	Err error
	// Panic is the recovered panic value, if the hook panicked.
	Panic any
	// Stack is the goroutine stack at the panic, if the hook panicked.
	Stack string
}

// Error says which stage and hook failed, and how: `before_tool hook "x"
// failed: <err>` or `... panicked: <value>`.
func (e *Error) Error() string {
	if e.Panic != nil {
		return fmt.Sprintf("%s hook %q panicked: %v", e.Stage, e.Hook, e.Panic)
	}
	return fmt.Sprintf("%s hook %q failed: %v", e.Stage, e.Hook, e.Err)
}

// Unwrap returns the hook's own error.
func (e *Error) Unwrap() error { return e.Err }

// call runs fn, turning an error or a panic into *Error.
func call[T any](stage Stage, name string, fn func() (T, error)) (out T, err error) {
	defer func() {
		if p := recover(); p != nil {
			var zero T
			out, err = zero, &Error{Stage: stage, Hook: name, Panic: p, Stack: string(debug.Stack())}
		}
	}()
	out, err = fn()
	if err != nil {
		err = &Error{Stage: stage, Hook: name, Err: err}
	}
	return out, err
}

// LLMOutcome is the combined effect of a BeforeLLM chain.
type LLMOutcome struct {
	Messages []model.Message
	Tools    []model.ToolDef
	Model    string
	// Response, when non-nil, is a canned response: do not call the model.
	Response *model.Response
	// By names the hook that supplied Response.
	By string
}

// RunBeforeLLM runs the BeforeLLM chain on ev and returns the messages, tools and
// model to use, each as replaced by the hooks in order, or a canned response.
// ev is not modified. The error is an [*Error].
func (h *Hooks) RunBeforeLLM(ctx context.Context, ev BeforeLLMEvent) (LLMOutcome, error) {
	out := LLMOutcome{Messages: ev.Messages, Tools: ev.Tools, Model: ev.Model}
	if h == nil {
		return out, nil
	}
	evs := make([]BeforeLLMEvent, len(h.beforeLLM)) // every hook's event in one allocation
	for i, hk := range h.beforeLLM {
		e := &evs[i]
		*e = BeforeLLMEvent{Messages: cloneMessages(out.Messages), Tools: cloneTools(out.Tools), Model: out.Model, Turn: ev.Turn}
		ov, err := call(StageBeforeLLM, hk.name, func() (*LLMOverride, error) { return hk.fn(ctx, e) })
		if err != nil {
			return out, err
		}
		if ov == nil {
			continue
		}
		if ov.Messages != nil {
			out.Messages = ov.Messages
		}
		if ov.Tools != nil {
			out.Tools = ov.Tools
		}
		if ov.Model != "" {
			out.Model = ov.Model
		}
		if ov.Response != nil {
			out.Response, out.By = ov.Response, hk.name
			return out, nil
		}
	}
	return out, nil
}

// cloneMessages copies msgs deeply enough that a hook can change anything in
// the copy (tool calls and their arguments included) without touching the
// run's transcript. The tool calls of every message share one allocation,
// and their arguments another; each slice's capacity ends at its length, so
// appending to one never reaches the next.
func cloneMessages(msgs []model.Message) []model.Message {
	out := slices.Clone(msgs)
	ncalls, nbytes := 0, 0
	for _, m := range msgs {
		ncalls += len(m.ToolCalls)
		for _, c := range m.ToolCalls {
			nbytes += len(c.Arguments)
		}
	}
	if ncalls == 0 {
		return out
	}
	calls := make([]model.ToolCall, 0, ncalls)
	args := make(arena, 0, nbytes)
	for i := range out {
		if out[i].ToolCalls != nil {
			start := len(calls)
			calls = append(calls, out[i].ToolCalls...)
			out[i].ToolCalls = calls[start:len(calls):len(calls)]
			for j := range out[i].ToolCalls {
				out[i].ToolCalls[j].Arguments = args.clone(out[i].ToolCalls[j].Arguments)
			}
		}
	}
	return out
}

// cloneTools copies tools down to their schema bytes (in one allocation, as
// cloneMessages does).
func cloneTools(tools []model.ToolDef) []model.ToolDef {
	out := slices.Clone(tools)
	n := 0
	for _, t := range tools {
		n += len(t.InputSchema)
	}
	schemas := make(arena, 0, n)
	for i := range out {
		out[i].InputSchema = schemas.clone(out[i].InputSchema)
	}
	return out
}

// arena hands out copies of byte slices from one allocation; each copy's
// capacity ends at its length, so that appending to one copy never writes
// into another. Beyond its capacity it allocates each copy on its own.
type arena []byte

// clone returns a copy of b (nil for nil).
func (a *arena) clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	if len(*a)+len(b) > cap(*a) {
		return slices.Clone(b)
	}
	start := len(*a)
	*a = append(*a, b...)
	return (*a)[start:len(*a):len(*a)]
}

// RunAfterLLM runs every AfterLLM hook in order. The first error stops the
// chain and is returned as an [*Error].
func (h *Hooks) RunAfterLLM(ctx context.Context, ev AfterLLMEvent) error {
	if h == nil {
		return nil
	}
	evs := make([]AfterLLMEvent, len(h.afterLLM)) // every hook's event in one allocation
	for i, hk := range h.afterLLM {
		e := &evs[i]
		*e = ev
		if _, err := call(StageAfterLLM, hk.name, func() (struct{}, error) { return struct{}{}, hk.fn(ctx, e) }); err != nil {
			return err
		}
	}
	return nil
}

// ToolOutcome is the combined effect of a BeforeTool chain.
type ToolOutcome struct {
	// Args are the arguments after every rewrite (the input when none).
	Args json.RawMessage
	// Rewritten reports whether any hook rewrote the arguments.
	Rewritten bool
	// Result, when non-nil, short-circuits the call (it may be a pending request).
	Result *tool.Result
	// By names the hook that short-circuited.
	By string
	// Votes lists every hook that expressed an opinion, in order: Source is
	// the hook ({"kind": "hook", "name": <name>}), Decision is allow,
	// rewrite, deny (an error result), result (a successful short-circuit)
	// or ask (a pending request).
	Votes []tool.Vote
	// Context holds the non-empty [ToolOverride].Context texts of the hooks
	// that ran, in order.
	Context []string
}

// RunBeforeTool runs the BeforeTool chain on ev. Each hook receives a fresh copy
// of the arguments as rewritten so far; the first hook that returns a Result ends
// the chain. ev is not modified. The error is an [*Error].
func (h *Hooks) RunBeforeTool(ctx context.Context, ev BeforeToolEvent) (ToolOutcome, error) {
	return h.RunBeforeToolApproved(ctx, ev, nil)
}

// RunBeforeToolApproved is [Hooks.RunBeforeTool] for the retry of a call after
// an approval: a pending request that a hook asks is resolved by the answer
// (seed 002: "ask = a pending(...) result, which wait_for / wait_for_ctx
// resolves"), so the hook is not asked to know about answers.
//
// When a hook returns a pending request and approved(hook, args) reports true
// for its name and the arguments it was shown, its ask is satisfied: it is kept
// as an "ask" vote and the chain goes on to the next hook as if the hook had
// had no opinion. Every other hook is heard as on any call, so a later denial
// or rewrite still counts. approved decides which approval covers which
// arguments (package agent compares the digest of the arguments the request was
// raised for); a nil approved satisfies nothing.
func (h *Hooks) RunBeforeToolApproved(ctx context.Context, ev BeforeToolEvent, approved func(hook string, args json.RawMessage) bool) (ToolOutcome, error) {
	out := ToolOutcome{Args: ev.Args}
	if h == nil {
		return out, nil
	}
	// Every hook's event, hints and copy of the arguments, in one
	// allocation each (the arguments' copies may outgrow theirs after a
	// rewrite).
	n := len(h.beforeTool)
	evs := make([]BeforeToolEvent, n)
	var hints []tool.Hints
	if ev.Hints != nil {
		hints = make([]tool.Hints, n)
	}
	args := make(arena, 0, n*len(ev.Args))
	for i, hk := range h.beforeTool {
		e := &evs[i]
		*e = ev
		e.Args = args.clone(out.Args)
		if ev.Hints != nil {
			hints[i] = *ev.Hints
			e.Hints = &hints[i]
		}
		if ev.Answer != nil {
			ac := *ev.Answer
			e.Answer = &ac
		}
		ov, err := call(StageBeforeTool, hk.name, func() (*ToolOverride, error) { return hk.fn(ctx, e) })
		if err != nil {
			return out, err
		}
		if ov == nil {
			continue
		}
		if ov.Context != "" {
			out.Context = append(out.Context, ov.Context)
		}
		if ov.Result != nil {
			r := ov.Result.Clone()
			if r.Pending != nil && approved != nil && approved(hk.name, slices.Clone(out.Args)) {
				out.Votes = append(out.Votes, tool.Vote{Source: hookPrincipal(hk.name), Decision: tool.VoteAsk, Reason: orPrompt(ov.Reason, r.Pending)})
				continue
			}
			out.Result, out.By = &r, hk.name
			d := tool.VoteResult
			switch {
			case r.Pending != nil:
				d = tool.VoteAsk
			case r.IsError:
				d = tool.VoteDeny
			}
			reason := ov.Reason
			if reason == "" {
				if r.Pending != nil {
					reason = r.Pending.Prompt
				} else {
					reason = r.Output
				}
			}
			out.Votes = append(out.Votes, tool.Vote{Source: hookPrincipal(hk.name), Decision: d, Reason: reason})
			return out, nil
		}
		if ov.Args != nil {
			out.Args = slices.Clone(ov.Args)
			out.Rewritten = true
			out.Votes = append(out.Votes, tool.Vote{Source: hookPrincipal(hk.name), Decision: tool.VoteRewrite, Reason: ov.Reason})
		}
		if ov.Allow {
			out.Votes = append(out.Votes, tool.Vote{Source: hookPrincipal(hk.name), Decision: tool.VoteAllow, Reason: ov.Reason})
		}
	}
	return out, nil
}

// hookPrincipal is the principal a hook votes and answers as.
func hookPrincipal(name string) tool.Principal {
	return tool.Principal{Kind: tool.PrincipalHook, Name: name}
}

// orPrompt is reason, or the request's prompt when reason is empty.
func orPrompt(reason string, req *tool.Request) string {
	if reason == "" {
		return req.Prompt
	}
	return reason
}

// RunAfterTool runs the AfterTool chain: each hook sees the result as replaced by
// the ones before it. It returns the final result and the names of the hooks
// that replaced it, in order. ev is not modified. The error is an [*Error].
func (h *Hooks) RunAfterTool(ctx context.Context, ev AfterToolEvent) (tool.Result, []string, error) {
	res := ev.Result
	if h == nil {
		return res, nil, nil
	}
	var by []string
	evs := make([]AfterToolEvent, len(h.afterTool)) // every hook's event and arguments in one allocation each
	args := make(arena, 0, len(h.afterTool)*len(ev.Args))
	for i, hk := range h.afterTool {
		e := &evs[i]
		*e = ev
		e.Args = args.clone(ev.Args)
		e.Result = res.Clone()
		ov, err := call(StageAfterTool, hk.name, func() (*ToolOverride, error) { return hk.fn(ctx, e) })
		if err != nil {
			return res, by, err
		}
		if ov != nil && ov.Result != nil {
			res = ov.Result.Clone()
			by = append(by, hk.name)
		}
	}
	return res, by, nil
}
