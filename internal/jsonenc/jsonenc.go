// Package jsonenc encodes JSON as tollgate writes it everywhere: without
// HTML escaping, so that arguments such as "a && b" stay readable in
// transcripts, records, stores and logs.
package jsonenc

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Marshal is json.Marshal without HTML escaping ("&&", not
// "\u0026\u0026"). The result has no trailing newline.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// Object encodes v as a JSON object: nil becomes {}, a json.RawMessage,
// []byte or string is checked and kept, anything else goes through
// [Marshal]. It returns an error when the result is not a JSON object.
func Object(v any) (json.RawMessage, error) {
	var b []byte
	switch x := v.(type) {
	case nil:
		return json.RawMessage("{}"), nil
	case json.RawMessage:
		b = x
	case []byte:
		b = x
	case string:
		b = []byte(x)
	default:
		var err error
		if b, err = Marshal(x); err != nil {
			return nil, err
		}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("arguments must be a JSON object, got %.80q", b)
	}
	return json.RawMessage(append([]byte(nil), b...)), nil
}
