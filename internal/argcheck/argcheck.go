// Package argcheck checks a tool call's arguments: a JSON object, nested
// at most [MaxDepth] deep, valid against the tool's input schema. Package
// tool's tools, the gate, the toolkit, the MCP adapter and the approvals
// inbox check arguments with it.
package argcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tollgate-dev/tollgate/internal/jsondecode"
)

// Validator checks call arguments against a tool's input schema.
// It is safe for concurrent use.
type Validator struct {
	resolved *jsonschema.Resolved
}

// New resolves schema once for repeated validation. A nil schema accepts
// any JSON object. It returns an error when the schema itself is invalid.
func New(schema *jsonschema.Schema) (*Validator, error) {
	if schema == nil {
		return &Validator{}, nil
	}
	r, err := schema.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("invalid input schema: %w", err)
	}
	return &Validator{resolved: r}, nil
}

// MaxDepth is how deep a call's arguments may nest (objects and
// arrays, the arguments object itself the first level). Deeper arguments
// are invalid: no tool needs them, and every record, transcript and store
// that keeps them must be able to read them back (the stores refuse
// documents nested 1,000 deep).
const MaxDepth = 100

// TooDeep reports whether the JSON text args nests objects and arrays more
// than [MaxDepth] levels deep. It does not check that args is
// JSON.
func TooDeep(args []byte) bool {
	depth := 0
	inString, escaped := false, false
	for _, c := range args {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > MaxDepth {
				return true
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return false
}

// ErrInvalidArguments is wrapped by every error [Validator.Validate] returns.
var ErrInvalidArguments = errors.New("invalid arguments")

// Validate checks that args is a JSON object (empty or null counts as {}),
// nested at most [MaxDepth] deep, that satisfies the schema. The
// error wraps [ErrInvalidArguments] and lists what is wrong.
func (v *Validator) Validate(args json.RawMessage) error {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		trimmed = []byte("{}")
	}
	if TooDeep(trimmed) {
		return fmt.Errorf("%w: nested deeper than %d levels", ErrInvalidArguments, MaxDepth)
	}
	var inst any
	if err := jsondecode.Unmarshal(trimmed, &inst); err != nil {
		return fmt.Errorf("%w: not valid JSON: %v", ErrInvalidArguments, err)
	}
	if _, ok := inst.(map[string]any); !ok {
		return fmt.Errorf("%w: arguments must be a JSON object, got %s", ErrInvalidArguments, jsonKind(inst))
	}
	if v == nil || v.resolved == nil {
		return nil
	}
	if err := v.resolved.Validate(inst); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidArguments, err)
	}
	return nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}
