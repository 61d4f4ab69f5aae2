package provider

import (
	"encoding/json"
	"errors"
	"maps"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// stringOracle decodes the JSON value v into a String and, as the oracle,
// into a string field, both starting from prev.
func stringOracle(t *testing.T, v []byte, prev string) (got, want string) {
	t.Helper()
	ours := struct{ S String }{String(prev)}
	theirs := struct{ S string }{prev}
	doc := append(append([]byte(`{"S":`), v...), '}')
	if err := json.Unmarshal(doc, &ours); err != nil {
		t.Fatalf("String: %v", err)
	}
	_ = json.Unmarshal(doc, &theirs) // a value of another type: UnmarshalTypeError, field unchanged
	return string(ours.S), theirs.S
}

func TestString(t *testing.T) {
	for _, v := range []string{
		`"tool_calls"`, `"chatcmpl-1"`, `""`, `"prev"`, `"a\"b"`, `"\u00e9t\u00e9"`, `"été"`, `"\ud83d\ude00"`,
		`"\ud800"`, "\"\xff\xfe\"", `"line\nbreak"`, `null`, `12`, `true`, `{"a":"b"}`, `["x"]`,
	} {
		got, want := stringOracle(t, []byte(v), "prev")
		if got != want {
			t.Errorf("%s: String = %q, encoding/json = %q", v, got, want)
		}
	}
	var s String
	word, id := []byte(`"content_block_delta"`), []byte(`"chatcmpl-abc"`)
	if n := testing.AllocsPerRun(100, func() { _ = s.UnmarshalJSON(word) }); n != 0 {
		t.Errorf("a fixed word allocates %v times, want 0", n)
	}
	s = "chatcmpl-abc"
	if n := testing.AllocsPerRun(100, func() { _ = s.UnmarshalJSON(id) }); n != 0 {
		t.Errorf("the current value allocates %v times, want 0", n)
	}
}

func FuzzString(f *testing.F) {
	for _, v := range []string{`"stop"`, `"x"`, `"\u0041"`, `null`, `1`, `"\ud800x"`} {
		f.Add([]byte(v), "prev")
	}
	f.Fuzz(func(t *testing.T, v []byte, prev string) {
		if !json.Valid(v) {
			return
		}
		if got, want := stringOracle(t, v, prev); got != want {
			t.Errorf("%q from %q: String = %q, encoding/json = %q", v, prev, got, want)
		}
	})
}

// members collects Members(obj) into a map, the last of a repeated key
// winning, as encoding/json decodes an object into map[string]json.RawMessage.
func members(obj []byte) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	for k, v := range Members(obj) {
		if m == nil {
			m = map[string]json.RawMessage{}
		}
		m[string(k)] = json.RawMessage(v)
	}
	return m
}

func TestMembers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]json.RawMessage
	}{
		{` { "type" : "object" , "properties":{"a":{"type":"string","enum":["}",","]}},"n":-1.5e3,"t":true,"z":null,"arr":[[],{}]} `,
			map[string]json.RawMessage{"type": []byte(`"object"`), "properties": []byte(`{"a":{"type":"string","enum":["}",","]}}`), "n": []byte(`-1.5e3`), "t": []byte(`true`), "z": []byte(`null`), "arr": []byte(`[[],{}]`)}},
		{`{"typ\u0065":"x","k\"q":"\"}"}`, map[string]json.RawMessage{"type": []byte(`"x"`), `k"q`: []byte(`"\"}"`)}},
		{`{"a":1,"a":2}`, map[string]json.RawMessage{"a": []byte(`2`)}},
		{`{}`, nil},
		{`[1,2]`, nil},
		{`"s"`, nil},
	} {
		if d := cmp.Diff(tc.want, members([]byte(tc.in))); d != "" {
			t.Errorf("Members(%s) (-want +got):\n%s", tc.in, d)
		}
	}
	obj := []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)
	if n := testing.AllocsPerRun(100, func() {
		for range Members(obj) {
		}
	}); n != 0 {
		t.Errorf("Members allocates %v times, want 0", n)
	}
}

func FuzzMembers(f *testing.F) {
	for _, v := range []string{`{"type":"object"}`, `{"a":[1,{"b":"}"}],"c":"\\"}`, `{"x":1e5,"y":false}`, `[]`, `{"k\u00e9":null}`} {
		f.Add([]byte(v))
	}
	f.Fuzz(func(t *testing.T, obj []byte) {
		if !json.Valid(obj) {
			return
		}
		var want map[string]json.RawMessage
		if json.Unmarshal(obj, &want) != nil {
			want = nil // not an object
		}
		got := members(obj)
		if len(want) == 0 && len(got) == 0 {
			return
		}
		if !maps.EqualFunc(want, got, func(a, b json.RawMessage) bool { return string(a) == string(b) }) {
			t.Errorf("Members(%s) = %v, encoding/json = %v", obj, got, want)
		}
	})
}

func TestInt(t *testing.T) {
	for v, want := range map[string]int64{`12`: 12, `-3`: -3, `0`: 0, `1.5`: 0, `1e3`: 0, `"7"`: 0, `null`: 0, `99999999999999999999`: 0} {
		if got := Int([]byte(v)); got != want {
			t.Errorf("Int(%s) = %d, want %d", v, got, want)
		}
	}
}

// marshalOracle is encoding/json's encoding of v.
func marshalOracle(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", `q"b\s`, "\b\f\n\r\t\x00\x1f\x7f", "<a href='x'>&amp;</a>", "été 日本 😀", "\u2028\u2029", "bad \xff\xfe utf8 \xe2\x80", "\xe2\x80\xa8x"} {
		if got, want := string(AppendString([]byte("x"), s)), "x"+marshalOracle(t, s); got != want {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"a", "\x00<\u2028\xff", `"\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(AppendString(nil, s)), marshalOracle(t, s); got != want {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
	})
}

func TestAppendRaw(t *testing.T) {
	for _, raw := range []string{`{"type":"object"}`, " { \"a\" : [ 1 , 2.5e3 , \"x y\\\" <b>&\" ] ,\n\t\"b\":null } ", `"\u2028 ` + "\u2028\u2029" + `"`, `true`, "\"\xff\""} {
		got, err := AppendRaw([]byte("x"), []byte(raw))
		if want := "x" + marshalOracle(t, json.RawMessage(raw)); err != nil || string(got) != want {
			t.Errorf("AppendRaw(%q) = %s, %v, want %s", raw, got, err, want)
		}
	}
	if got, err := AppendRaw(nil, nil); err != nil || string(got) != "null" {
		t.Errorf("AppendRaw(nil) = %s, %v", got, err)
	}
	if _, err := AppendRaw(nil, []byte(`{"a":`)); !errors.Is(err, ErrInvalidJSON) {
		t.Errorf("AppendRaw(invalid) err = %v, want ErrInvalidJSON", err)
	}
}

func FuzzAppendRaw(f *testing.F) {
	for _, s := range []string{`{"a": "<\u2028>"}`, ` [1, "x\"y"] `, "\"\xe2\x80\xa9\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		want, werr := json.Marshal(json.RawMessage(raw))
		got, err := AppendRaw(nil, raw)
		if len(raw) == 0 {
			return // Marshal writes null for nil and empty alike
		}
		if (werr != nil) != (err != nil) || werr == nil && string(got) != string(want) {
			t.Errorf("AppendRaw(%q) = %s, %v, want %s, %v", raw, got, err, want, werr)
		}
	})
}
