// Package benchwork is the workload of tollgate's provider benchmarks, shared
// by the providers' Go benchmarks (through internal/providertest) and by the
// interleaved comparison program internal/cmd/benchcmp: a deterministic local
// model server that speaks the Chat Completions and Messages APIs ([Mock]),
// the floor that runs the workload with net/http and encoding/json alone
// ([FloorOpenAI], [FloorAnthropic]), and the workload through a provider
// without the agent ([RunModel]).
//
// The workload is the side-by-side benchmark's: turn 1 answers two parallel
// tool calls, get_weather {"city":"Paris"} and add {"a":2,"b":2}; turn 2
// answers [Answer] when both tool results arrived, and a text that starts
// with MISMATCH otherwise.
package benchwork

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tollgate-dev/tollgate/internal/proc"
)

// The workload of [Mock]: the question, the final answer and the two tools'
// outputs that it checks for.
const (
	Question = "What's the weather in Paris and what is 2+2?"
	Answer   = "The weather in Paris is Sunny, 22C. And 2 + 2 = 4."
	// Weather and Sum are what get_weather(city=Paris) and add(a=2,b=2)
	// must return for the second turn to answer [Answer].
	Weather = "The weather in Paris is Sunny, 22C."
	Sum     = "4"
	// Mismatch starts the second turn's text when the tool results are not
	// [Weather] and [Sum], in that order.
	Mismatch = "MISMATCH"
)

// The two tools of the workload as Chat Completions function tools
// (OpenAITools) and as Messages API tools (AnthropicTools).
var (
	OpenAITools = []json.RawMessage{
		json.RawMessage(`{"type":"function","function":{"name":"get_weather","description":"Get the current weather for a city.","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}`),
		json.RawMessage(`{"type":"function","function":{"name":"add","description":"Add two integers.","parameters":{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}}}`),
	}
	AnthropicTools = []json.RawMessage{
		json.RawMessage(`{"name":"get_weather","description":"Get the current weather for a city.","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}`),
		json.RawMessage(`{"name":"add","description":"Add two integers.","input_schema":{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}}`),
	}
)

// Mock is a deterministic local model server for benchmarks. It speaks the
// Chat Completions API at POST /v1/chat/completions and the Messages API at
// POST /v1/messages, as JSON or, when the request says "stream": true, as
// server-sent events shaped like each vendor's (one chunk or block per call,
// whole arguments; the answer's text in two deltas). Answers are rendered
// once, so the server's own cost per request is one JSON decode (of at most
// 1 MiB) and one write. GET /stats answers its counters ([Stats]) as JSON.
// The zero value is ready to use; set [Mock.ConnState] as the http.Server's
// ConnState to count connections.
type Mock struct {
	requests, streamed, mismatches, conns atomic.Int64
}

// Stats are a [Mock]'s counters since it started.
type Stats struct {
	// Requests counts the model requests (POSTs to either API).
	Requests int64 `json:"requests"`
	// Streamed counts the model requests that asked for a stream.
	Streamed int64 `json:"streamed"`
	// Mismatches counts the second turns whose tool results were wrong.
	Mismatches int64 `json:"mismatches"`
	// Conns counts the connections accepted (with ConnState hooked up).
	Conns int64 `json:"conns"`
}

// Stats returns m's counters.
func (m *Mock) Stats() Stats {
	return Stats{Requests: m.requests.Load(), Streamed: m.streamed.Load(), Mismatches: m.mismatches.Load(), Conns: m.conns.Load()}
}

// ConnState counts new connections; set it as the http.Server's ConnState.
func (m *Mock) ConnState(_ net.Conn, st http.ConnState) {
	if st == http.StateNew {
		m.conns.Add(1)
	}
}

// ServerEnv is the environment variable by which a program becomes a
// [Mock] in a child process: [StartChild] runs the current executable again
// with ServerEnv=child, and that program's main (or a test binary's
// TestMain) calls [ServeChild] first.
const ServerEnv = "TOLLGATE_BENCH_SERVER"

