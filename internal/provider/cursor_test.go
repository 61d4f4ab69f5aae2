package provider

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// checkCursorValue reads the JSON value v with a Cursor as a string, an
// integer and a raw value, and as encoding/json decodes it into a string,
// an int64 and a json.RawMessage field that held a value before.
func checkCursorValue(t *testing.T, v []byte) {
	t.Helper()
	var c Cursor
	if c.Reset(v) != json.Valid(v) {
		t.Fatalf("%q: Reset disagrees with json.Valid", v)
	}
	if !json.Valid(v) {
		return
	}
	want := struct {
		S string
		N int64
		R json.RawMessage
	}{"prev", 7, nil}
	doc := []byte(`{"S":` + string(v) + `,"N":` + string(v) + `,"R":` + string(v) + `}`)
	_ = json.Unmarshal(doc, &want) // a type error leaves the field as it was

	c.Reset(v)
	s, ok := c.String()
	if !ok {
		s = "prev"
	}
	if s != want.S || !c.End() {
		t.Errorf("%q: String = %q, %v; encoding/json: %q", v, s, ok, want.S)
	}
	c.Reset(v)
	n, ok := c.Int()
	if !ok {
		n = 7
	}
	if n != want.N || !c.End() {
		t.Errorf("%q: Int = %d, %v; encoding/json: %d", v, n, ok, want.N)
	}
	c.Reset(v)
	if r := c.Raw(); string(r) != string(want.R) || !c.End() {
		t.Errorf("%q: Raw = %q; encoding/json: %q", v, r, want.R)
	}
}

func TestCursorValues(t *testing.T) {
	for _, v := range cursorSeeds {
		checkCursorValue(t, []byte(v))
	}
}

var cursorSeeds = []string{
	`"plain"`, ` "spaced" `, `""`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\u2028\u2029\u0000"`, `"\ud83d\ude00"`,
	`"\ud800"`, `"\udc00"`, `"\ud800\ud800\udc00"`, `"\ud800\u0041"`, `"\ud800x"`, `"\uD83D\uDE00"`,
	"\"\xff\"", "\"\xed\xa0\x80\"", "\"\xc3\"", "\"caf\xc3\xa9\"", "\"\xef\xbf\xbd\"",
	`0`, `-0`, `12`, `-12`, `1.5`, `1e3`, `1E+3`, `-1e-3`, `9223372036854775807`, `9223372036854775808`,
	`-9223372036854775808`, `-9223372036854775809`, `18446744073709551616`, `99999999999999999999`,
	`null`, `true`, `false`, `{}`, `[]`, `{"a":[1,{"b":"}"}]}`, `["]"]`, `x`, `01`, `"`,
}

func FuzzCursorValue(f *testing.F) {
	for _, v := range cursorSeeds {
		f.Add([]byte(v))
	}
	f.Fuzz(checkCursorValue)
}

// checkField decodes {key: 1} into a struct whose field is named name, and
// requires Field to find the field exactly when encoding/json sets it.
func checkField(t *testing.T, key string) {
	t.Helper()
	doc := []byte(`{` + strconv.Quote(key) + `:1}`)
	if !json.Valid(doc) {
		return
	}
	var want struct {
		StopReason int `json:"stop_reason"`
		Kind       int `json:"kind"`
		ID         int `json:"id"`
	}
	if err := json.Unmarshal(doc, &want); err != nil {
		t.Fatal(err)
	}
	var c Cursor
	c.Reset(doc)
	c.Object()
	k, ok := c.Key()
	if !ok {
		t.Fatalf("%s: no key", doc)
	}
	got := [3]int{}
	if i := Field(k, []string{"stop_reason", "kind", "id"}); i >= 0 {
		got[i] = 1
	}
	if got != [3]int{want.StopReason, want.Kind, want.ID} {
		t.Errorf("%s: Field sets %v, encoding/json %+v", doc, got, want)
	}
}

func TestField(t *testing.T) {
	for _, k := range fieldSeeds {
		checkField(t, k)
	}
}

