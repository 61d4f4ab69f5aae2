package anthropic

import (
	"encoding/json"
	"testing"
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
