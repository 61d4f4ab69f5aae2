package providertest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Turn is one answer of an [LLMServer]: text streamed in 4-byte pieces, then
// tool calls whose arguments are split into 5-byte pieces across chunks.
type Turn struct {
	Text  string
	Calls []Call
}

// Call is a tool call of a [Turn]; Args is the JSON arguments text.
type Call struct {
	ID, Name, Args string
}

// LLMServer is a local fake of the OpenAI Chat Completions API
// (/v1/chat/completions) and the Anthropic Messages API (/v1/messages) that
// answers as an SSE stream when the request says "stream": true and as one
// JSON object (the same ids, text, calls and usage) otherwise. Like the
// scripted model it is stateless:
// it plays the turn whose index is the number of assistant messages in the
// request. It records every request's headers, decoded body and raw body.
//
// Usage reported: OpenAI 20 prompt + 7 completion = 27 tokens per turn;
// Anthropic 20 input, 1 then 7 output.
type LLMServer struct {
	// URL is the server's root, on 127.0.0.1.
	URL string
	// Fail, if set before the first request, answers every request instead.
	Fail func(w http.ResponseWriter)

	turns   []Turn
	mu      sync.Mutex
	headers []http.Header
	bodies  []map[string]any
	raw     []string
}

// NewLLMServer starts an LLMServer playing turns; it is closed when t ends.
func NewLLMServer(t testing.TB, turns ...Turn) *LLMServer {
	s := &LLMServer{turns: turns}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Requests returns the headers, decoded bodies and raw bodies received so far.
func (s *LLMServer) Requests() ([]http.Header, []map[string]any, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.headers...), append([]map[string]any(nil), s.bodies...), append([]string(nil), s.raw...)
}

func (s *LLMServer) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	s.mu.Lock()
	s.headers = append(s.headers, r.Header.Clone())
	s.bodies = append(s.bodies, body)
	s.raw = append(s.raw, string(raw))
	s.mu.Unlock()
	if s.Fail != nil {
		s.Fail(w)
		return
	}
	n := 0
	msgs, _ := body["messages"].([]any)
	for _, m := range msgs {
		if mm, _ := m.(map[string]any); mm["role"] == "assistant" {
			n++
		}
	}
	if n >= len(s.turns) {
		http.Error(w, `{"error":{"message":"script exhausted"}}`, http.StatusBadRequest)
		return
	}
	modelID, _ := body["model"].(string)
	stream, _ := body["stream"].(bool)
	switch {
	case r.URL.Path == "/v1/chat/completions" && stream:
		writeOpenAISSE(w, modelID, s.turns[n])
	case r.URL.Path == "/v1/chat/completions":
		writeOpenAIJSON(w, modelID, s.turns[n])
	case r.URL.Path == "/v1/messages" && stream:
		writeAnthropicSSE(w, modelID, s.turns[n])
	case r.URL.Path == "/v1/messages":
		writeAnthropicJSON(w, modelID, s.turns[n])
	default:
		http.NotFound(w, r)
	}
}

type jobj = map[string]any

// Pieces cuts s into pieces of at most n bytes (ASCII test text).
func Pieces(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func writeOpenAISSE(w http.ResponseWriter, modelID string, turn Turn) {
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(choices []jobj, usage jobj) {
		c := jobj{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1750000000, "model": modelID, "choices": choices}
		if usage != nil {
			c["usage"] = usage
		}
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\n\n", b)
		flush(w)
	}
	delta := func(d jobj, finish any) []jobj {
		return []jobj{{"index": 0, "delta": d, "finish_reason": finish}}
	}
	send(delta(jobj{"role": "assistant", "content": ""}, nil), nil)
	for _, p := range Pieces(turn.Text, 4) {
		send(delta(jobj{"content": p}, nil), nil)
	}
	for i, c := range turn.Calls {
		send(delta(jobj{"tool_calls": []jobj{{"index": i, "id": c.ID, "type": "function", "function": jobj{"name": c.Name, "arguments": ""}}}}, nil), nil)
		for _, p := range Pieces(c.Args, 5) {
			send(delta(jobj{"tool_calls": []jobj{{"index": i, "function": jobj{"arguments": p}}}}, nil), nil)
		}
	}
	finish := "stop"
	if len(turn.Calls) > 0 {
		finish = "tool_calls"
	}
	send(delta(jobj{}, finish), nil)
	send([]jobj{}, jobj{"prompt_tokens": 20, "completion_tokens": 7, "total_tokens": 27})
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func writeAnthropicSSE(w http.ResponseWriter, modelID string, turn Turn) {
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(event string, data jobj) {
		data["type"] = event
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		flush(w)
	}
	send("message_start", jobj{"message": jobj{"id": "msg_fake", "type": "message", "role": "assistant", "model": modelID,
		"content": []jobj{}, "stop_reason": nil, "stop_sequence": nil, "usage": jobj{"input_tokens": 20, "output_tokens": 1}}})
	idx := 0
	if turn.Text != "" {
		send("content_block_start", jobj{"index": idx, "content_block": jobj{"type": "text", "text": ""}})
		for _, p := range Pieces(turn.Text, 4) {
			send("content_block_delta", jobj{"index": idx, "delta": jobj{"type": "text_delta", "text": p}})
		}
		send("content_block_stop", jobj{"index": idx})
		idx++
	}
	for _, c := range turn.Calls {
		send("content_block_start", jobj{"index": idx, "content_block": jobj{"type": "tool_use", "id": c.ID, "name": c.Name, "input": jobj{}}})
		for _, p := range Pieces(c.Args, 5) {
			send("content_block_delta", jobj{"index": idx, "delta": jobj{"type": "input_json_delta", "partial_json": p}})
		}
		send("content_block_stop", jobj{"index": idx})
		idx++
	}
	stop := "end_turn"
	if len(turn.Calls) > 0 {
		stop = "tool_use"
	}
	send("message_delta", jobj{"delta": jobj{"stop_reason": stop, "stop_sequence": nil}, "usage": jobj{"output_tokens": 7}})
	send("message_stop", jobj{})
}

func writeOpenAIJSON(w http.ResponseWriter, modelID string, turn Turn) {
	msg := jobj{"role": "assistant", "content": turn.Text}
	finish := "stop"
	if len(turn.Calls) > 0 {
		var calls []jobj
		for _, c := range turn.Calls {
			calls = append(calls, jobj{"id": c.ID, "type": "function", "function": jobj{"name": c.Name, "arguments": c.Args}})
		}
		msg["tool_calls"] = calls
		finish = "tool_calls"
	}
	b, _ := json.Marshal(jobj{"id": "chatcmpl-fake", "object": "chat.completion", "created": 1750000000, "model": modelID,
		"choices": []jobj{{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   jobj{"prompt_tokens": 20, "completion_tokens": 7, "total_tokens": 27}})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

func writeAnthropicJSON(w http.ResponseWriter, modelID string, turn Turn) {
	content := []jobj{}
	if turn.Text != "" {
		content = append(content, jobj{"type": "text", "text": turn.Text})
	}
	stop := "end_turn"
	for _, c := range turn.Calls {
		content = append(content, jobj{"type": "tool_use", "id": c.ID, "name": c.Name, "input": json.RawMessage(c.Args)})
		stop = "tool_use"
	}
	b, _ := json.Marshal(jobj{"id": "msg_fake", "type": "message", "role": "assistant", "model": modelID,
		"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": jobj{"input_tokens": 20, "output_tokens": 7}})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
