// Package toolcall puts a tool call's [tool.Invocation] on a context, for
// the gate, the hosts and tests: package tool only reads it
// ([tool.InvocationFrom]). Each function leaves ctx as it is and returns a
// context whose invocation is a copy of ctx's (or a new one) with one field
// set, so that a value set for one call never reaches another.
package toolcall

import (
	"context"
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tollgate-dev/tollgate/internal/toolctx"
	"github.com/tollgate-dev/tollgate/tool"
)

// With returns ctx carrying inv (nil: no invocation).
func With(ctx context.Context, inv *tool.Invocation) context.Context {
	return context.WithValue(ctx, toolctx.InvocationKey{}, inv)
}

// copyOf returns a copy of ctx's invocation, or a new one.
func copyOf(ctx context.Context) *tool.Invocation {
	inv := tool.InvocationFrom(ctx)
	return &inv
}

// WithAnswer returns ctx whose invocation carries a, the answer to the
// call's earlier pending request: the gate sets it when it takes a call up
// again after an answer.
func WithAnswer(ctx context.Context, a tool.Answer) context.Context {
	inv := copyOf(ctx)
	inv.Answer = &a
	return With(ctx, inv)
}

// WithReporter returns ctx whose invocation reports to r.
func WithReporter(ctx context.Context, r tool.Reporter) context.Context {
	inv := copyOf(ctx)
	inv.Reporter = r
	return With(ctx, inv)
}

// WithState returns ctx whose invocation carries the run's storage s.
func WithState(ctx context.Context, s *tool.RunState) context.Context {
	inv := copyOf(ctx)
	inv.State = s
	return With(ctx, inv)
}

// Without returns ctx with no invocation: for work a call starts on its own
// behalf (a sub-agent), which must not mistake the call's answer, state or
// reporter for its own.
func Without(ctx context.Context) context.Context { return With(ctx, nil) }

// WithValidated returns ctx telling a tool made by tool.New that args (the
// same bytes) were validated against schema (the same pointer as the tool's
// Spec().InputSchema), so that it does not validate them a second time.
// Other arguments or another schema are validated as usual.
func WithValidated(ctx context.Context, schema *jsonschema.Schema, args json.RawMessage) context.Context {
	if schema == nil {
		return ctx
	}
	return context.WithValue(ctx, toolctx.ValidatedKey{}, &toolctx.Validated{Schema: schema, Args: args})
}
