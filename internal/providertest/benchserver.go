package providertest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The benchmark workload of [NewBenchServer]: the question, the final answer
// and the two tools' outputs that it checks for.
const (
	BenchQuestion = "What's the weather in Paris and what is 2+2?"
	BenchAnswer   = "The weather in Paris is Sunny, 22C. And 2 + 2 = 4."
	// BenchWeather and BenchSum are what get_weather(city=Paris) and
	// add(a=2,b=2) must return for the second turn to answer BenchAnswer.
	BenchWeather = "The weather in Paris is Sunny, 22C."
	BenchSum     = "4"
)

// BenchTools are the two tools of the workload as Chat Completions function
// tools and as Messages API tools.
var (
	BenchOpenAITools = []json.RawMessage{
		json.RawMessage(`{"type":"function","function":{"name":"get_weather","description":"Get the current weather for a city.","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}`),
		json.RawMessage(`{"type":"function","function":{"name":"add","description":"Add two integers.","parameters":{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}}}`),
	}
	BenchAnthropicTools = []json.RawMessage{
		json.RawMessage(`{"name":"get_weather","description":"Get the current weather for a city.","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}`),
		json.RawMessage(`{"name":"add","description":"Add two integers.","input_schema":{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}}`),
	}
)

// BenchServer is a deterministic local model server for benchmarks, the
// workload of the side-by-side benchmark: turn 1 (no tool result in the
// request) answers two parallel tool calls, get_weather {"city":"Paris"} and
// add {"a":2,"b":2}; turn 2 answers [BenchAnswer] when the tool results hold
// [BenchWeather] and [BenchSum], and a text starting with MISMATCH otherwise.
// It speaks the Chat Completions API at /v1/chat/completions and the Messages
// API at /v1/messages, as JSON or, when the request says "stream": true, as
// server-sent events shaped like each vendor's (one chunk or block per call,
// whole arguments). Answers are rendered once, so the server's own cost is
// one JSON decode and one write.
type BenchServer struct {
	// URL is the server's root, on 127.0.0.1.
	URL string
}

// BenchServerEnv is the environment variable that chooses where
// [NewBenchServer] runs its server: unset, in the benchmark's process;
// "process", in a child process (the test binary run again, see
// [ServeBenchChild]), as the side-by-side benchmark runs its mock, so that
// the server's work does not share the benchmark's heap and GC.
const BenchServerEnv = "TOLLGATE_BENCH_SERVER"

// NewBenchServer starts a BenchServer; it is closed when tb ends. With
// $TOLLGATE_BENCH_SERVER=process it runs in a child process, which needs the
// test package's TestMain to call [ServeBenchChild] first.
func NewBenchServer(tb testing.TB) *BenchServer {
	if os.Getenv(BenchServerEnv) == "process" {
		return childBenchServer(tb)
	}
	srv := httptest.NewServer(http.HandlerFunc(serveBench))
	tb.Cleanup(srv.Close)
	return &BenchServer{URL: srv.URL}
}

// childBenchServer runs the test binary again as a bench server and returns
// its URL; the child ends when its stdin closes (at tb's cleanup, or when
// this process dies).
func childBenchServer(tb testing.TB) *BenchServer {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), BenchServerEnv+"=child")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(io.LimitReader(stdout, 256)).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://127.0.0.1:") {
		tb.Fatalf("bench server child: %q, %v (does TestMain call providertest.ServeBenchChild?)", line, err)
	}
	return &BenchServer{URL: strings.TrimSpace(line)}
}

