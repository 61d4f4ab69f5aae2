package jsondecode

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type call struct {
	ID       string          `json:"id"`
	Index    int             `json:"index"`
	Args     json.RawMessage `json:"args"`
	Function struct {
		Name string   `json:"name"`
		Tags []string `json:"tags"`
	} `json:"function"`
	Extra map[string]any `json:"extra"`
}

// targets are fresh values of the kinds the providers and tools decode
// into: a struct with nested fields, an interface, a map.
var targets = []func() any{
	func() any { return new(call) },
	func() any { return new(any) },
	func() any { return new(map[string]any) },
	func() any { return new([]call) },
}

// check decodes doc with Unmarshal and with json.Unmarshal into fresh values
// of every target and compares values and errors.
func check(t *testing.T, doc string) {
	t.Helper()
	for i, newV := range targets {
		got, want := newV(), newV()
		gerr, werr := Unmarshal([]byte(doc), got), json.Unmarshal([]byte(doc), want)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("target %d, %q: error %v, json.Unmarshal %v", i, doc, gerr, werr)
		}
		if _, ok := errors.AsType[*json.SyntaxError](werr); ok && strings.HasPrefix(werr.Error(), "invalid character") && strings.Contains(werr.Error(), "after top-level value") {
			continue // v may hold the first value (see Unmarshal)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("target %d, %q (-json.Unmarshal +Unmarshal):\n%s", i, doc, diff)
		}
	}
}

var docs = []string{
	`{"id":"call_1","index":2,"args":{"city":"Paris"},"function":{"name":"get_weather","tags":["a","b"]},"extra":{"n":1.5,"z":null}}`,
	` {"id":"x"} `,
	"{}\n\n",
	`{"index":"not a number","id":"after the type error"}`,
	`{"id":"a"}{"id":"b"}`,
	`{"id":"a"} x`,
	`{"id":"a"`,
	``,
	`   `,
	`null`,
	`42`,
	`42 `,
	`4 2`,
	`"text"`,
	`[{"id":"a"},{"id":"b","function":{"name":"n"}}]`,
	`{"id":"\u00e9\ud83d\ude00\"\\"}`,
	`{"id":"` + strings.Repeat("é", MaxPooled/2+1) + `"}`,
	`[1,2,3]`,
	`true`,
	`{"args":[1,{"a":[]}],"extra":{"deep":{"er":[[[]]]}}}`,
}

// TestUnmarshal decodes every document after every other, so that each
// starts with a decoder that the one before left behind (white space it did
// not read, a failure that dropped it).
func TestUnmarshal(t *testing.T) {
	for _, a := range docs {
		for _, b := range docs {
			check(t, a)
			check(t, b)
		}
	}
}

func FuzzUnmarshal(f *testing.F) {
	for _, d := range docs {
		f.Add(d, `{"id":"next"}`)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		check(t, a)
		check(t, b)
		check(t, a)
	})
}

// TestUnmarshalAllocs checks the point of the package: a document decoded
// again with a warm pool costs fewer allocations than with json.Unmarshal
// (its decode state, error context and scanner stack: 7 of 19 for this
// document; with -race, which makes the pool drop some, at least one).
func TestUnmarshalAllocs(t *testing.T) {
	doc := []byte(docs[0])
	var c call
	pooled := testing.AllocsPerRun(100, func() { c = call{}; _ = Unmarshal(doc, &c) })
	plain := testing.AllocsPerRun(100, func() { c = call{}; _ = json.Unmarshal(doc, &c) })
	saved := 5.0
	if raceDetector {
		saved = 1
	}
	if pooled > plain-saved {
		t.Fatalf("%v allocations per document, json.Unmarshal %v: the decoder's state is not reused", pooled, plain)
	}
}
