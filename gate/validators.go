package gate

import (
	"log/slog"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tollgate-dev/tollgate/internal/argcheck"
	"github.com/tollgate-dev/tollgate/tool"
)

// Validators caches tools' argument validators (step 2 of seed 002's
// pipeline: a call's arguments checked against its tool's input schema):
// one entry per tool name, its schema resolved once and again only when
// the tool returns another schema (a new [tool.Spec].InputSchema; a schema
// is not changed in place). A tool whose schema does not resolve is
// validated as any JSON object, logged once per schema and cache (by the
// gate that first resolved it). Gates given one
// Validators ([Options].Validators) share it: a host that makes a gate
// for each run of one agent resolves each schema once, not once a run.
// The zero value is ready to use; it is safe for concurrent use.
type Validators struct {
	m sync.Map // tool name -> cachedValidator
}

// cachedValidator is a tool's validator and the schema it was built from.
type cachedValidator struct {
	schema *jsonschema.Schema
	v      *argcheck.Validator
}

// of returns the validator of t, resolving its schema when the cache has
// none for it; log receives the warning of a schema that does not resolve.
func (vs *Validators) of(t tool.Tool, log *slog.Logger) *argcheck.Validator {
	spec := t.Spec()
	if c, ok := vs.m.Load(spec.Name); ok && c.(cachedValidator).schema == spec.InputSchema {
		return c.(cachedValidator).v
	}
	v, err := argcheck.New(spec.InputSchema)
	if err != nil {
		log.Warn("tool has an invalid input schema; arguments are only checked to be an object", "tool", spec.Name, "error", err)
		v, _ = argcheck.New(nil)
	}
	vs.m.Store(spec.Name, cachedValidator{spec.InputSchema, v})
	return v
}
