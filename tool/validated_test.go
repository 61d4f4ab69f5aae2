package tool_test

import (
	"context"
	"encoding/json"
	"slices"
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
