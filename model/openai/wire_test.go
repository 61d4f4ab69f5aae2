package openai

import (
	"encoding/json"
	"testing"
)

// FuzzWireArgs checks that a tool call's arguments decode into bytes as
// encoding/json decodes them into a string, whatever the text and its
// escapes.
func FuzzWireArgs(f *testing.F) {
	for _, s := range []string{
		`"{\"city\":\"Paris\"}"`, `""`, `"\\\/\b\f\n\r\t"`, `"\u00e9\ud83d\ude00"`, `"\ud800"`,
		"\"\xff\xfe\"", `"é"`, `null`, `12`, `{"a":1}`, `"a\\"`, `"\u2028<>&"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		var want struct {
			A *string `json:"a"`
		}
		var got struct {
			A wireArgs `json:"a"`
		}
		in := []byte(`{"a":` + doc + `}`)
		werr := json.Unmarshal(in, &want)
		gerr := json.Unmarshal(in, &got)
		if _, ok := werr.(*json.UnmarshalTypeError); ok {
			werr = nil // a value of another type: the field stays as it was
		}
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%q: error %v, as a string %v", doc, gerr, werr)
		}
		if werr != nil {
			return
		}
		if want.A == nil {
			if got.A != nil {
				t.Fatalf("%q: %q, as a string nothing", doc, got.A)
			}
			return
		}
		if string(got.A) != *want.A {
			t.Fatalf("%q: %q, as a string %q", doc, got.A, *want.A)
		}
	})
}

// TestResponseModel checks that an answer's model is the one it names, and
// the requested one when it names none, as a stream's.
func TestResponseModel(t *testing.T) {
	m, err := New(&Options{Model: "default"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ answer, want string }{
		{`{"model":"gpt-x-2025","choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}`, "gpt-x-2025"},
		{`{"model":"asked","choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}`, "asked"},
		{`{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}`, "asked"},
	} {
		resp, err := m.response([]byte(tc.answer), "asked")
		if err != nil || resp.Model != tc.want || resp.Message.Content != "hi" {
			t.Errorf("%s: %+v, %v; want model %q", tc.answer, resp, err, tc.want)
		}
	}
}

// TestResponseToolCalls checks an answer with more tool calls than the
// response has room for, and one whose calls are all of another type.
func TestResponseToolCalls(t *testing.T) {
	m, err := New(&Options{Model: "default"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.response([]byte(`{"choices":[{"message":{"tool_calls":[
		{"id":"a","type":"function","function":{"name":"f","arguments":"{\"n\":1}"}},
		{"id":"b","type":"function","function":{"name":"g","arguments":""}},
		{"id":"c","type":"function","function":{"name":"h","arguments":"{\"s\":\"\\u00e9\\n\"}"}}]},"finish_reason":"tool_calls"}]}`), "m")
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.Message.ToolCalls
	if len(calls) != 3 || string(calls[0].Arguments) != `{"n":1}` || string(calls[1].Arguments) != `{}` || string(calls[2].Arguments) != `{"s":"\u00e9\n"}` || calls[2].Name != "h" {
		t.Fatalf("%+v", calls)
	}
	resp, err = m.response([]byte(`{"choices":[{"message":{"content":"x","tool_calls":[{"id":"a","type":"custom","function":{"name":"f"}}]},"finish_reason":"stop"}]}`), "m")
	if err != nil || resp.Message.ToolCalls != nil || resp.Message.Content != "x" {
		t.Fatalf("%+v, %v", resp, err)
	}
}
