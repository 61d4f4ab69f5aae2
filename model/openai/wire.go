package openai

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tollgate-dev/tollgate/model"
)

// The Chat Completions wire format, as far as this package speaks it
// (https://platform.openai.com/docs/api-reference/chat), encoded and decoded
// with encoding/json. The tests decode the same bytes with the official SDK
// (github.com/openai/openai-go/v3) and compare: it is the oracle of this
// codec.

// wireRequest is a chat completion request.
type wireRequest struct {
	Model               string             `json:"model"`
	Messages            []wireMessage      `json:"messages"`
	Tools               []wireTool         `json:"tools,omitempty"`
	MaxCompletionTokens int                `json:"max_completion_tokens,omitempty"`
	Temperature         *float64           `json:"temperature,omitempty"`
	Stream              bool               `json:"stream,omitempty"`
	StreamOptions       *wireStreamOptions `json:"stream_options,omitempty"`
}

type wireStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// wireMessage is a message of a request. Content is a pointer so that an
// assistant message with tool calls and no text can leave it out.
type wireMessage struct {
	Role       string         `json:"role"`
	Content    *string        `json:"content,omitempty"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wireTool struct {
	Type     string          `json:"type"`
	Function wireFunctionDef `json:"function"`
}

type wireFunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// emptySchema is the parameters of a tool without an input schema.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// request translates a tollgate request into a chat completion request.
func (m *Model) request(req *model.Request) (*wireRequest, error) {
	id := cmp.Or(req.Model, m.model)
	if id == "" {
		return nil, errors.New("openai: no model ID: set Request.Model or Options.Model")
	}
	w := &wireRequest{Model: id, Messages: make([]wireMessage, 0, len(req.Messages))}
	for i := range req.Messages {
		msg := &req.Messages[i]
		switch msg.Role {
		case model.RoleSystem, model.RoleUser:
			w.Messages = append(w.Messages, wireMessage{Role: string(msg.Role), Content: &msg.Content})
		case model.RoleAssistant:
			a := wireMessage{Role: "assistant"}
			if msg.Content != "" || len(msg.ToolCalls) == 0 {
				a.Content = &msg.Content
			}
			if len(msg.ToolCalls) > 0 {
				a.ToolCalls = make([]wireToolCall, len(msg.ToolCalls))
				for j, c := range msg.ToolCalls {
					a.ToolCalls[j] = wireToolCall{ID: c.ID, Type: "function", Function: wireFunction{Name: c.Name, Arguments: wireArguments(c.Arguments)}}
				}
			}
			w.Messages = append(w.Messages, a)
		case model.RoleTool:
			w.Messages = append(w.Messages, wireMessage{Role: "tool", Content: &msg.Content, ToolCallID: msg.ToolCallID})
		default:
			return nil, fmt.Errorf("openai: message %d has unknown role %q", i, msg.Role)
		}
	}
	if len(req.Tools) > 0 {
		w.Tools = make([]wireTool, len(req.Tools))
		for i, t := range req.Tools {
			schema := emptySchema
			if len(t.InputSchema) > 0 {
				schema = bytes.TrimSpace(t.InputSchema)
				if len(schema) == 0 || schema[0] != '{' || !json.Valid(schema) {
					return nil, fmt.Errorf("openai: tool %q: input schema is not a JSON object", t.Name)
				}
			}
			w.Tools[i] = wireTool{Type: "function", Function: wireFunctionDef{Name: t.Name, Description: t.Description, Parameters: schema}}
		}
	}
	if req.MaxTokens > 0 {
		w.MaxCompletionTokens = req.MaxTokens
	}
	w.Temperature = req.Temperature
	return w, nil
}

// wireCompletion is a chat completion (the answer without streaming) or a
// chunk of a stream: a chunk's choices carry delta where a completion's carry
// message. Error, Object and Message are there for the error objects that
// compatible servers send in place of either.
type wireCompletion struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Created           int64           `json:"created"`
	Model             string          `json:"model"`
	Choices           []wireChoice    `json:"choices"`
	Usage             json.RawMessage `json:"usage"`
	ServiceTier       string          `json:"service_tier"`
	SystemFingerprint string          `json:"system_fingerprint"`
	Error             json.RawMessage `json:"error"`
}

type wireChoice struct {
	Index        int64          `json:"index"`
	Message      wireMessageOut `json:"message"`
	Delta        wireMessageOut `json:"delta"`
	FinishReason string         `json:"finish_reason"`
}

// wireMessageOut is the message (or delta) of an answer. Content null is "".
type wireMessageOut struct {
	Content   string            `json:"content"`
	ToolCalls []wireToolCallOut `json:"tool_calls"`
}

type wireToolCallOut struct {
	Index    int64        `json:"index"`
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// decode unmarshals data into v leniently, as the SDK does: a field whose
// JSON has another type than expected (a number sent as a string, a null
// where an object belongs) is left at its zero value instead of failing the
// whole answer. Only data that is not JSON at all is an error.
func decode(data []byte, v any) error {
	err := json.Unmarshal(data, v)
	if _, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		return nil
	}
	return err
}

// hasUsage reports whether a usage field was sent (not absent, not null).
func hasUsage(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}

// parseUsage decodes a usage object; anything else is zero usage.
func parseUsage(raw json.RawMessage) wireUsage {
	var u wireUsage
	if hasUsage(raw) {
		_ = decode(raw, &u)
	}
	return u
}
