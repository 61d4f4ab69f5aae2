package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	anth "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/google/go-cmp/cmp"

	"github.com/tollgate-dev/tollgate/internal/provider"
	"github.com/tollgate-dev/tollgate/model"
)

// The official SDK is the oracle of this package's wire codec: the requests
// the codec encodes must decode into the SDK's request type and encode back
// to the same JSON; the answers and events the codec decodes must decode to
// the same values with the SDK's types; and the message a stream assembles
// (Response.Raw) must be the one the SDK's accumulator assembles from the
// same events.

func jsonMap(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any // numbers as float64: the SDK writes 2.5e10 as 25000000000
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return m
}

func checkRequest(t testing.TB, m *Model, req *model.Request) {
	t.Helper()
	w, err := m.request(context.Background(), req)
	if err != nil {
		return // refused before anything is sent
	}
	// The hand-written encoder writes what encoding/json writes.
	var b []byte
	for _, stream := range []bool{false, true} {
		w.Stream = stream
		if b, err = w.encode(); err != nil {
			t.Fatal(err)
		}
		if want, err := json.Marshal(w); err != nil || string(b) != string(want) {
			t.Fatalf("encode:\n%s\njson.Marshal (%v):\n%s", b, err, want)
		}
	}
	got := jsonMap(t, b)
	if got["stream"] != true {
		t.Errorf("stream = %v", got["stream"])
	}
	delete(got, "stream") // the SDK sets it itself (NewStreaming)
	// The SDK's request type has no temperature: its API version rejects
	// sampling parameters, and the provider sends it only under older ones.
	if want := req.Temperature; m.temperature && want != nil {
		if got["temperature"] != *want {
			t.Errorf("temperature = %v, want %v", got["temperature"], *want)
		}
	} else if _, ok := got["temperature"]; ok {
		t.Errorf("temperature %v sent under API version %s", got["temperature"], defaultAPIVersion)
	}
	delete(got, "temperature")
	var p anth.MessageNewParams
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("the SDK does not decode the request: %v\n%s", err, b)
	}
	out, err := json.Marshal(p)
	if err != nil {
		if strings.Contains(err.Error(), "path cannot be empty") {
			return // the SDK cannot write a schema with an empty key, as {"":[]}
		}
		t.Fatal(err)
	}
	if diff := cmp.Diff(jsonMap(t, out), got); diff != "" {
		t.Errorf("the SDK reads the request otherwise (-sdk +codec):\n%s\n%s", diff, b)
	}
}

