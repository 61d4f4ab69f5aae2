package openai_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/model/modeltest"
)

// wireRequest is the Chat Completions request body as the fake reads it.
type wireRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	MaxCompletionTokens int      `json:"max_completion_tokens"`
	Temperature         *float64 `json:"temperature"`
	Stream              bool     `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// decode turns the wire request back into tollgate's types.
func (w *wireRequest) decode() (*model.Request, error) {
	r := &model.Request{Model: w.Model, MaxTokens: w.MaxCompletionTokens, Temperature: w.Temperature}
	for i, m := range w.Messages {
		var text string
		if len(m.Content) > 0 && string(m.Content) != "null" {
			if err := json.Unmarshal(m.Content, &text); err != nil {
				return nil, fmt.Errorf("message %d: content is not a string: %s", i, m.Content)
			}
		}
		msg := model.Message{Role: model.Role(m.Role), Content: text, ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			if c.Type != "function" {
				return nil, fmt.Errorf("message %d: tool call type %q", i, c.Type)
			}
			msg.ToolCalls = append(msg.ToolCalls, model.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: json.RawMessage(c.Function.Arguments)})
		}
		r.Messages = append(r.Messages, msg)
	}
	for _, t := range w.Tools {
		if t.Type != "function" {
			return nil, fmt.Errorf("tool type %q", t.Type)
		}
		r.Tools = append(r.Tools, model.ToolDef{Name: t.Function.Name, Description: t.Function.Description, InputSchema: t.Function.Parameters})
	}
	return r, nil
}

// fake is a local Chat Completions server that plays scripted turns.
type fake struct {
	t     *testing.T
	srv   *httptest.Server
	mu    sync.Mutex
	turns []modeltest.Turn
	reqs  []*model.Request
	hdrs  []http.Header
	next  int
}

func newFake(t *testing.T, turns []modeltest.Turn) *fake {
	f := &fake{t: t, turns: turns}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) requests() []*model.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*model.Request(nil), f.reqs...)
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, "not found: "+r.URL.Path, http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var wr wireRequest
	if err := json.Unmarshal(body, &wr); err != nil {
		f.t.Errorf("fake: bad request body: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req, err := wr.decode()
	if err != nil {
		f.t.Errorf("fake: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.hdrs = append(f.hdrs, r.Header.Clone())
	if f.next >= len(f.turns) {
		f.mu.Unlock()
		f.t.Errorf("fake: call %d, but the script has %d turns", f.next+1, len(f.turns))
		writeError(w, http.StatusBadRequest, "script exhausted")
		return
	}
	turn := f.turns[f.next]
	f.next++
	f.mu.Unlock()
	if turn.Stall {
		<-r.Context().Done()
		return
	}
	if wr.Stream {
		if wr.StreamOptions == nil || !wr.StreamOptions.IncludeUsage {
			f.t.Error("fake: streaming request without stream_options.include_usage")
		}
		writeStream(w, wr.Model, turn)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(completion(wr.Model, turn))
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error","param":null,"code":null}}`, msg)
}

func wireFinish(fr model.FinishReason) string {
	switch fr {
	case model.FinishToolCalls:
		return "tool_calls"
	case model.FinishLength:
		return "length"
	case model.FinishContentFilter:
		return "content_filter"
	}
	return "stop"
}

type obj = map[string]any

func wireUsage(u model.Usage) obj {
	return obj{"prompt_tokens": u.InputTokens, "completion_tokens": u.OutputTokens, "total_tokens": u.TotalTokens}
}

func completion(modelID string, turn modeltest.Turn) obj {
	msg := obj{"role": "assistant", "content": nil, "refusal": nil}
	if turn.Text != "" {
		msg["content"] = turn.Text
	}
	if len(turn.ToolCalls) > 0 {
		var calls []obj
		for _, c := range turn.ToolCalls {
			calls = append(calls, obj{"id": c.ID, "type": "function", "function": obj{"name": c.Name, "arguments": string(c.Arguments)}})
		}
		msg["tool_calls"] = calls
	}
	return obj{
		"id": "chatcmpl-fake", "object": "chat.completion", "created": 1750000000, "model": modelID,
		"choices": []obj{{"index": 0, "message": msg, "finish_reason": wireFinish(turn.FinishReason), "logprobs": nil}},
		"usage":   wireUsage(turn.Usage),
	}
}

// writeStream sends turn as Chat Completions chunks: text in small deltas,
// each tool call's arguments split across several chunks, the finish reason,
// a usage chunk with no choices, then [DONE].
func writeStream(w http.ResponseWriter, modelID string, turn modeltest.Turn) {
	w.Header().Set("Content-Type", "text/event-stream")
	flusher, _ := w.(http.Flusher)
	send := func(choices []obj, usage obj) {
		c := obj{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1750000000, "model": modelID, "choices": choices}
		if usage != nil {
			c["usage"] = usage
		}
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	delta := func(d obj, finish any) []obj {
		return []obj{{"index": 0, "delta": d, "finish_reason": finish, "logprobs": nil}}
	}
	send(delta(obj{"role": "assistant", "content": ""}, nil), nil)
	for _, piece := range modeltest.SplitText(turn.Text, 5) {
		send(delta(obj{"content": piece}, nil), nil)
	}
	for i, c := range turn.ToolCalls {
		send(delta(obj{"tool_calls": []obj{{"index": i, "id": c.ID, "type": "function", "function": obj{"name": c.Name, "arguments": ""}}}}, nil), nil)
		for _, piece := range modeltest.SplitText(string(c.Arguments), 7) {
			send(delta(obj{"tool_calls": []obj{{"index": i, "function": obj{"arguments": piece}}}}, nil), nil)
		}
	}
	send(delta(obj{}, wireFinish(turn.FinishReason)), nil)
	send([]obj{}, wireUsage(turn.Usage))
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// canonical is a request exercising every part of the translation.
func canonical() *model.Request {
	temp := 0.5
	return &model.Request{
		Model: "gpt-test-verbatim:2025",
		Messages: []model.Message{
			model.System("You are careful."),
			model.User("Weather and time in Paris?"),
			model.Assistant("Looking.",
				model.ToolCall{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
				model.ToolCall{ID: "call_2", Name: "get_time", Arguments: json.RawMessage(`{"city":"Paris","format":"24h"}`)},
			),
			model.ToolResult("call_1", "get_weather", `{"sky":"clear"}`, false),
			model.ToolResult("call_2", "get_time", "time service down", true),
			model.Assistant("", model.ToolCall{ID: "call_3", Name: "get_time", Arguments: json.RawMessage(`{"city":"Paris"}`)}),
			model.ToolResult("call_3", "get_time", "14:05", false),
			model.User("Thanks. Summarise."),
		},
		Tools: []model.ToolDef{
			{Name: "get_weather", Description: "Weather of a city.", InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
			{Name: "get_time", InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"format":{"enum":["12h","24h"]}}}`)},
			{Name: "ping"},
		},
		MaxTokens:   256,
		Temperature: &temp,
	}
}
