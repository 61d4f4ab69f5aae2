package openai

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	oai "github.com/openai/openai-go/v3"

	"github.com/tollgate-dev/tollgate/internal/provider"
	"github.com/tollgate-dev/tollgate/model"
)

// The official SDK is the oracle of this package's wire codec: the requests
// the codec encodes must decode into the SDK's request type and encode back
// to the same JSON, and the answers and chunks the codec decodes must decode
// to the same values with the SDK's types.

// sdkRequest decodes b with the SDK's request type and encodes it again.
func sdkRequest(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var p oai.ChatCompletionNewParams
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("the SDK does not decode the request: %v\n%s", err, b)
	}
	out, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return jsonMap(t, out)
}

func jsonMap(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any // numbers as float64: the SDK writes 1.5e3 as 1500
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return m
}

// checkRequest encodes req as Generate and Stream would and compares it with
// the SDK's reading of it.
func checkRequest(t testing.TB, m *Model, req *model.Request) {
	t.Helper()
	w := new(wireRequest)
	if err := m.request(req, w); err != nil {
		return // refused before anything is sent
	}
	for _, stream := range []bool{false, true} {
		if stream {
			w.Stream, w.StreamOptions = true, &wireStreamOptions{IncludeUsage: true}
		}
		b, err := w.encode()
		if err != nil {
			t.Fatal(err)
		}
		// The hand-written encoder writes what encoding/json writes.
		if want, err := json.Marshal(w); err != nil || string(b) != string(want) {
			t.Fatalf("encode:\n%s\njson.Marshal (%v):\n%s", b, err, want)
		}
		got := jsonMap(t, b)
		// The SDK sets stream itself (NewStreaming) and does not read it.
		if stream != (got["stream"] == true) {
			t.Errorf("stream = %v in %s", got["stream"], b)
		}
		delete(got, "stream")
		if diff := cmp.Diff(sdkRequest(t, b), got); diff != "" {
			t.Errorf("the SDK reads the request otherwise (-sdk +codec):\n%s\n%s", diff, b)
		}
	}
}

