// Package toolctx holds the context keys under which a tool call carries its
// *tool.Invocation, the file refusals it collects, whether its arguments
// were validated, and the *hooks.RunInfo of its run, so that package agent
// can answer all of them from one context value per call (a context type of
// its own) instead of nesting one context.WithValue per key. Package
// internal/toolcall sets them for the gate and the hosts; package tool reads
// them.
package toolctx

import (
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"
)

// RunKey is the key of the *hooks.RunInfo of the run a hook, an authorizer,
// a tool or a listener is called for (see internal/hookrun.WithRun).
type RunKey struct{}

// InvocationKey is the key of a call's *tool.Invocation.
type InvocationKey struct{}

// RefusalKey is the key of a call's RefusalSink.
type RefusalKey struct{}

// RefusalSink receives each refusal (an *approval.FileRefusal) that
// approval.CheckFile makes while a tool runs, so that the call's record can
// say who refused the file, rather than that the call was allowed.
type RefusalSink interface{ Refused(err error) }

// ValidatedKey is the key of a *Validated.
type ValidatedKey struct{}

// Validated says that Args (the very same bytes) were validated against
// Schema (the very same pointer), so that a tool made by tool.New need not
// validate them again.
type Validated struct {
	Schema *jsonschema.Schema
	Args   json.RawMessage
}
