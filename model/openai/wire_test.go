package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tollgate-dev/tollgate/internal/provider"
	"github.com/tollgate-dev/tollgate/model"
)

// FuzzWireArgs checks that a tool call's arguments, once made valid UTF-8
// (provider.ValidBytes, as the joined pieces are), decode as encoding/json
// decodes them into a string, whatever the text and its escapes, and that
// arguments sent as an object are its text.
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
		if d := bytes.TrimSpace([]byte(doc)); len(d) > 0 && (d[0] == '{' || d[0] == '[') {
			// Arguments sent as an object are that object's text.
			var c bytes.Buffer
			if err := json.Compact(&c, d); err != nil || string(got.A) != c.String() {
				t.Fatalf("%q: %q, want %q (%v)", doc, got.A, c.String(), err)
			}
			return
		}
		if want.A == nil {
			if got.A != nil {
				t.Fatalf("%q: %q, as a string nothing", doc, got.A)
			}
			return
		}
		// Joined (here, alone), the pieces are what encoding/json decodes,
		// but for raw bytes that look like the WTF-8 of a surrogate (one
		// U+FFFD where encoding/json writes three).
		if bytes.Contains([]byte(doc), []byte{0xed}) {
			return
		}
		if got := provider.ValidBytes(got.A); string(got) != *want.A {
			t.Fatalf("%q: %q, as a string %q", doc, got, *want.A)
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

// TestRequestBeyondRoom encodes a request with more messages, tool calls and
// tools than a request has room for, tool calls in several messages, and
// reads it back: every message keeps its own calls.
func TestRequestBeyondRoom(t *testing.T) {
	m, err := New(&Options{Model: "default"})
	if err != nil {
		t.Fatal(err)
	}
	req := &model.Request{Model: "m"}
	want := []string{}
	id := 0
	for turn, n := range []int{1, 1, 3, 0, 2, 4} {
		req.Messages = append(req.Messages, model.User(fmt.Sprintf("question %d", turn)))
		want = append(want, fmt.Sprintf("user question %d", turn))
		var calls []model.ToolCall
		for range n {
			id++
			calls = append(calls, model.ToolCall{ID: fmt.Sprintf("call_%d", id), Name: "f", Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d}`, id))})
		}
		req.Messages = append(req.Messages, model.Assistant(fmt.Sprintf("answer %d", turn), calls...))
		a := fmt.Sprintf("assistant answer %d", turn)
		for _, c := range calls {
			a += fmt.Sprintf(" %s(%s)", c.ID, c.Arguments)
		}
		want = append(want, a)
		for _, c := range calls {
			req.Messages = append(req.Messages, model.ToolResult(c.ID, c.Name, "ok "+c.ID, false))
			want = append(want, "tool ok "+c.ID+" "+c.ID)
		}
	}
	for i := range 6 {
		req.Tools = append(req.Tools, model.ToolDef{Name: fmt.Sprintf("tool_%d", i), InputSchema: json.RawMessage(`{"type":"object"}`)})
		want = append(want, fmt.Sprintf("tool tool_%d", i))
	}
	checkRequest(t, m, req)
	w := new(wireRequest)
	if err := m.request(req, w); err != nil {
		t.Fatal(err)
	}
	b, err := w.encode()
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Messages []struct {
			Role      string `json:"role"`
			Text      string `json:"content"`
			ID        string `json:"tool_call_id"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct {
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, msg := range back.Messages {
		s := msg.Role + " " + msg.Text
		for _, c := range msg.ToolCalls {
			s += fmt.Sprintf(" %s(%s)", c.ID, c.Function.Arguments)
		}
		if msg.ID != "" {
			s += " " + msg.ID
		}
		got = append(got, s)
	}
	for _, tl := range back.Tools {
		got = append(got, "tool "+tl.Function.Name)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("read back (-want +got):\n%s\n%s", diff, b)
	}
}

// TestToolCache checks that a request's tools are those of its own
// definitions when the previous request's are reused, changed in place or
// replaced: each request encodes as a fresh Model encodes it.
func TestToolCache(t *testing.T) {
	m, err := New(&Options{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	encode := func(m *Model, req *model.Request) (string, error) {
		w := new(wireRequest)
		if err := m.request(req, w); err != nil {
			return "", err
		}
		b, err := w.encode()
		return string(b), err
	}
	defs := []model.ToolDef{
		{Name: "read", Description: "reads", InputSchema: json.RawMessage(`{"type":"object","properties":{"p":{"type":"string"}}}`)},
		{Name: "list"},
	}
	check := func(step string, defs []model.ToolDef) {
		t.Helper()
		req := &model.Request{Messages: []model.Message{model.User("hi")}, Tools: defs}
		got, err := encode(m, req)
		fresh, _ := New(&Options{Model: "m"})
		want, werr := encode(fresh, req)
		if (err != nil) != (werr != nil) || got != want {
			t.Fatalf("%s: %s, %v\nwant %s, %v", step, got, err, want, werr)
		}
		checkRequest(t, m, req)
	}
	check("first", defs)
	check("same", defs)
	copy(defs[0].InputSchema[len(`{"type":"object","properties":{"`):], "q")
	check("schema changed in place", defs)
	defs[1].Description = "lists"
	check("description changed", defs)
	defs[1].InputSchema = json.RawMessage(` {"type":"object"} `)
	check("schema added", defs)
	defs[1].InputSchema = json.RawMessage(`[]`)
	check("schema not an object", defs)
	check("fewer", defs[:1])
	check("none", nil)
	check("again", defs[:1])
}

// TestAccumulatorCalls streams tool calls in pieces: by index, a new id on
// a known index starting a new call, and calls without an id, which get
// one of their own.
func TestAccumulatorCalls(t *testing.T) {
	chunks := []string{
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"f","arguments":"{\"p\":"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"type":"function","function":{"name":"g","arguments":"{}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"a\"}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_b","type":"function","function":{"name":"f","arguments":"{\"p\":\"b\"}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":2,"type":"function","function":{"name":"h","arguments":""}}]}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
	}
	var acc accumulator
	c := new(wireCompletion)
	for _, data := range chunks {
		c.reset()
		if err := decode([]byte(data), c); err != nil {
			t.Fatal(err)
		}
		if _, perr := acc.add(c); perr != nil {
			t.Fatal(perr)
		}
	}
	resp, perr := acc.response()
	if perr != nil {
		t.Fatal(perr)
	}
	var got []string
	for _, call := range resp.Message.ToolCalls {
		got = append(got, call.Name+string(call.Arguments))
	}
	if want := []string{`f{"p":"a"}`, `g{}`, `f{"p":"b"}`, `h{}`}; !cmp.Equal(got, want) {
		t.Fatalf("calls %q, want %q", got, want)
	}
	calls := resp.Message.ToolCalls
	if calls[0].ID != "call_a" || calls[2].ID != "call_b" || len(calls[1].ID) != len("call_")+16 || len(calls[3].ID) != len("call_")+16 || calls[1].ID == calls[3].ID {
		t.Errorf("ids %q %q %q %q", calls[0].ID, calls[1].ID, calls[2].ID, calls[3].ID)
	}
}