var fieldSeeds = []string{
	"stop_reason", "STOP_REASON", "Stop_Reason", "ſtop_reaſon", "stop_reasoN", "stop reason", "stop_reason ",
	"kind", "KIND", "\u212aind", "kınd", "id", "ID", "Id", "iD", "İD", "", "\xff", "i\xffd", "idd",
}

func FuzzField(f *testing.F) {
	for _, k := range fieldSeeds {
		f.Add(k)
	}
	f.Fuzz(checkField)
}

func TestCursorObjectsAndArrays(t *testing.T) {
	var c Cursor
	doc := []byte(` { "a" : [ 1 , { } , "x" ] , "\u0062" : { "c" : null } , "d":[] } `)
	if !c.Reset(doc) || !c.Object() {
		t.Fatal("not an object")
	}
	var keys []string
	for {
		k, ok := c.Key()
		if !ok {
			break
		}
		keys = append(keys, string(k))
		switch string(k) {
		case "a":
			n := 0
			for c.Array(); c.More(); n++ {
				c.Skip()
			}
			if n != 3 {
				t.Errorf("a has %d elements", n)
			}
		case "b":
			if !c.Object() {
				t.Fatal("b")
			}
			if k, ok := c.Key(); !ok || string(k) != "c" || !c.Null() {
				t.Errorf("b.c: %q %v", k, ok)
			}
			if _, ok := c.Key(); ok {
				t.Error("b has a second key")
			}
		case "d":
			if !c.Array() || c.More() {
				t.Error("d is not empty")
			}
		}
	}
	if len(keys) != 3 || keys[1] != "b" || !c.End() {
		t.Errorf("keys %q, end %v", keys, c.End())
	}
	// A string is the decoder's own: the text changing after it changes
	// nothing.
	text := []byte(`"content_block_delta"`)
	c.Reset(text)
	s, _ := c.String()
	copy(text, `"XXXXXXXXXXXXXXXXXXX"`)
	if s != "content_block_delta" {
		t.Errorf("the string changed with the text: %q", s)
	}
}

// validSeeds are texts on the edges of JSON's grammar and of the nesting
// limit.
var validSeeds = []string{
	``, ` `, `[`, `]`, `{`, `}`, `[]`, `{}`, ` [ ] `, `{}}`, `[[]`, `[]]`, `[1,]`, `[,1]`, `[1 2]`, `{,}`,
	`{"a" 1}`, `{"a":}`, `{"a":1,}`, `{"a":1 "b":2}`, `{"a":[}]`, `{"a":{]}`, `{1:2}`, `{"a":1}x`,
	`-`, `-0`, `-01`, `01`, `0.`, `1.e5`, `.5`, `1e`, `1e+`, `1E-7`, `0e0`, `-0.0e-0`, `1.5x`, `+1`,
	`tru`, `truex`, `nul`, `null `, `nulll`, `false`, `fals`, `"abc`, `"\u12G4"`, `"\x"`, `"\u00"`,
	`"\/\b\f\n\r\t\"\\"`, "\"\x1f\"", "\"\x7f\"", "\"\xff\xfe\"", "\"\t\"", "[1,\t2\r\n]", "\u00a0[]",
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat(`{"a":`, 10000) + `1` + strings.Repeat("}", 10000),
	strings.Repeat(`{"a":`, 10001) + `1` + strings.Repeat("}", 10001),
	strings.Repeat(`[{"a":`, 5000) + `[]` + strings.Repeat("}]", 5000),
	strings.Repeat(`[{"a":`, 5000) + `{}` + strings.Repeat("}]", 5000),
	strings.Repeat("[", 10001),
}

func TestValidAgreesWithJSONValid(t *testing.T) {
	for _, s := range append(validSeeds, cursorSeeds...) {
		if got, want := valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("%.60q: valid %v, json.Valid %v", s, got, want)
		}
	}
}

func FuzzValid(f *testing.F) {
	for _, s := range validSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := valid(b), json.Valid(b); got != want {
			t.Errorf("%q: valid %v, json.Valid %v", b, got, want)
		}
	})
}