// ServeBenchChild, called first in a TestMain, makes the test binary a
// bench server when [NewBenchServer] started it as one
// ($TOLLGATE_BENCH_SERVER=child): it serves on a free loopback port, prints
// its URL on stdout and exits when its stdin closes. Otherwise it returns at
// once.
func ServeBenchChild() {
	if os.Getenv(BenchServerEnv) != "child" {
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("http://%s\n", ln.Addr())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	_ = http.Serve(ln, http.HandlerFunc(serveBench))
	os.Exit(1)
}

type benchRequest struct {
	Stream   bool `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

var (
	openAIJSON1, openAIJSON2, openAISSE1, openAISSE2             = openAIBench()
	anthropicJSON1, anthropicJSON2, anthropicSSE1, anthropicSSE2 = anthropicBench()
)

func serveBench(w http.ResponseWriter, r *http.Request) {
	var req benchRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	anthropic := r.URL.Path == "/v1/messages"
	var results []string
	for _, m := range req.Messages {
		switch {
		case m.Role == "tool":
			var s string
			_ = json.Unmarshal(m.Content, &s)
			results = append(results, s)
		case anthropic && m.Role == "user" && bytes.Contains(m.Content, []byte(`"tool_result"`)):
			var blocks []struct {
				Type    string          `json:"type"`
				Content json.RawMessage `json:"content"`
			}
			_ = json.Unmarshal(m.Content, &blocks)
			for _, b := range blocks {
				if b.Type == "tool_result" {
					results = append(results, textOf(b.Content))
				}
			}
		}
	}
	var body []byte
	switch {
	case r.URL.Path != "/v1/chat/completions" && !anthropic:
		http.NotFound(w, r)
		return
	case len(results) == 0:
		body = pick(anthropic, req.Stream, openAIJSON1, openAISSE1, anthropicJSON1, anthropicSSE1)
	case len(results) == 2 && results[0] == BenchWeather && results[1] == BenchSum:
		body = pick(anthropic, req.Stream, openAIJSON2, openAISSE2, anthropicJSON2, anthropicSSE2)
	default:
		text := fmt.Sprintf("MISMATCH: tool results %q", results)
		if anthropic {
			body = anthropicMessage(nil, text)
		} else {
			body = openAICompletion(nil, text)
		}
		req.Stream = false
	}
	if req.Stream {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	_, _ = w.Write(body)
}

func pick(anthropic, stream bool, oj, os, aj, as []byte) []byte {
	switch {
	case anthropic && stream:
		return as
	case anthropic:
		return aj
	case stream:
		return os
	}
	return oj
}

// textOf returns a tool_result's content as text: a string or text blocks.
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

type benchCall struct{ id, name, args string }

var benchCalls = []benchCall{{"call_weather_1", "get_weather", `{"city":"Paris"}`}, {"call_add_1", "add", `{"a":2,"b":2}`}}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

var openAIUsage = jobj{"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28}

func openAICompletion(calls []benchCall, text string) []byte {
	msg := jobj{"role": "assistant", "content": nil}
	finish := "stop"
	if len(calls) > 0 {
		var tcs []jobj
		for _, c := range calls {
			tcs = append(tcs, jobj{"id": c.id, "type": "function", "function": jobj{"name": c.name, "arguments": c.args}})
		}
		msg["tool_calls"] = tcs
		finish = "tool_calls"
	} else {
		msg["content"] = text
	}
	return mustJSON(jobj{"id": "chatcmpl-bench-0001", "object": "chat.completion", "created": 0, "model": "bench-model",
		"choices": []jobj{{"index": 0, "message": msg, "finish_reason": finish}}, "usage": openAIUsage})
}

func openAIStream(calls []benchCall, text string) []byte {
	var buf bytes.Buffer
	chunk := func(choices []jobj, usage jobj) {
		c := jobj{"id": "chatcmpl-bench-0001", "object": "chat.completion.chunk", "created": 0, "model": "bench-model", "choices": choices}
		if usage != nil {
			c["usage"] = usage
		}
		fmt.Fprintf(&buf, "data: %s\n\n", mustJSON(c))
	}
	delta := func(d jobj, finish any) []jobj { return []jobj{{"index": 0, "delta": d, "finish_reason": finish}} }
	finish := "stop"
	if len(calls) > 0 {
		for i, c := range calls {
			d := jobj{"tool_calls": []jobj{{"index": i, "id": c.id, "type": "function", "function": jobj{"name": c.name, "arguments": c.args}}}}
			if i == 0 {
				d["role"], d["content"] = "assistant", nil
			}
			chunk(delta(d, nil), nil)
		}
		finish = "tool_calls"
	} else {
		cut := strings.Index(text, ". ") + 1
		chunk(delta(jobj{"role": "assistant", "content": text[:cut]}, nil), nil)
		chunk(delta(jobj{"content": text[cut:]}, nil), nil)
	}
	chunk(delta(jobj{}, finish), nil)
	chunk([]jobj{}, openAIUsage)
	buf.WriteString("data: [DONE]\n\n")
	return buf.Bytes()
}

func openAIBench() (j1, j2, s1, s2 []byte) {
	return openAICompletion(benchCalls, ""), openAICompletion(nil, BenchAnswer), openAIStream(benchCalls, ""), openAIStream(nil, BenchAnswer)
}

func anthropicMessage(calls []benchCall, text string) []byte {
	var content []jobj
	stop := "end_turn"
	for _, c := range calls {
		content = append(content, jobj{"type": "tool_use", "id": c.id, "name": c.name, "input": json.RawMessage(c.args)})
		stop = "tool_use"
	}
	if text != "" {
		content = append(content, jobj{"type": "text", "text": text})
	}
	return mustJSON(jobj{"id": "msg_bench_0001", "type": "message", "role": "assistant", "model": "bench-model",
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": jobj{"input_tokens": 20, "output_tokens": 8}})
}

func anthropicStream(calls []benchCall, text string) []byte {
	var buf bytes.Buffer
	send := func(event string, data jobj) {
		data["type"] = event
		fmt.Fprintf(&buf, "event: %s\ndata: %s\n\n", event, mustJSON(data))
	}
	send("message_start", jobj{"message": jobj{"id": "msg_bench_0001", "type": "message", "role": "assistant", "model": "bench-model",
		"content": []jobj{}, "stop_reason": nil, "stop_sequence": nil, "usage": jobj{"input_tokens": 20, "output_tokens": 1}}})
	stop := "end_turn"
	for i, c := range calls {
		send("content_block_start", jobj{"index": i, "content_block": jobj{"type": "tool_use", "id": c.id, "name": c.name, "input": jobj{}}})
		send("content_block_delta", jobj{"index": i, "delta": jobj{"type": "input_json_delta", "partial_json": c.args}})
		send("content_block_stop", jobj{"index": i})
		stop = "tool_use"
	}
	if text != "" {
		cut := strings.Index(text, ". ") + 1
		send("content_block_start", jobj{"index": 0, "content_block": jobj{"type": "text", "text": ""}})
		send("content_block_delta", jobj{"index": 0, "delta": jobj{"type": "text_delta", "text": text[:cut]}})
		send("content_block_delta", jobj{"index": 0, "delta": jobj{"type": "text_delta", "text": text[cut:]}})
		send("content_block_stop", jobj{"index": 0})
	}
	send("message_delta", jobj{"delta": jobj{"stop_reason": stop, "stop_sequence": nil}, "usage": jobj{"output_tokens": 8}})
	send("message_stop", jobj{})
	return buf.Bytes()
}

func anthropicBench() (j1, j2, s1, s2 []byte) {
	return anthropicMessage(benchCalls, ""), anthropicMessage(nil, BenchAnswer), anthropicStream(benchCalls, ""), anthropicStream(nil, BenchAnswer)
}
