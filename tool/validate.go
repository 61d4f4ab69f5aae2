package tool

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tollgate-dev/tollgate/internal/argcheck"
	"github.com/tollgate-dev/tollgate/internal/toolctx"
)

// ErrInvalidArguments is wrapped by every error that says a call's
// arguments are not a JSON object, nest more than 100 levels deep, or do
// not match the tool's input schema (the toolkit's Validate returns one; a
// tool made by [New] gives the model an error result with the same text).
// Test with errors.Is.
var ErrInvalidArguments = argcheck.ErrInvalidArguments

// isValidated reports whether ctx says that args were validated against
// schema (the agent says so through internal/toolctx).
func isValidated(ctx context.Context, schema *jsonschema.Schema, args json.RawMessage) bool {
	v, ok := ctx.Value(toolctx.ValidatedKey{}).(*toolctx.Validated)
	return ok && v != nil && schema != nil && v.Schema == schema && len(args) > 0 && bytes.Equal(v.Args, args)
}
