package anthropic_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/model/modeltest"
)

type wireBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
	Content   []wireBlock     `json:"content"`
}

// wireRequest is the Messages API request body as the fake reads it.
type wireRequest struct {
	Model     string `json:"model"`
	MaxTokens int    `json:"max_tokens"`
	System    []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"system"`
	Messages []struct {
		Role    string      `json:"role"`
		Content []wireBlock `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
	Temperature *float64 `json:"temperature"`
	Stream      bool     `json:"stream"`
}

// decode turns the wire request back into tollgate's types: the system
// blocks become one system message each, first; tool_result blocks become
// tool messages.
func (w *wireRequest) decode() (*model.Request, error) {
	r := &model.Request{Model: w.Model, MaxTokens: w.MaxTokens, Temperature: w.Temperature}
	for _, s := range w.System {
		r.Messages = append(r.Messages, model.System(s.Text))
	}
	for i, m := range w.Messages {
		if i > 0 && w.Messages[i-1].Role == m.Role {
			return nil, fmt.Errorf("messages %d and %d have the same role %s", i-1, i, m.Role)
		}
		switch m.Role {
		case "user":
			for _, b := range m.Content {
				switch b.Type {
				case "text":
					r.Messages = append(r.Messages, model.User(b.Text))
				case "tool_result":
					var text []string
					for _, c := range b.Content {
						text = append(text, c.Text)
					}
					r.Messages = append(r.Messages, model.ToolResult(b.ToolUseID, "", strings.Join(text, ""), b.IsError))
				default:
					return nil, fmt.Errorf("user block type %q", b.Type)
				}
			}
		case "assistant":
			msg := model.Message{Role: model.RoleAssistant}
			for _, b := range m.Content {
				switch b.Type {
				case "text":
					msg.Content += b.Text
				case "tool_use":
					msg.ToolCalls = append(msg.ToolCalls, model.ToolCall{ID: b.ID, Name: b.Name, Arguments: b.Input})
				default:
					return nil, fmt.Errorf("assistant block type %q", b.Type)
				}
			}
			r.Messages = append(r.Messages, msg)
		default:
			return nil, fmt.Errorf("role %q", m.Role)
		}
	}
	for _, t := range w.Tools {
		r.Tools = append(r.Tools, model.ToolDef{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema})
	}
	return r, nil
}

