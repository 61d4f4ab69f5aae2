package hooks

import (
	"context"
	"encoding/json"
	"fmt"
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
	// was answered (a tool sees the same value as its [tool.Invocation].Answer).
	// A gate need not check it: an approved hook's ask is satisfied on the
	// retry.
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

// Hook is one registered hook: its name (the stage and a number when it was
// registered without one) and its function, of the stage's function type
// (a [BeforeToolFunc] in the BeforeTool chain, and so on).
type Hook struct {
	Name string
	Func any
}

// stages lists the stages in the order of Hooks.chains.
var stages = [...]Stage{StageBeforeLLM, StageAfterLLM, StageBeforeTool, StageAfterTool, StagePermission,
	StageStop, StageSubagentStop, StageStart, StageEnd, StagePending}

// Hooks holds the chains of the stages. The zero value has no hooks and is
// ready to use. Register hooks before the run starts; a Hooks may then be shared
// by several agents and runs. Names appear in decision records and errors; an
// empty name becomes "<stage>#<n>" (n from 1 in registration order).
type Hooks struct {
	chains [len(stages)][]Hook
}

// index is the position of s in stages, or -1 for an unknown stage.
func index(s Stage) int {
	for i, t := range stages {
		if t == s {
			return i
		}
	}
	return -1
}

// add appends fn to the chain of stage s under name (or "<stage>#<n>").
func (h *Hooks) add(s Stage, name string, fn any) *Hooks {
	c := &h.chains[index(s)]
	if name == "" {
		name = string(s) + "#" + strconv.Itoa(len(*c)+1)
	}
	*c = append(*c, Hook{Name: name, Func: fn})
	return h
}

// Chain returns the hooks registered for stage s, in the order they run
// (nil for none, for an unknown stage, and for a nil h). The slice is h's
// own: read it, do not change it.
func (h *Hooks) Chain(s Stage) []Hook {
	i := index(s)
	if h == nil || i < 0 {
		return nil
	}
	return h.chains[i]
}

// BeforeLLM appends a BeforeLLM hook and returns h for chaining.
func (h *Hooks) BeforeLLM(name string, fn BeforeLLMFunc) *Hooks {
	return h.add(StageBeforeLLM, name, fn)
}

// AfterLLM appends an AfterLLM hook and returns h for chaining.
func (h *Hooks) AfterLLM(name string, fn AfterLLMFunc) *Hooks {
	return h.add(StageAfterLLM, name, fn)
}

// BeforeTool appends a BeforeTool hook and returns h for chaining.
func (h *Hooks) BeforeTool(name string, fn BeforeToolFunc) *Hooks {
	return h.add(StageBeforeTool, name, fn)
}

// AfterTool appends an AfterTool hook and returns h for chaining.
func (h *Hooks) AfterTool(name string, fn AfterToolFunc) *Hooks {
	return h.add(StageAfterTool, name, fn)
}

// Merge appends every hook of o to h, stage by stage, after h's own, and returns h.
func (h *Hooks) Merge(o *Hooks) *Hooks {
	if o == nil {
		return h
	}
	for i := range h.chains {
		h.chains[i] = append(h.chains[i], o.chains[i]...)
	}
	return h
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