func TestOracleRequests(t *testing.T) {
	temp := 0.25
	m, err := New(&Options{Model: "default", APIVersion: "2023-06-01"})
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []*model.Request{
		{Model: "m", Messages: []model.Message{model.User("hi")}},
		{Model: "claude-x", MaxTokens: 99, Temperature: &temp, Messages: []model.Message{
			model.System("Be brief."), model.User("Weather and time?"),
			model.Assistant("Looking.  ",
				model.ToolCall{ID: "toolu_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
				model.ToolCall{ID: "call.2", Name: "get_time", Arguments: json.RawMessage(`"{\"city\":\"Par"`)},
				model.ToolCall{ID: "toolu_3", Name: "ping"},
			),
			model.ToolResult("toolu_1", "get_weather", `{"sky":"clear"}`, false),
			model.ToolResult("call.2", "get_time", "", true),
			model.ToolResult("toolu_9", "ping", "pong <&> \u2028 é", false),
			model.User("and?"),
			model.Assistant("Done. "),
		}, Tools: []model.ToolDef{
			{Name: "get_weather", Description: "Weather.", InputSchema: json.RawMessage(`{"properties":{"city":{"type":"string"}},"required":["city"]}`)},
			{Name: "get_time", InputSchema: json.RawMessage(` {"type":"object","additionalProperties":false} `)},
			{Name: "ping"},
		}},
	} {
		checkRequest(t, m, req)
	}
}

// FuzzOracleRequest builds requests from arbitrary text, arguments and
// schemas and checks each against the SDK.
func FuzzOracleRequest(f *testing.F) {
	f.Add("You are careful.", "Weather?", "Looking.", `{"city":"Paris"}`, "sunny", false, `{"type":"object"}`, 64)
	f.Add("", "", " ", `"{\"cut"`, "", true, ``, 0)
	f.Add("\x00\u2028<script>", "é\\\"", "\t", `[]`, "x", true, `{"a":[1,2.5e10,null,{"b":"\u00e9"}]}`, -5)
	m, err := New(&Options{Model: "default"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, system, user, text, args, result string, isError bool, schema string, maxTokens int) {
		for _, s := range []string{system, user, text, result} {
			if !utf8.ValidString(s) {
				return // encoding/json and the SDK both replace invalid UTF-8; the model never sends it
			}
		}
		req := &model.Request{Model: "m", MaxTokens: maxTokens, Messages: []model.Message{
			model.System(system), model.User(user),
			model.Assistant(text, model.ToolCall{ID: "c1", Name: "f", Arguments: json.RawMessage(args)}),
			model.ToolResult("c1", "f", result, isError),
		}, Tools: []model.ToolDef{{Name: "f", InputSchema: json.RawMessage(schema)}}}
		if !json.Valid([]byte(args)) {
			req.Messages[2].ToolCalls[0].Arguments = nil
		}
		checkRequest(t, m, req)
	})
}

// plainJSON reports whether data is JSON whose object keys are all unique
// and in lower case: encoding/json matches keys case-insensitively and keeps
// the last of two equal keys, the SDK differs on both, and no server sends
// either.
func plainJSON(data []byte) bool {
	d := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		object bool
		keys   map[string]bool
		expect bool
	}
	var stack []*frame
	for {
		tok, err := d.Token()
		if err != nil {
			return err.Error() == "EOF"
		}
		var top *frame
		if n := len(stack); n > 0 {
			top = stack[n-1]
		}
		isKey := top != nil && top.object && top.expect
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				if top != nil && top.object {
					top.expect = true
				}
				stack = append(stack, &frame{object: v == '{', keys: map[string]bool{}, expect: v == '{'})
				continue
			}
			stack = stack[:len(stack)-1]
			continue
		case string:
			if isKey {
				if top.keys[v] || strings.ToLower(v) != v || !utf8.ValidString(v) {
					return false
				}
				top.keys[v] = true
				top.expect = false
				continue
			}
		}
		if top != nil && top.object {
			top.expect = true
		}
	}
}

type readBlock struct {
	Type, Text, ID, Name string
	Input                string
}

type readMessage struct {
	ID, Type, Model, Stop string
	Usage                 [4]int64
	Content               []readBlock
}

