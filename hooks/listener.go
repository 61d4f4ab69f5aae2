package hooks

import (
	"context"
	"encoding/json"
	"time"
)

// ToolUse describes one tool call to a [ToolCallListener]: the context of seed
// 000's PRE_TOOL_USE, POST_TOOL_USE and ON_ERROR events.
type ToolUse struct {
	// Tool is the tool's name.
	Tool string
	// Args are the arguments the tool runs with (after rewrites and approvals).
	Args json.RawMessage
	// CallID is the tool call ID.
	CallID string
	// Turn is the model turn, from 1.
	Turn int
	// AgentID names the agent running the call.
	AgentID string
	// RunID names the run.
	RunID string

	// The fields below are set for PostToolUse and OnError only.

	// Latency is how long the tool ran.
	Latency time.Duration
	// Success is false when the tool returned an error result, an error, or panicked.
	Success bool
	// Error is the error text when Success is false.
	Error string
	// OutputSize is the length of the tool's output in bytes.
	OutputSize int
	// Pending is true on the PostToolUse of a call whose tool asked for an
	// answer instead of returning a result: not a success and not a failure
	// (Success is false, OnError does not follow). The call's PreToolUse and
	// PostToolUse fire again when it is retried with the answer. It is there
	// so that a listener that times calls or tracks those in flight can pair
	// every PreToolUse; seed 000's POST_TOOL_USE hooks (hooks/declarative)
	// do not fire for it, since the call has not run to a result.
	Pending bool
	// Retried is true on the PreToolUse, PostToolUse and OnError of that
	// retry: the tool runs again with the answer to the request it made
	// when it first started, whose PreToolUse was told of the start then
	// (in this process or, for a halted run, in the one that ran it).
	// Seed 000's PRE_TOOL_USE hooks do not fire again for it, so that a
	// call is seen to start once.
	Retried bool
}

// ToolCallListener is the agent's one tool call listener (seed 000: "An agent has
// one listener"). The agent calls it synchronously on the goroutine that runs the
// tool, only for calls that really run: PreToolUse just before execution,
// PostToolUse just after, then OnError when the call failed. A call that is
// denied, short-circuited or invalid never reaches the listener. The listener
// cannot veto or change anything; implementations must be safe for concurrent use.
// Every PreToolUse is followed by exactly one PostToolUse.
type ToolCallListener interface {
	PreToolUse(ctx context.Context, u *ToolUse)
	PostToolUse(ctx context.Context, u *ToolUse)
	OnError(ctx context.Context, u *ToolUse)
}
