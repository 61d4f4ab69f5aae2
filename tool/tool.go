package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// MaxNameLen is the longest tool name accepted by the model providers tollgate
// speaks to (OpenAI and Anthropic both cap function names at 64 characters).
const MaxNameLen = 64

// Hints are advisory facts about a tool's effects, as in seed 002 ("read_only,
// destructive, open_world") and the MCP specification's tool annotations
// (readOnlyHint, destructiveHint, idempotentHint, openWorldHint).
//
// Hints are never sent to the model. A tool with nil hints is unknown and must be
// treated as mutating by every gate.
type Hints struct {
	// ReadOnly: the tool does not modify its environment.
	ReadOnly bool `json:"readOnly"`
	// Destructive: the tool may delete or overwrite data (meaningful when !ReadOnly).
	Destructive bool `json:"destructive"`
	// Idempotent: calling it again with the same arguments has no further effect.
	Idempotent bool `json:"idempotent"`
	// OpenWorld: the tool reaches outside the local system (network, other users).
	OpenWorld bool `json:"openWorld"`
}

// String renders the hints as a short list such as "read-only" or
// "destructive,open-world"; nil hints render as "unknown". Destructive is not
// shown for a read-only tool, where it means nothing (the MCP specification:
// destructiveHint is meaningful only when readOnlyHint is false).
func (h *Hints) String() string {
	if h == nil {
		return "unknown"
	}
	var parts []string
	if h.ReadOnly {
		parts = append(parts, "read-only")
	}
	if h.Destructive && !h.ReadOnly {
		parts = append(parts, "destructive")
	}
	if h.Idempotent {
		parts = append(parts, "idempotent")
	}
	if h.OpenWorld {
		parts = append(parts, "open-world")
	}
	if len(parts) == 0 {
		return "mutating"
	}
	return strings.Join(parts, ",")
}

// Spec describes a tool to the model and to the gates around it.
type Spec struct {
	// Name is what the model calls; see [SanitizeName] for the allowed shape.
	Name string `json:"name"`
	// Description tells the model what the tool does.
	Description string `json:"description,omitempty"`
	// InputSchema is the JSON Schema of the call's arguments (an object schema).
	// Nil means "any JSON object". A schema is not changed once a tool
	// returns it: a tool whose schema changes returns a new one (gates
	// cache what they resolve from it by its address: gate.Validators).
	InputSchema *jsonschema.Schema `json:"inputSchema,omitempty"`
	// Hints are advisory; nil means unknown, which gates treat as mutating.
	Hints *Hints `json:"hints,omitempty"`
	// Source says where the tool comes from: "builtin", "func", "mcp:<server>", ...
	Source string `json:"source,omitempty"`
}

// Tool is one callable tool.
//
// Call receives the arguments as a JSON object. It returns the result the model
// sees; a non-nil error is turned into an error result by the caller (the agent)
// and never aborts a run. Call must honour ctx cancellation. Call may be invoked
// from several goroutines at once.
type Tool interface {
	Spec() Spec
	Call(ctx context.Context, args json.RawMessage) (Result, error)
}

// Result is what a tool call produces.
type Result struct {
	// Output is the text the model sees.
	Output string `json:"output"`
	// IsError marks a failed call; the model still sees Output.
	IsError bool `json:"isError,omitempty"`
	// Metadata is for hooks, records and hosts; it is never sent to the model.
	Metadata map[string]any `json:"metadata,omitempty"`
	// Pending, when set, makes this not a result but a request for an
	// out-of-band answer (seed 002's pending(...)); Output and IsError are ignored.
	Pending *Request `json:"pending,omitempty"`
}

// Text returns a successful result with the given output.
func Text(output string) Result { return Result{Output: output} }

// Error returns an error result: the model sees msg, and the run continues.
func Error(msg string) Result { return Result{Output: msg, IsError: true} }

// Errorf is [Error] with fmt.Sprintf formatting.
func Errorf(format string, args ...any) Result { return Error(fmt.Sprintf(format, args...)) }

// Pending returns the seed's pending(...) result: the call is suspended until
// an [Answer] for req arrives (through a WaitFor function or a resume).
func Pending(req Request) Result { return Result{Pending: &req} }

// Clone returns a copy of r whose Metadata map and Pending request are not
// shared with r, so that a hook may change the copy freely.
func (r Result) Clone() Result {
	if r.Metadata != nil {
		m := make(map[string]any, len(r.Metadata))
		for k, v := range r.Metadata {
			m[k] = v
		}
		r.Metadata = m
	}
	if r.Pending != nil {
		p := *r.Pending
		r.Pending = &p
	}
	return r
}

// SanitizeName maps name onto the shape model providers accept: every byte outside
// [A-Za-z0-9_-] becomes '_', and the result is cut to [MaxNameLen] bytes. An empty
// name becomes "_".
func SanitizeName(name string) string {
	b := []byte(name)
	for i, c := range b {
		ok := c == '_' || c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !ok {
			b[i] = '_'
		}
	}
	if len(b) > MaxNameLen {
		b = b[:MaxNameLen]
	}
	if len(b) == 0 {
		return "_"
	}
	return string(b)
}

// ValidName reports whether name already has the shape [SanitizeName] produces.
func ValidName(name string) bool { return name != "" && SanitizeName(name) == name }