// compact is raw JSON without insignificant space, "" for none.
func compact(raw []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

func fromSDK(m *anth.Message) readMessage {
	r := readMessage{ID: m.ID, Type: string(m.Type), Model: string(m.Model), Stop: string(m.StopReason),
		Usage: [4]int64{m.Usage.InputTokens, m.Usage.OutputTokens, m.Usage.CacheCreationInputTokens, m.Usage.CacheReadInputTokens}}
	for _, b := range m.Content {
		in := ""
		if b.Type == "tool_use" {
			in = compact(b.Input)
		}
		r.Content = append(r.Content, readBlock{b.Type, b.Text, b.ID, b.Name, in})
	}
	return r
}

func fromCodec(m *wireResponse) readMessage {
	u := m.Usage
	r := readMessage{ID: m.ID, Type: string(m.Type), Model: string(m.Model.name), Stop: string(m.StopReason),
		Usage: [4]int64{u.InputTokens, u.OutputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens}}
	for _, b := range m.Content {
		in := ""
		if b.Type == "tool_use" {
			in = compact(b.Input)
		}
		r.Content = append(r.Content, readBlock{string(b.Type), b.Text, b.ID, b.Name, in})
	}
	return r
}

// strictWords are the fields the codec decodes as provider.String, as plain
// strings: data that does not decode into them has a word of another type,
// which the codec leaves empty and the SDK keeps as raw text.
type strictWords struct {
	Type       string `json:"type"`
	Role       string `json:"role"`
	StopReason string `json:"stop_reason"`
	Content    []struct {
		Type string `json:"type"`
	} `json:"content"`
	ContentBlock struct {
		Type string `json:"type"`
	} `json:"content_block"`
	Delta struct {
		Type       string `json:"type"`
		StopReason string `json:"stop_reason"`
	} `json:"delta"`
}

// Invalid UTF-8 is left out as well: encoding/json replaces it with U+FFFD,
// the SDK keeps the bytes.
func wellTyped(data []byte) bool {
	var w strictWords
	return utf8.Valid(data) && json.Unmarshal(data, &w) == nil && plainJSON(data)
}

// checkMessage decodes a message with the codec and the SDK and compares.
func checkMessage(t testing.TB, data []byte) {
	t.Helper()
	var w wireResponse
	var d decoder
	if d.message(data, &w) != nil || !wellTyped(data) {
		return // only well-typed JSON: the two differ on what they forgive
	}
	var m anth.Message
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("the SDK does not decode %s: %v", data, err)
	}
	if diff := cmp.Diff(fromSDK(&m), fromCodec(&w)); diff != "" {
		t.Errorf("the SDK reads %s otherwise (-sdk +codec):\n%s", data, diff)
	}
}

// checkStream reads a recorded stream with the codec's accumulator and the
// SDK's, and compares the messages they assemble, and each event.
func checkStream(t testing.TB, name string, b []byte) int {
	t.Helper()
	var acc accumulator
	var sdk anth.Message
	ev := provider.NewEvents(bytes.NewReader(b))
	n := 0
	for ev.Next() {
		data := bytes.TrimSpace(ev.Data())
		typ := string(ev.Type())
		if typ == "ping" || typ == "error" || len(data) == 0 {
			continue
		}
		var w wireEvent
		if json.Unmarshal(data, &w) != nil || decodeEvent(ev.Type(), data, &w) != nil {
			continue
		}
		var s anth.MessageStreamEventUnion
		if err := json.Unmarshal(data, &s); err != nil {
			t.Fatalf("%s: the SDK does not decode %s: %v", name, data, err)
		}
		if typ != "" {
			s.Type = typ
		}
		var block, sdkBlock [5]string
		if cb := w.ContentBlock; cb != nil {
			block = [5]string{string(cb.Type), cb.Text, cb.ID, cb.Name, compact(cb.Input)}
		}
		if cb := s.ContentBlock; s.JSON.ContentBlock.Valid() {
			sdkBlock = [5]string{cb.Type, cb.Text, cb.ID, cb.Name, compact([]byte(cb.JSON.Input.Raw()))}
		}
		got := [6]string{string(w.Type), string(w.Delta.Type), provider.ValidText(string(w.Delta.Text)) + provider.ValidText(string(w.Delta.PartialJSON)) + w.Delta.Thinking + w.Delta.Signature, string(w.Delta.StopReason), fmt.Sprint(block)}
		want := [6]string{s.Type, s.Delta.Type, s.Delta.Text + s.Delta.PartialJSON + s.Delta.Thinking + s.Delta.Signature, string(s.Delta.StopReason), fmt.Sprint(sdkBlock)}
		if len(w.rawBlock) > 0 {
			got[5], want[5] = compact(w.rawBlock), compact([]byte(s.JSON.ContentBlock.Raw()))
		}
		if diff := cmp.Diff(want, got); diff != "" && wellTyped(data) {
			t.Errorf("%s: the SDK reads %s otherwise (-sdk +codec):\n%s", name, data, diff)
		}
		acc.add(&w)
		if err := sdk.Accumulate(s); err != nil {
			return n // the SDK gives up on this stream (a cut or odd one)
		}
		n++
	}
	if got, want := acc.raw(), rawReference(&acc); string(got) != string(want) {
		t.Errorf("%s: raw\n%s\nwant (json.Marshal)\n%s", name, got, want)
	}
	if !acc.stopped {
		return n
	}
	var got wireResponse
	if err := json.Unmarshal(acc.raw(), &got); err != nil {
		t.Fatalf("%s: Raw %s: %v", name, acc.raw(), err)
	}
	if _, ok := sdkAssemblesOtherwise[filepath.Base(name)]; ok {
		return n
	}
	if diff := cmp.Diff(fromSDK(&sdk), fromCodec(&got)); diff != "" {
		t.Errorf("%s: the assembled message differs from the SDK's (-sdk +codec):\n%s", name, diff)
	}
	return n
}

