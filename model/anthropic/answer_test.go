package anthropic

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/tollgate-dev/tollgate/model"
)

// checkModelName decodes the model of data with hint and checks it against
// encoding/json's own decoding into a string field.
func checkModelName(t *testing.T, data []byte, hint string) {
	t.Helper()
	var want struct {
		Model string `json:"model"`
	}
	if json.Unmarshal(data, &want) != nil {
		return // not an object with a string model: leniency is tested elsewhere
	}
	got := wireResponse{Model: modelName{hint: hint}}
	if err := json.Unmarshal(data, &got); err != nil {
		if _, ok := err.(*json.UnmarshalTypeError); !ok {
			t.Fatalf("%s: %v", data, err)
		}
	}
	if string(got.Model.name) != want.Model {
		t.Errorf("%s with hint %q: model %q, want %q", data, hint, got.Model.name, want.Model)
	}
}

func TestModelName(t *testing.T) {
	for _, c := range []struct{ data, hint string }{
		{`{"model":"claude-x"}`, "claude-x"},
		{`{"model":"claude-x"}`, "claude-y"},
		{`{"model":"claude-x-20250101"}`, "claude-x"},
		{`{"model":"\u0063laude"}`, "\\u0063laude"},
		{`{"model":"a\"b"}`, `a\"b`},
		{`{"model":"caf\u00e9"}`, "café"},
		{"{\"model\":\"\xff\"}", "\xff"},
		{`{"model":""}`, ""},
		{`{"model":null}`, "claude-x"},
		{`{}`, "claude-x"},
		{`{"model":"a","model":"claude-x"}`, "claude-x"},
		{`{"model":"claude-x","model":"b"}`, "claude-x"},
	} {
		checkModelName(t, []byte(c.data), c.hint)
	}
}

// FuzzModelName checks that the hint never changes what the model decodes
// to.
func FuzzModelName(f *testing.F) {
	f.Add([]byte(`{"model":"claude-x"}`), "claude-x")
	f.Add([]byte(`{"model":"\u0063"}`), `\u0063`)
	f.Add([]byte("{\"model\":\"\xff\"}"), "\xff")
	f.Fuzz(checkModelName)
}

// TestToolCache checks that a request's tools are those of its own
// definitions when the previous request's are reused, changed in place or
// replaced.
func TestToolCache(t *testing.T) {
	m, err := New(&Options{Model: "m", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	defs := []model.ToolDef{
		{Name: "read", Description: "reads", InputSchema: json.RawMessage(`{"type":"object","properties":{"p":{"type":"string"}}}`)},
		{Name: "list"},
	}
	check := func(step string, defs []model.ToolDef) {
		t.Helper()
		req := &model.Request{Messages: []model.Message{model.User("hi")}, Tools: defs}
		got, err := m.request(context.Background(), req)
		fresh, _ := New(&Options{Model: "m", APIKey: "k"})
		want, werr := fresh.request(context.Background(), req)
		if (err != nil) != (werr != nil) {
			t.Fatalf("%s: error %v, want %v", step, err, werr)
		}
		if !reflect.DeepEqual(got.Tools, want.Tools) {
			t.Errorf("%s: tools\n%+v\nwant\n%+v", step, got.Tools, want.Tools)
		}
	}
	check("first", defs)
	check("same", defs)
	copy(defs[0].InputSchema[len(`{"type":"object","properties":{"`):], "q")
	check("schema changed in place", defs)
	defs[1].Description = "lists"
	check("description changed", defs)
	defs[1].InputSchema = json.RawMessage{}
	check("empty schema", defs)
	defs[1].Name = "read"
	check("duplicate name", defs)
	check("fewer", defs[:1])
	check("none", nil)
	check("again", defs[:1])
}