func oracleRequests() []*model.Request {
	temp := 0.25
	return []*model.Request{
		{Model: "m", Messages: []model.Message{model.User("hi")}},
		{Model: "gpt-x", MaxTokens: 99, Temperature: &temp, Messages: []model.Message{
			model.System("Be brief."), model.User("Weather and time?"),
			model.Assistant("Looking.",
				model.ToolCall{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
				model.ToolCall{ID: "call_2", Name: "get_time", Arguments: json.RawMessage(`"{\"city\":\"Par"`)}, // cut off
				model.ToolCall{ID: "call_3", Name: "ping"},
			),
			model.ToolResult("call_1", "get_weather", `{"sky":"clear"}`, false),
			model.ToolResult("call_2", "get_time", "", true),
			model.ToolResult("call_3", "ping", "pong <&> \u2028 é", false),
			model.Assistant(""),
			model.User(""),
		}, Tools: []model.ToolDef{
			{Name: "get_weather", Description: "Weather.", InputSchema: json.RawMessage(` {"type":"object","properties":{"city":{"type":"string","enum":["Paris","<&>"]}},"required":["city"],"additionalProperties":false} `)},
			{Name: "ping"},
		}},
	}
}

func TestOracleRequests(t *testing.T) {
	m, err := New(&Options{Model: "default"})
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range oracleRequests() {
		checkRequest(t, m, req)
	}
}

// FuzzOracleRequest builds requests from arbitrary text, arguments and
// schemas and checks each against the SDK.
func FuzzOracleRequest(f *testing.F) {
	f.Add("You are careful.", "Weather?", "Looking.", `{"city":"Paris"}`, "sunny", false, `{"type":"object"}`, 0.5, 64)
	f.Add("", "", "", `"{\"cut"`, "", true, ``, -1.0, 0)
	f.Add("\x00\u2028<script>", "é\\\"", "\t", `[]`, "\xff", true, `{"a":[1,2.5e10,null,{"b":"\u00e9"}]}`, 1e300, -5)
	m, err := New(&Options{Model: "default"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, system, user, text, args, result string, isError bool, schema string, temp float64, maxTokens int) {
		for _, s := range []string{system, user, text, result} {
			if !utf8.ValidString(s) {
				return // encoding/json and the SDK both replace invalid UTF-8; the model never sends it
			}
		}
		req := &model.Request{Model: "m", MaxTokens: maxTokens, Temperature: &temp, Messages: []model.Message{
			model.System(system), model.User(user),
			model.Assistant(text, model.ToolCall{ID: "c1", Name: "f", Arguments: json.RawMessage(args)}),
			model.ToolResult("c1", "f", result, isError),
		}, Tools: []model.ToolDef{{Name: "f", InputSchema: json.RawMessage(schema)}}}
		if !json.Valid([]byte(args)) {
			req.Messages[2].ToolCalls[0].Arguments = nil
		}
		if temp != temp || temp > 1e300 || temp < -1e300 {
			req.Temperature = nil // NaN and infinities are not JSON
		}
		checkRequest(t, m, req)
	})
}

// checkCompletion decodes a chat completion or chunk with the codec and the
// SDK and compares what the provider reads of it.
func checkCompletion(t testing.TB, data []byte) {
	t.Helper()
	var c wireCompletion
	if json.Unmarshal(data, &c) != nil || !wellTyped(data) {
		return // only well-typed JSON: the two differ on what they forgive
	}
	// Generate's answer struct reads the same as the chunk struct.
	var a wireAnswer
	if err := json.Unmarshal(data, &a); err != nil {
		t.Fatalf("wireAnswer: %v", err)
	}
	if a.Model != c.Model || a.Usage.wireUsage != c.Usage.wireUsage || !cmp.Equal(a.Choices, c.Choices) || !bytes.Equal(a.Error, c.Error) {
		t.Errorf("%s: wireAnswer %+v, wireCompletion %+v", data, a, c)
	}
	var sc oai.ChatCompletionChunk
	if err := json.Unmarshal(data, &sc); err != nil {
		t.Fatalf("the SDK does not decode %s: %v", data, err)
	}
	var sm oai.ChatCompletion
	if err := json.Unmarshal(data, &sm); err != nil {
		t.Fatalf("the SDK does not decode %s: %v", data, err)
	}
	type call struct {
		Index                int64
		ID, Type, Name, Args string
	}
	type choice struct {
		Index                  int64
		Content, Delta, Finish string
		Calls, DeltaCalls      []call
	}
	type read struct {
		ID, Model, Fingerprint, Tier string
		Created                      int64
		HasUsage                     bool
		Usage                        [3]int64
		Choices                      []choice
	}
	got := read{ID: string(c.ID), Model: string(c.Model), Fingerprint: string(c.SystemFingerprint), Tier: string(c.ServiceTier), Created: c.Created, HasUsage: c.Usage.present()}
	u := c.Usage
	got.Usage = [3]int64{u.PromptTokens, u.CompletionTokens, u.TotalTokens}
	for _, ch := range c.Choices {
		x := choice{Index: ch.Index, Content: ch.Message.Content, Delta: provider.ValidText(string(ch.Delta.Content)), Finish: string(ch.FinishReason)}
		for _, tc := range ch.Message.ToolCalls {
			x.Calls = append(x.Calls, call{0, tc.ID, string(tc.Type), tc.Function.Name, provider.ValidText(string(tc.Function.Arguments))})
		}
		for _, tc := range ch.Delta.ToolCalls {
			x.DeltaCalls = append(x.DeltaCalls, call{tc.Index, tc.ID, string(tc.Type), tc.Function.Name, provider.ValidText(string(tc.Function.Arguments))})
		}
		got.Choices = append(got.Choices, x)
	}
	want := read{ID: sc.ID, Model: sc.Model, Fingerprint: sc.SystemFingerprint, Tier: string(sc.ServiceTier), Created: sc.Created, HasUsage: sc.JSON.Usage.Valid(),
		Usage: [3]int64{sc.Usage.PromptTokens, sc.Usage.CompletionTokens, sc.Usage.TotalTokens}}
	for i, ch := range sc.Choices {
		x := choice{Index: ch.Index, Delta: ch.Delta.Content, Finish: ch.FinishReason}
		if i < len(sm.Choices) {
			x.Content = sm.Choices[i].Message.Content
			for _, tc := range sm.Choices[i].Message.ToolCalls {
				x.Calls = append(x.Calls, call{0, tc.ID, tc.Type, tc.Function.Name, tc.Function.Arguments})
			}
		}
		for _, tc := range ch.Delta.ToolCalls {
			x.DeltaCalls = append(x.DeltaCalls, call{tc.Index, tc.ID, string(tc.Type), tc.Function.Name, tc.Function.Arguments})
		}
		want.Choices = append(want.Choices, x)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the SDK reads %s otherwise (-sdk +codec):\n%s", data, diff)
	}
}

// strictWords are the fields the codec decodes as provider.String, as plain
// strings: data that does not decode into them has such a field of another
// type, which the codec leaves as it is and the SDK keeps as raw text.
type strictWords struct {
	ID                string `json:"id"`
	Model             string `json:"model"`
	ServiceTier       string `json:"service_tier"`
	SystemFingerprint string `json:"system_fingerprint"`
	Choices           []struct {
		FinishReason string `json:"finish_reason"`
		Message      struct {
			ToolCalls []strictCall `json:"tool_calls"`
		} `json:"message"`
		Delta struct {
			ToolCalls []strictCall `json:"tool_calls"`
		} `json:"delta"`
	} `json:"choices"`
}

// strictCall is a tool call of strictWords: arguments sent as a JSON object
// (llama.cpp's server, Text Generation Inference) are the codec's arguments
// and not a string to the SDK.
type strictCall struct {
	Type     string `json:"type"`
	Function struct {
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// wellTyped reports whether data is plain JSON (see plainJSON) in valid
// UTF-8 (encoding/json replaces invalid bytes with U+FFFD, the SDK keeps
// them) whose words have the types the API gives them.
func wellTyped(data []byte) bool {
	var w strictWords
	return utf8.Valid(data) && json.Unmarshal(data, &w) == nil && plainJSON(data)
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
		expect bool // the next string token is a key
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

// TestOracleAnswers reads every recorded answer and stream of testdata with
// the codec and the SDK.
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
			checkCompletion(t, b)
			n++
			continue
		}
		ev := provider.NewEvents(bytes.NewReader(b))
		for ev.Next() {
			if d := ev.Data(); !bytes.HasPrefix(d, []byte("[DONE]")) && json.Valid(d) {
				checkCompletion(t, bytes.Clone(d))
				n++
			}
		}
	}
	if n < 50 {
		t.Errorf("only %d answers and chunks compared", n)
	}
}

// FuzzOracleAnswer decodes arbitrary answers and chunks with the codec and
// the SDK; the seeds are every chunk of testdata.
func FuzzOracleAnswer(f *testing.F) {
	sse, _ := filepath.Glob("testdata/servers/*.sse")
	for _, name := range append(sse, "testdata/stream_tool_calls.sse") {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		ev := provider.NewEvents(bytes.NewReader(b))
		for ev.Next() {
			f.Add(bytes.Clone(ev.Data()))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkCompletion(t, data) })
}

// rawReference is accumulator.raw written with json.Marshal: the reference
// its hand-written bytes are compared with.
func rawReference(a *accumulator) json.RawMessage {
	type function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type toolCall struct {
		ID       string   `json:"id"`
		Type     string   `json:"type"`
		Function function `json:"function"`
	}
	type message struct {
		Role      string     `json:"role"`
		Content   *string    `json:"content"`
		ToolCalls []toolCall `json:"tool_calls,omitempty"`
	}
	type choice struct {
		Index        int     `json:"index"`
		Message      message `json:"message"`
		FinishReason string  `json:"finish_reason"`
	}
	var content *string
	if t := provider.ValidText(a.text.String()); t != "" || len(a.calls) == 0 {
		content = &t
	}
	msg := message{Role: "assistant", Content: content}
	for _, b := range a.calls {
		msg.ToolCalls = append(msg.ToolCalls, toolCall{ID: b.id, Type: "function", Function: function{Name: b.name, Arguments: string(b.args)}})
	}
	b, err := json.Marshal(struct {
		ID                string          `json:"id"`
		Object            string          `json:"object"`
		Created           int64           `json:"created"`
		Model             string          `json:"model"`
		Choices           []choice        `json:"choices"`
		Usage             json.RawMessage `json:"usage,omitempty"`
		ServiceTier       string          `json:"service_tier,omitempty"`
		SystemFingerprint string          `json:"system_fingerprint,omitempty"`
	}{a.id, "chat.completion", a.created, a.model, []choice{{Message: msg, FinishReason: a.finish}}, a.rawUsage, a.tier, a.fingerprint})
	if err != nil {
		return nil
	}
	return b
}

// checkRaw assembles the stream b and compares the Raw it writes with
// rawReference's; it returns the number of chunks read.
func checkRaw(t testing.TB, name string, b []byte) int {
	t.Helper()
	ev := provider.NewEvents(bytes.NewReader(b))
	var (
		acc accumulator
		c   wireCompletion
		n   int
	)
	for {
		ok, perr := nextChunk(ev, &c)
		if !ok || perr != nil {
			break
		}
		acc.add(&c)
		n++
	}
	if got, want := acc.raw(), rawReference(&acc); string(got) != string(want) {
		t.Errorf("%s: raw\n%s\nwant (json.Marshal)\n%s", name, got, want)
	}
	return n
}

// TestRawByHand: Response.Raw of a stream, written by hand, is what
// json.Marshal writes, on every recorded stream and on odd text.
func TestRawByHand(t *testing.T) {
	sse, _ := filepath.Glob("testdata/*.sse")
	servers, _ := filepath.Glob("testdata/servers/*.sse")
	n := 0
	for _, name := range append(sse, servers...) {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		n += checkRaw(t, name, b)
	}
	if n < 30 {
		t.Errorf("only %d chunks read", n)
	}
	odd := `data: {"id":"<&>\u2028","created":7,"model":"m\u00e9","service_tier":"t","system_fingerprint":"fp","choices":[{"index":0,"delta":{"content":"a\"b\\c\n<x>","tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":"{\"a\": \"<\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1, "completion_tokens":2,"total_tokens":3,"x":"<&>"}}` + "\n\n"
	if checkRaw(t, "odd", []byte(odd)) != 1 {
		t.Error("the odd chunk was not read")
	}
}

// FuzzRawByHand compares Raw written by hand with json.Marshal's on
// arbitrary chunks.
func FuzzRawByHand(f *testing.F) {
	f.Add([]byte(`{"id":"x","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}],"usage":{"total_tokens":3}}`))
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}}]}}]}`))
	f.Fuzz(func(t *testing.T, chunk []byte) {
		if bytes.ContainsAny(chunk, "\r\n") {
			return
		}
		checkRaw(t, "fuzz", append(append([]byte("data: "), chunk...), '\n', '\n'))
	})
}
