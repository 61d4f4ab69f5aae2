package argcheck

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// FuzzValidate: the validator never panics, and accepts exactly the JSON objects
// (or empty input) that satisfy the schema; its errors wrap ErrInvalidArguments.
func FuzzValidate(f *testing.F) {
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(`{"type":"object","properties":{"cmd":{"type":"string"},"n":{"type":"integer","minimum":0}},"required":["cmd"]}`), &s); err != nil {
		f.Fatal(err)
	}
	v, err := New(&s)
	if err != nil {
		f.Fatal(err)
	}
	for _, in := range []string{`{"cmd":"ls"}`, `{"cmd":"ls","n":-1}`, `{}`, `null`, ``, `[]`, `"x"`, `{"cmd":1}`, `{"cmd":"a","n":1.5}`, `{`} {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		err := v.Validate(json.RawMessage(in))
		if err != nil && !errors.Is(err, ErrInvalidArguments) {
			t.Fatalf("error %v does not wrap ErrInvalidArguments", err)
		}
		if err == nil {
			var obj map[string]any
			if in != "" && in != "null" {
				if json.Unmarshal([]byte(in), &obj) != nil {
					t.Fatalf("accepted %q, which is not a JSON object", in)
				}
				if _, ok := obj["cmd"].(string); !ok {
					t.Fatalf("accepted %q without a string cmd", in)
				}
			}
		}
	})
}
