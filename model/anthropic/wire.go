package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
)

// The Messages API wire format, as far as this package speaks it
// (https://docs.anthropic.com/en/api/messages), encoded and decoded with
// encoding/json. The tests decode the same bytes with the official SDK
// (github.com/anthropics/anthropic-sdk-go/v2) and compare: it is the oracle
// of this codec.

// wireRequest is a Messages API request.
type wireRequest struct {
	Model       string        `json:"model"`
	MaxTokens   int           `json:"max_tokens"`
	Messages    []wireMessage `json:"messages"`
	System      []wireText    `json:"system,omitempty"`
	Tools       []wireTool    `json:"tools,omitempty"`
	Temperature *float64      `json:"temperature,omitempty"`
	Stream      bool          `json:"stream,omitempty"`
}

type wireMessage struct {
	Role    string      `json:"role"`
	Content []wireBlock `json:"content"`
}

// wireBlock is a content block of a request: text, tool_use or
// tool_result.
type wireBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   []wireText      `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

type wireText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func textBlock(text string) wireBlock { return wireBlock{Type: "text", Text: text} }

type wireTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// wireResponse is a message: the answer without streaming, and the message
// of a stream's message_start event.
type wireResponse struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	Role       string          `json:"role"`
	Model      string          `json:"model"`
	Content    []wireBlockOut  `json:"content"`
	StopReason string          `json:"stop_reason"`
	Usage      json.RawMessage `json:"usage"`
	Error      *wireError      `json:"error"`
}

// wireBlockOut is a content block of an answer. Input is kept as sent.
type wireBlockOut struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type wireUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

// input is the usage's input tokens, cached ones included.
func (u wireUsage) input() int64 {
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}

// wireError is the error object of an error answer or event:
// {"type":"error","error":{"type","message"}}.
type wireError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// wireEvent is one event of a stream.
type wireEvent struct {
	Type         string          `json:"type"`
	Message      json.RawMessage `json:"message"`
	Index        int64           `json:"index"`
	ContentBlock json.RawMessage `json:"content_block"`
	Delta        wireDelta       `json:"delta"`
	Usage        json.RawMessage `json:"usage"`
	Error        *wireError      `json:"error"`
}

type wireDelta struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	PartialJSON string `json:"partial_json"`
	Thinking    string `json:"thinking"`
	Signature   string `json:"signature"`
	StopReason  string `json:"stop_reason"`
}

// decode unmarshals data into v leniently, as the SDK does: a field whose
// JSON has another type than expected is left at its zero value instead of
// failing the whole answer. Only data that is not JSON at all is an error.
func decode(data []byte, v any) error {
	err := json.Unmarshal(data, v)
	if _, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		return nil
	}
	return err
}

// present reports whether a field was sent (not absent, not null).
func present(raw json.RawMessage) bool {
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

func parseUsage(raw json.RawMessage) wireUsage {
	var u wireUsage
	if present(raw) {
		_ = decode(raw, &u)
	}
	return u
}