// Child is a [Mock] running in a child process, on loopback, so that the
// server's work does not share the measured process's heap, GC and CPU time.
type Child struct {
	// URL is the server's root, http://127.0.0.1:PORT.
	URL string
	// PID is the child's process ID.
	PID   int
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// StartChild runs the current executable again as a [Mock] (see
// [ServerEnv]) and returns it once it listens. The child inherits only the
// environment of [proc.DefaultEnvAllow] and the Go runtime's GO* variables:
// no provider key reaches it. It ends when Close
// closes its stdin, or when this process dies. The error says what the child
// printed instead of its URL when it did not start (a main that does not
// call [ServeChild] first).
func StartChild() (*Child, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("benchwork: the mock's executable: %w", err)
	}
	cmd := exec.Command(self)
	// The child needs no key nor anything else of the environment but the
	// Go runtime's settings (GOMAXPROCS, GOGC, GODEBUG, GOCOVERDIR, ...).
	cmd.Env = append(proc.Env(os.Environ(), []string{"GO*"}), ServerEnv+"=child")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("benchwork: starting the mock: %w", err)
	}
	c := &Child{PID: cmd.Process.Pid, cmd: cmd, stdin: stdin}
	line, err := bufio.NewReader(io.LimitReader(stdout, 256)).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://127.0.0.1:") {
		c.Close()
		return nil, fmt.Errorf("benchwork: the mock child printed %q instead of its URL (%v); does its main call benchwork.ServeChild first?", line, err)
	}
	c.URL = strings.TrimSpace(line)
	return c, nil
}

// Close ends the child (by closing its stdin) and waits for it, at most 5 s
// before it kills it.
func (c *Child) Close() error {
	c.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		_ = c.cmd.Process.Kill() // our own child, by its PID
		return <-done
	}
}

// ServeChild, called first in a main or TestMain, makes the program a [Mock]
// when [StartChild] started it as one ($TOLLGATE_BENCH_SERVER=child): it
// serves on a free loopback port, prints its URL on stdout and exits when
// its stdin closes. Otherwise it returns at once.
func ServeChild() {
	if os.Getenv(ServerEnv) != "child" {
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
	m := &Mock{}
	srv := &http.Server{Handler: m, ConnState: m.ConnState, ReadHeaderTimeout: 10 * time.Second}
	_ = srv.Serve(ln)
	os.Exit(1)
}

// FetchStats reads the counters of the [Mock] at url (its root).
func FetchStats(ctx context.Context, url string) (Stats, error) {
	var s Stats
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/stats", nil)
	if err != nil {
		return s, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("benchwork: GET %s/stats: %s", url, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&s); err != nil {
		return s, fmt.Errorf("benchwork: GET %s/stats: %w", url, err)
	}
	return s, nil
}

type jobj = map[string]any

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

// ServeHTTP answers one request of the workload; see [Mock].
func (m *Mock) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	anthropic := r.URL.Path == "/v1/messages"
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/stats":
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(m.Stats())
		return
	case r.Method != http.MethodPost || (!anthropic && r.URL.Path != "/v1/chat/completions"):
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	m.requests.Add(1)
	var req benchRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	if req.Stream {
		m.streamed.Add(1)
	}
	var results []string
	for _, msg := range req.Messages {
		switch {
		case msg.Role == "tool":
			var s string
			_ = json.Unmarshal(msg.Content, &s)
			results = append(results, s)
		case anthropic && msg.Role == "user" && bytes.Contains(msg.Content, []byte(`"tool_result"`)):
			var blocks []struct {
				Type    string          `json:"type"`
				Content json.RawMessage `json:"content"`
			}
			_ = json.Unmarshal(msg.Content, &blocks)
			for _, b := range blocks {
				if b.Type == "tool_result" {
					results = append(results, textOf(b.Content))
				}
			}
		}
	}
	var body []byte
	switch {
	case len(results) == 0:
		body = pick(anthropic, req.Stream, openAIJSON1, openAISSE1, anthropicJSON1, anthropicSSE1)
	case len(results) == 2 && results[0] == Weather && results[1] == Sum:
		body = pick(anthropic, req.Stream, openAIJSON2, openAISSE2, anthropicJSON2, anthropicSSE2)
	default:
		// Answered in the form asked for, so that a streaming client reads
		// the MISMATCH as its answer rather than failing to decode it.
		m.mismatches.Add(1)
		text := fmt.Sprintf("%s: tool results %q", Mismatch, results)
		switch {
		case anthropic && req.Stream:
			body = anthropicStream(nil, text)
		case anthropic:
			body = anthropicMessage(nil, text)
		case req.Stream:
			body = openAIStream(nil, text)
		default:
			body = openAICompletion(nil, text)
		}
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
	return openAICompletion(benchCalls, ""), openAICompletion(nil, Answer), openAIStream(benchCalls, ""), openAIStream(nil, Answer)
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
	return anthropicMessage(benchCalls, ""), anthropicMessage(nil, Answer), anthropicStream(benchCalls, ""), anthropicStream(nil, Answer)
}