// sdkAssemblesOtherwise are the recorded streams whose assembled message
// the SDK gets wrong, and why; their events are still compared one by one.
var sdkAssemblesOtherwise = map[string]string{
	// The SDK appends the input_json_delta pieces to a content_block_start
	// input that is not {}, and so assembles {"path":"a.txt"}{"path":"a.txt"}
	// (invalid JSON, which it then drops); the codec takes the pieces.
	"input_both.sse": "input in content_block_start and in input_json_delta",
	// The SDK decodes each half of a surrogate pair cut between two
	// partial_json pieces to U+FFFD; the codec puts the character together.
	"split_characters.sse": "a surrogate pair cut between two pieces",
	// The same for a surrogate pair and a character's bytes cut between
	// two text deltas.
	"split_text.sse": "characters cut between two text deltas",
}

func TestOracleAnswers(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.json")
	serverFiles, _ := filepath.Glob("testdata/servers/*.json")
	files = append(files, serverFiles...)
	sse, _ := filepath.Glob("testdata/*.sse")
	servers, _ := filepath.Glob("testdata/servers/*.sse")
	n := 0
	for _, name := range append(append(files, sse...), servers...) {
		if strings.HasPrefix(filepath.Base(name), "request") {
			continue
		}
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".json") {
			checkMessage(t, b)
			n++
			continue
		}
		n += checkStream(t, name, b)
	}
	if n < 40 {
		t.Errorf("only %d answers and events compared", n)
	}
}

// FuzzOracleAnswer decodes arbitrary messages with the codec and the SDK;
// the seeds are the recorded answers and the messages of the streams.
func FuzzOracleAnswer(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil && !strings.HasPrefix(filepath.Base(name), "request") {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkMessage(t, data) })
}

// rawReference is accumulator.raw written with json.Marshal: the reference
// its hand-written bytes are compared with.
func rawReference(a *accumulator) json.RawMessage {
	content := make([]json.RawMessage, 0, len(a.order))
	for _, b := range a.order {
		var v any
		switch b.typ {
		case "text":
			v = wireText{Type: "text", Text: provider.ValidText(b.text.String())}
		case "thinking":
			v = struct {
				Type      string `json:"type"`
				Thinking  string `json:"thinking"`
				Signature string `json:"signature"`
			}{"thinking", b.text.String(), b.signature.String()}
		case "tool_use":
			in := b.arguments()
			if !bytes.HasPrefix(in, []byte("{")) {
				in = json.RawMessage("{}")
			}
			v = wireBlock{Type: "tool_use", ID: b.id, Name: b.name, Input: in}
		default:
			if !present(b.start) {
				continue
			}
			content = append(content, b.start)
			continue
		}
		bs, err := json.Marshal(v)
		if err != nil {
			return nil
		}
		content = append(content, bs)
	}
	stopSeq := a.start.StopSequence
	if !present(stopSeq) {
		stopSeq = json.RawMessage("null")
	}
	var stop *string
	if a.stop != "" {
		stop = &a.stop
	}
	b, err := json.Marshal(struct {
		ID           string                     `json:"id"`
		Type         string                     `json:"type"`
		Role         string                     `json:"role"`
		Model        string                     `json:"model"`
		Content      []json.RawMessage          `json:"content"`
		StopReason   *string                    `json:"stop_reason"`
		StopSequence json.RawMessage            `json:"stop_sequence"`
		Usage        map[string]json.RawMessage `json:"usage"`
	}{a.start.ID, "message", "assistant", a.model, content, stop, stopSeq, rawUsageReference(a)})
	if err != nil {
		return nil
	}
	return b
}

