package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tollgate-dev/tollgate/internal/toolcall"
	"github.com/tollgate-dev/tollgate/tool"
)

// A caller that validated the arguments (the agent) says so with
// WithValidated, and a tool made by New does not validate them again; the
// promise covers only the same bytes and the same schema.
func TestWithValidatedSkipsOnlyTheSameArguments(t *testing.T) {
	schema := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"n": {Type: "integer", Minimum: jsonschema.Ptr(5.0)}}}
	type in struct {
		N int `json:"n"`
	}
	tl := tool.Must("t", "", func(ctx context.Context, v in) (string, error) { return "ran", nil }, &tool.FuncOptions{InputSchema: schema})
	args := json.RawMessage(`{"n":1}`) // decodes, but breaks the schema's minimum
	other := &jsonschema.Schema{Type: "object"}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"no promise", context.Background(), "invalid"},
		{"same bytes, same schema", toolcall.WithValidated(context.Background(), schema, args), "ran"},
		{"a copy of the bytes", toolcall.WithValidated(context.Background(), schema, slices.Clone(args)), "ran"},
		{"other bytes", toolcall.WithValidated(context.Background(), schema, json.RawMessage(`{"n":7}`)), "invalid"},
		{"another schema", toolcall.WithValidated(context.Background(), other, args), "invalid"},
		{"no schema", toolcall.WithValidated(context.Background(), nil, args), "invalid"},
	} {
		res, err := tl.Call(tc.ctx, args)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Output; (tc.want == "ran") != (got == "ran") || (tc.want == "invalid" && !res.IsError) {
			t.Errorf("%s: %+v, want %s", tc.name, res, tc.want)
		}
	}
}

// Arguments may nest tool.MaxArgumentsDepth levels deep, the object itself
// the first, and no deeper.
func TestValidateBoundsDepth(t *testing.T) {
	v, err := tool.NewValidator(nil)
	if err != nil {
		t.Fatal(err)
	}
	nest := func(levels int) json.RawMessage { // an object holding levels-1 arrays
		return json.RawMessage(`{"x":` + strings.Repeat("[", levels-1) + strings.Repeat("]", levels-1) + `}`)
	}
	if err := v.Validate(nest(tool.MaxArgumentsDepth)); err != nil {
		t.Fatalf("%d levels: %v", tool.MaxArgumentsDepth, err)
	}
	if err := v.Validate(nest(tool.MaxArgumentsDepth + 1)); !errors.Is(err, tool.ErrInvalidArguments) || !strings.Contains(err.Error(), "deeper") {
		t.Fatalf("%d levels: %v, want too deep", tool.MaxArgumentsDepth+1, err)
	}
	if !tool.TooDeep(nest(tool.MaxArgumentsDepth+1)) || tool.TooDeep(nest(tool.MaxArgumentsDepth)) {
		t.Fatal("TooDeep disagrees with Validate")
	}
}

// TooDeep agrees with encoding/json's own reading of the nesting of every
// valid JSON text.
func FuzzTooDeep(f *testing.F) {
	f.Add(`{"a":"[[[","b":[{"c":"\"]"}]}`)
	f.Add(`{"x":` + strings.Repeat("[", 120) + strings.Repeat("]", 120) + `}`)
	f.Add(`["\\", {"k": "}"}]`)
	f.Fuzz(func(t *testing.T, s string) {
		if !json.Valid([]byte(s)) {
			return
		}
		dec := json.NewDecoder(strings.NewReader(s))
		depth, deepest := 0, 0
		for {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			switch tok {
			case json.Delim('{'), json.Delim('['):
				depth++
				deepest = max(deepest, depth)
			case json.Delim('}'), json.Delim(']'):
				depth--
			}
		}
		if got, want := tool.TooDeep([]byte(s)), deepest > tool.MaxArgumentsDepth; got != want {
			t.Fatalf("TooDeep(%q) = %v, nesting %d", s, got, deepest)
		}
	})
}