// fake is a local Messages API server that plays scripted turns.
type fake struct {
	t     *testing.T
	srv   *httptest.Server
	mu    sync.Mutex
	turns []modeltest.Turn
	reqs  []*model.Request
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
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		http.Error(w, "not found: "+r.URL.Path, http.StatusNotFound)
		return
	}
	if r.Header.Get("x-api-key") != testKey || r.Header.Get("anthropic-version") == "" {
		writeError(w, http.StatusUnauthorized, "authentication_error", "invalid x-api-key")
		return
	}
	body, _ := io.ReadAll(r.Body)
	var wr wireRequest
	if err := json.Unmarshal(body, &wr); err != nil {
		f.t.Errorf("fake: bad request body: %v", err)
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	req, err := wr.decode()
	if err != nil {
		f.t.Errorf("fake: %v", err)
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	if f.next >= len(f.turns) {
		f.mu.Unlock()
		f.t.Errorf("fake: call %d, but the script has %d turns", f.next+1, len(f.turns))
		writeError(w, http.StatusBadRequest, "invalid_request_error", "script exhausted")
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
		writeStream(w, wr.Model, turn)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(message(wr.Model, turn))
}

func writeError(w http.ResponseWriter, code int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":%q}}`, typ, msg)
}

func wireStop(fr model.FinishReason) string {
	switch fr {
	case model.FinishToolCalls:
		return "tool_use"
	case model.FinishLength:
		return "max_tokens"
	case model.FinishContentFilter:
		return "refusal"
	}
	return "end_turn"
}

type obj = map[string]any

func message(modelID string, turn modeltest.Turn) obj {
	content := []obj{}
	if turn.Text != "" {
		content = append(content, obj{"type": "text", "text": turn.Text})
	}
	for _, c := range turn.ToolCalls {
		content = append(content, obj{"type": "tool_use", "id": c.ID, "name": c.Name, "input": c.Arguments})
	}
	return obj{
		"id": "msg_fake", "type": "message", "role": "assistant", "model": modelID, "content": content,
		"stop_reason": wireStop(turn.FinishReason), "stop_sequence": nil,
		"usage": obj{"input_tokens": turn.Usage.InputTokens, "output_tokens": turn.Usage.OutputTokens},
	}
}

// writeStream sends turn as Messages API events: the text in small
// text_delta pieces, each tool input split across input_json_delta events,
// then message_delta with the stop reason and usage, and message_stop.
func writeStream(w http.ResponseWriter, modelID string, turn modeltest.Turn) {
	w.Header().Set("Content-Type", "text/event-stream")
	flusher, _ := w.(http.Flusher)
	send := func(event string, data obj) {
		data["type"] = event
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	send("message_start", obj{"message": obj{
		"id": "msg_fake", "type": "message", "role": "assistant", "model": modelID, "content": []obj{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": obj{"input_tokens": turn.Usage.InputTokens, "output_tokens": 1},
	}})
	send("ping", obj{})
	idx := 0
	if turn.Text != "" {
		send("content_block_start", obj{"index": idx, "content_block": obj{"type": "text", "text": ""}})
		for _, piece := range modeltest.SplitText(turn.Text, 5) {
			send("content_block_delta", obj{"index": idx, "delta": obj{"type": "text_delta", "text": piece}})
		}
		send("content_block_stop", obj{"index": idx})
		idx++
	}
	for _, c := range turn.ToolCalls {
		send("content_block_start", obj{"index": idx, "content_block": obj{"type": "tool_use", "id": c.ID, "name": c.Name, "input": obj{}}})
		send("content_block_delta", obj{"index": idx, "delta": obj{"type": "input_json_delta", "partial_json": ""}})
		for _, piece := range modeltest.SplitText(string(c.Arguments), 7) {
			send("content_block_delta", obj{"index": idx, "delta": obj{"type": "input_json_delta", "partial_json": piece}})
		}
		send("content_block_stop", obj{"index": idx})
		idx++
	}
	send("message_delta", obj{"delta": obj{"stop_reason": wireStop(turn.FinishReason), "stop_sequence": nil}, "usage": obj{"output_tokens": turn.Usage.OutputTokens}})
	send("message_stop", obj{})
}

// canonical is a request exercising every part of the translation.
func canonical() *model.Request {
	return &model.Request{
		Model: "claude-test-verbatim@2025",
		Messages: []model.Message{
			model.System("You are careful."),
			model.User("Weather and time in Paris?"),
			model.Assistant("Looking.",
				model.ToolCall{ID: "toolu_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
				model.ToolCall{ID: "toolu_2", Name: "get_time", Arguments: json.RawMessage(`{"city":"Paris","format":"24h"}`)},
			),
			model.ToolResult("toolu_1", "get_weather", `{"sky":"clear"}`, false),
			model.ToolResult("toolu_2", "get_time", "time service down", true),
			model.System("Answer in one sentence."),
			model.Assistant("", model.ToolCall{ID: "toolu_3", Name: "get_time", Arguments: json.RawMessage(`{"city":"Paris"}`)}),
			model.ToolResult("toolu_3", "get_time", "", false),
			model.User("Thanks. Summarise."),
		},
		Tools: []model.ToolDef{
			{Name: "get_weather", Description: "Weather of a city.", InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
			{Name: "get_time", InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"format":{"enum":["12h","24h"]}},"additionalProperties":false}`)},
			{Name: "ping"},
		},
	}
}