// rawUsageReference is the usage of Response.Raw merged in a map: the keys
// of every usage object the stream sent, in order, a later value that is
// not null replacing an earlier one (json.Marshal sorts the keys).
func rawUsageReference(a *accumulator) map[string]json.RawMessage {
	var u map[string]json.RawMessage
	for _, raw := range a.usages {
		if u == nil && bytes.HasPrefix(raw, []byte("{")) {
			u = map[string]json.RawMessage{}
		}
		for k, v := range provider.Members(raw) {
			if present(v) {
				u[string(k)] = v
			}
		}
	}
	return u
}

// TestRawByHand: Response.Raw of a stream, written by hand, is what
// json.Marshal writes, on a stream with every kind of block: thinking with
// its signature, a block type this package does not read (kept as sent),
// text that needs escaping, a tool_use without id, a stop sequence, and
// usage updated key by key with nulls left out.
func TestRawByHand(t *testing.T) {
	events := []string{
		`{"type":"message_start","message":{"id":"msg_<1>","type":"message","role":"assistant","model":"m\u00e9","content":[],"stop_reason":null,"stop_sequence":"END","usage":{"input_tokens":5,"output_tokens":1,"cache_read_input_tokens":null,"server_tool_use":{"web_search_requests":0}}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm <&>"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig1"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig2"}}`,
		`{"type":"content_block_start","index":1,"content_block":{ "type" : "web_search_tool_result", "tool_use_id":"s<1>", "content": [ {"url":"https://e.x/?a=1&b=2"} ] }}`,
		`{"type":"content_block_start","index":2,"content_block":{"type":"text","text":"a\"b\n"}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"\u2028 done"}}`,
		`{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","name":"f","input":{}}}`,
		`{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\"q\": \"<x>\"}"}}`,
		`{"type":"content_block_start","index":4,"content_block":{"type":"tool_use","id":"t2","name":"g","input":{}}}`,
		`{"type":"content_block_delta","index":4,"delta":{"type":"input_json_delta","partial_json":"[1,"}}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":30,"input_tokens":null}}`,
		`{"type":"message_stop"}`,
	}
	var b strings.Builder
	for _, e := range events {
		b.WriteString("data: " + e + "\n\n")
	}
	var acc accumulator
	ev := provider.NewEvents(strings.NewReader(b.String()))
	for ev.Next() {
		var w wireEvent
		if err := decodeEvent(ev.Type(), ev.Data(), &w); err != nil {
			t.Fatal(err)
		}
		acc.add(&w)
	}
	if len(acc.order) != 5 || !acc.stopped {
		t.Fatalf("%d blocks, stopped %v", len(acc.order), acc.stopped)
	}
	got, want := acc.raw(), rawReference(&acc)
	if string(got) != string(want) {
		t.Errorf("raw\n%s\nwant (json.Marshal)\n%s", got, want)
	}
	for _, s := range []string{`"signature":"sig1sig2"`, `"type":"web_search_tool_result"`, `"input":{}`, `"output_tokens":30`} {
		if !strings.Contains(string(got), s) {
			t.Errorf("raw %s lacks %s", got, s)
		}
	}
	if strings.Contains(string(got), "cache_read_input_tokens") {
		t.Errorf("raw %s keeps a null usage key", got)
	}
}
