package tool

import (
	"context"
	"encoding/json"
)

// Invocation identifies one tool call to the tool that runs it: which run, which
// call of which turn, and the answer to the call's earlier pending request, if
// this is the retry after one (seed 002: a pending(...) result "which wait_for /
// wait_for_ctx resolves"). The agent builds one for every execution.
type Invocation struct {
	// RunID is the ID of the run the call belongs to.
	RunID string
	// AgentID is the ID of the agent that runs the call.
	AgentID string
	// CallID is the model's ID of the tool call (unique within the run's turn).
	CallID string
	// Turn is the 1-based model turn that asked for the call.
	Turn int
	// Answer is the answer to the call's earlier pending request, or nil.
	Answer *Answer
}

// Invoker is implemented by a [Tool] that takes the call's identity as a typed
// value instead of reading it from the context: when a tool implements it, the
// agent calls Invoke rather than Call, with inv describing the call and args
// the validated arguments object. The same rules as for Call apply: an error
// or a panic becomes an error result the model sees.
type Invoker interface {
	Invoke(ctx context.Context, inv *Invocation, args json.RawMessage) (Result, error)
}

type invocationKey struct{}

// WithInvocation returns a context carrying inv, for code below a tool (a
// sub-agent, a helper) that has only the context. The agent sets it for the
// calls of tools that implement [Invoker] (other tools read the answer with
// [AnswerFrom]); [InvocationFrom] reads it.
func WithInvocation(ctx context.Context, inv Invocation) context.Context {
	return context.WithValue(ctx, invocationKey{}, inv)
}

// InvocationFrom returns the invocation carried by ctx, if ctx is a tool call's.
func InvocationFrom(ctx context.Context) (Invocation, bool) {
	inv, ok := ctx.Value(invocationKey{}).(Invocation)
	return inv, ok
}
