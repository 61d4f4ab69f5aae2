package gate

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"time"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/argcheck"
	"github.com/tollgate-dev/tollgate/internal/ids"
	"github.com/tollgate-dev/tollgate/tool"
)

// Source says what kind of program asks for a call: tollgate's own agent
// loop, or an agent tollgate does not run, which runs the tool itself and
// reports the result.
type Source string

// Sources of calls.
const (
	// SourceAgent: tollgate's own agent loop (package agent).
	SourceAgent Source = "agent"
	// SourceClaudeCode: a Claude Code session, through its hooks.
	SourceClaudeCode Source = "claude-code"
	// SourceCodex: a Codex CLI session, through its hooks.
	SourceCodex Source = "codex"
	// SourceMCP: an MCP client, through the gateway.
	SourceMCP Source = "mcp"
)

// Call is one tool call asked of the gate. It is a value that serializes:
// a caller in another process sends it as JSON.
type Call struct {
	// ID is the call's ID (the model's, or one the caller made).
	ID string `json:"id"`
	// Name is the tool's name as the caller's policies know it.
	Name string `json:"name"`
	// Args are the arguments, a JSON object, as the model wrote them.
	Args json.RawMessage `json:"args"`
	// Turn is the 1-based model turn that asked for the call; 0 when the
	// caller does not count turns.
	Turn int `json:"turn,omitempty"`
	// RunID is the run, or the session of an agent tollgate does not run.
	RunID string `json:"runId,omitempty"`
	// AgentID names the agent that asks (listener events, records).
	AgentID string `json:"agentId,omitempty"`
	// Source is the kind of program that asks; empty means SourceAgent.
	Source Source `json:"source,omitempty"`
	// Principal is who asks: the run's owner, an agent token, an MCP
	// client's token.
	Principal tool.Principal `json:"principal,omitzero"`
	// Workspace is the directory the call works in, when there is one.
	Workspace string `json:"workspace,omitempty"`
	// CutOff says the model's output limit cut the call off before its
	// arguments were complete: it never runs.
	CutOff bool `json:"cutOff,omitempty"`
}

// Options configures a [Gate]. Every field is optional.
type Options struct {
	// Hooks are the lifecycle hooks of seed 002 (BeforeTool, Permission,
	// Pending, AfterTool); nil means none.
	Hooks *hooks.Hooks
	// Authorizers decide allow, ask or deny for every call that reaches
	// step 4, combined with the hooks' votes as deny > ask > allow. None
	// means allow.
	Authorizers []approval.Authorizer
	// Listener returns the tool call listener (seed 000's PRE_TOOL_USE,
	// POST_TOOL_USE, ON_ERROR) at the time of a call; nil or a nil result
	// means none.
	Listener func() hooks.ToolCallListener
	// ApprovalTTL, if positive, sets ExpiresAt on the requests the gate makes.
	ApprovalTTL time.Duration
	// MaxResultBytes returns the cap of a tool's results in bytes (0 or
	// negative: none); nil means none.
	MaxResultBytes func(tool string) int
	// OnRecord, if set, receives every record as it is made, on the
	// goroutine of the call. A panic in it is logged.
	OnRecord func(ctx context.Context, rec Record)
	// Logger receives decisions (never argument values or outputs);
	// default discards.
	Logger *slog.Logger
	// Now returns the current time (default time.Now).
	Now func() time.Time
	// NewID returns a new unique ID starting with prefix ("req_"); the
	// default is the prefix and 16 random hex digits.
	NewID func(prefix string) string
	// Validators caches the tools' argument validators; gates given the
	// same one resolve each tool's input schema once between them. nil:
	// the gate keeps its own.
	Validators *Validators
}

// Gate decides and completes tool calls for any caller: the agent loop, the
// durable engine, and agents tollgate does not run. Decide is the pipeline's
// steps 1 to 4 (resolve, validate, BeforeTool, authorize, ask); Complete is
// steps 5 to 9 (listener, the tool or a result the caller reports,
// AfterTool, the cap, the record). A Gate is safe for concurrent calls.
type Gate struct {
	opts Options
}

// New returns a gate with opts (copied; nil means all defaults: no hooks, no
// authorizers, so every valid call is allowed), defaults filled in.
func New(o *Options) *Gate {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Hooks == nil {
		opts.Hooks = &hooks.Hooks{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.NewID == nil {
		opts.NewID = ids.New
	}
	if opts.Validators == nil {
		opts.Validators = &Validators{}
	}
	return &Gate{opts: opts}
}

// Tools resolves the tools a call may name.
type Tools interface {
	// Tool returns the tool called name.
	Tool(name string) (tool.Tool, bool)
	// Names lists every tool's name, sorted, for the error a call with an
	// unknown name gets.
	Names() []string
}

// Observer hears what happens to a call, in order: its decision, then a
// pending request or its record. Its methods are called on the call's
// goroutine.
type Observer interface {
	// Decided is called once the call's fate is known: before the tool
	// runs, before a request is emitted, or before a record of a call
	// that did not run.
	Decided(c *Call, d Decision)
	// Pending is called with a request the call now waits on.
	Pending(c *Call, req tool.Request)
	// Recorded is called with the call's record.
	Recorded(c *Call, rec *Record)
}

// Env is what the caller lends the gate for one call.
type Env struct {
	// Tools resolves the call's tool. Required by Decide.
	Tools Tools
	// Authorizers are heard after the gate's own (a parent agent's, for a
	// sub-agent).
	Authorizers []approval.Authorizer
	// Observer hears the call's decision, request and record; nil: none.
	Observer Observer
	// ClaimID returns a request ID that no other request of the run has
	// had, given the one proposed; nil keeps the proposal.
	ClaimID func(id, callID string) string
}

// Ruling is where a step of the gate left a call: exactly one of Allowed
// (run it, then [Gate.Complete]), Record (the call ended), Pending (it
// waits for an answer), or Err (a hook failed or the context ended: the
// caller's run fails). A Record may come with an Err (the tool ran, an
// AfterTool hook failed).
type Ruling struct {
	Allowed *Allowed
	Record  *Record
	Pending *Pending
	Err     error
}

// Allowed is a call the gate decided to run, with what [Gate.Complete]
// needs to finish it. It serializes: a host governing an agent tollgate does
// not run keeps it while that agent runs the tool. It is the gate's own
// state: keep it where the agent cannot change it (the agent reports only
// the result).
type Allowed struct {
	Call Call `json:"call"`
	// Args are the arguments the tool runs with: the call's, as rewritten by
	// BeforeTool hooks or edited by the answer, and validated against the
	// tool's input schema.
	Args json.RawMessage `json:"args"`
	// Record is the call's record so far: the requested and final
	// arguments, the decision, the start. [Gate.Complete] finishes it.
	Record *Record `json:"record"`
	// Context holds the BeforeTool hooks' notes, appended to the result.
	Context []string `json:"context,omitempty"`
	// Answer is the answer that approved the call, if any.
	Answer *tool.Answer `json:"answer,omitempty"`
	// Retried is true when Answer answers the tool's own request: the tool
	// started once and asked, and now runs again with the answer. The
	// listener sees it as [hooks.ToolUse].Retried.
	Retried bool `json:"retried,omitempty"`
	// Approved is the approval of a request the call was allowed with, if
	// any: the tool's own request while it runs carries it ([Pending]).
	Approved *Approval `json:"approved,omitempty"`
}

// validator returns t's validator from the gate's [Validators].
func (g *Gate) validator(t tool.Tool) *argcheck.Validator {
	return g.opts.Validators.of(t, g.opts.Logger)
}
