package jsonenc

import (
	"encoding/json"
	"testing"
)

// FuzzObject: whatever comes in, the result is a JSON object or an error.
func FuzzObject(f *testing.F) {
	for _, in := range []string{`{}`, `{"a":1}`, `[]`, `null`, ``, `"s"`, `{"a":`, `{"a":{"b":[1,2,{}]}}`} {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := Object(json.RawMessage(in))
		if err != nil {
			return
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(out, &obj) != nil || obj == nil {
			t.Fatalf("Object(%q) = %q, not a JSON object", in, out)
		}
	})
}
