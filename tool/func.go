package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tollgate-dev/tollgate/internal/argcheck"
	"github.com/tollgate-dev/tollgate/internal/jsondecode"
)

// FuncOptions configures [New]. A nil *FuncOptions means all defaults.
type FuncOptions struct {
	// Hints for the tool; nil means unknown (treated as mutating).
	Hints *Hints
	// InputSchema replaces the schema inferred from the input type.
	InputSchema *jsonschema.Schema
	// Source overrides the spec's Source (default "func").
	Source string
}

type funcTool[In any, Out string | Result] struct {
	spec      Spec
	validator *argcheck.Validator
	fn        func(context.Context, In) (Out, error)
}

// New turns fn into a [Tool] named name (which must already be a valid name, see
// [ValidName]).
//
// The input schema is inferred from In with jsonschema.For: exported fields by
// their JSON names, fields without omitempty/omitzero required, and a
// `jsonschema:"..."` struct tag as the field's description. Every call's
// arguments are validated against the schema before fn runs (once: not again
// when the context says that the caller did: the agent validates
// every call's arguments before the tool runs); a violation is an
// error result listing the problems. fn returns either the output text or a full
// [Result]. A non-nil error from fn becomes an error result with the error's text,
// and a panic in fn becomes an error result naming the panic; neither escapes.
//
// New returns an error when name is invalid or the schema cannot be inferred or
// resolved (In contains a func, a chan, or a map with non-string keys).
func New[In any, Out string | Result](name, description string, fn func(context.Context, In) (Out, error), opts *FuncOptions) (Tool, error) {
	if !ValidName(name) {
		return nil, fmt.Errorf("tool.New: name %q must match [A-Za-z0-9_-]{1,%d} (see SanitizeName)", name, MaxNameLen)
	}
	if fn == nil {
		return nil, fmt.Errorf("tool.New(%q): nil function", name)
	}
	var o FuncOptions
	if opts != nil {
		o = *opts
	}
	schema := o.InputSchema
	if schema == nil {
		var err error
		schema, err = jsonschema.For[In](nil)
		if err != nil {
			return nil, fmt.Errorf("tool.New(%q): inferring the input schema: %w", name, err)
		}
	}
	v, err := argcheck.New(schema)
	if err != nil {
		return nil, fmt.Errorf("tool.New(%q): %w", name, err)
	}
	src := o.Source
	if src == "" {
		src = "func"
	}
	var hints *Hints
	if o.Hints != nil {
		h := *o.Hints
		hints = &h
	}
	return &funcTool[In, Out]{
		spec:      Spec{Name: name, Description: description, InputSchema: schema, Hints: hints, Source: src},
		validator: v,
		fn:        fn,
	}, nil
}

// Must is like [New] but panics on error; for package-level tool definitions
// whose inputs are fixed at compile time.
func Must[In any, Out string | Result](name, description string, fn func(context.Context, In) (Out, error), opts *FuncOptions) Tool {
	t, err := New(name, description, fn, opts)
	if err != nil {
		panic(err)
	}
	return t
}

func (t *funcTool[In, Out]) Spec() Spec { return t.spec }

func (t *funcTool[In, Out]) Call(ctx context.Context, args json.RawMessage) (res Result, err error) {
	if !isValidated(ctx, t.spec.InputSchema, args) {
		if err := t.validator.Validate(args); err != nil {
			return Error(err.Error()), nil
		}
	}
	var in In
	if len(args) > 0 {
		if err := jsondecode.Unmarshal(args, &in); err != nil {
			return Errorf("invalid arguments for %s: %v", t.spec.Name, err), nil
		}
	}
	defer func() {
		if p := recover(); p != nil {
			res, err = Recovered(t.spec.Name, p), nil
		}
	}()
	out, err := t.fn(ctx, in)
	if err != nil {
		return Error(err.Error()), nil
	}
	switch o := any(out).(type) {
	case string:
		return Text(o), nil
	case Result:
		return o, nil
	}
	return Result{}, errors.New("unreachable")
}

// Recovered turns a recovered panic value from tool name into the error result
// the model sees. The stack goes into Metadata["panicStack"], never to the model.
func Recovered(name string, p any) Result {
	r := Errorf("tool %s panicked: %v", name, p)
	r.Metadata = map[string]any{"panic": fmt.Sprint(p), "panicStack": string(debug.Stack())}
	return r
}
