// Package toolctx holds the context keys under which package tool carries a
// tool call's run state, reporter and validated arguments, so that package
// agent can answer all of them from one context value per call (a context
// type of its own) instead of nesting one context.WithValue per key. Package
// tool's With* functions and readers use the same keys, so a value a tool
// puts in a derived context still takes precedence, as with nested values.
package toolctx

import (
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"
)

// RunKey is the key of the *hooks.RunInfo of the run a hook, an authorizer,
// a tool or a listener is called for (see internal/hookrun.WithRun).
type RunKey struct{}

// RunStateKey is the key of a call's *tool.RunState.
type RunStateKey struct{}

// ReporterKey is the key of a call's tool.Reporter.
type ReporterKey struct{}

// RefusalKey is the key of a call's RefusalSink.
type RefusalKey struct{}

// RefusalSink receives each refusal (an *approval.FileRefusal) that
// approval.CheckFile makes while a tool runs, so that the call's record can
// say who refused the file, rather than that the call was allowed.
type RefusalSink interface{ Refused(err error) }

// ValidatedKey is the key of a *Validated.
type ValidatedKey struct{}

// Validated says that Args (the very same bytes) were validated against
// Schema (the very same pointer); see tool.WithValidated.
type Validated struct {
	Schema *jsonschema.Schema
	Args   json.RawMessage
}
