package argcheck

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// Arguments may nest MaxDepth levels deep, the object itself
// the first, and no deeper.
func TestValidateBoundsDepth(t *testing.T) {
	v, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	nest := func(levels int) json.RawMessage { // an object holding levels-1 arrays
		return json.RawMessage(`{"x":` + strings.Repeat("[", levels-1) + strings.Repeat("]", levels-1) + `}`)
	}
	if err := v.Validate(nest(MaxDepth)); err != nil {
		t.Fatalf("%d levels: %v", MaxDepth, err)
	}
	if err := v.Validate(nest(MaxDepth + 1)); !errors.Is(err, ErrInvalidArguments) || !strings.Contains(err.Error(), "deeper") {
		t.Fatalf("%d levels: %v, want too deep", MaxDepth+1, err)
	}
	if !TooDeep(nest(MaxDepth+1)) || TooDeep(nest(MaxDepth)) {
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
		if got, want := TooDeep([]byte(s)), deepest > MaxDepth; got != want {
			t.Fatalf("TooDeep(%q) = %v, nesting %d", s, got, deepest)
		}
	})
}
