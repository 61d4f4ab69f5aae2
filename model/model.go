package model

import (
	"context"
	"encoding/json"
	"iter"
)

// Role is the author of a [Message].
type Role string

// The roles of a conversation.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// ToolCall is one tool call requested by the model in an assistant message.
type ToolCall struct {
	// ID is unique within the run; the tool result names it.
	ID string `json:"id"`
	// Name is the tool's name as the model wrote it.
	Name string `json:"name"`
	// Arguments is the JSON object of arguments as the model wrote it.
	Arguments json.RawMessage `json:"arguments"`
}

// Message is one entry of a transcript.
//
//   - system and user messages carry Content;
//   - assistant messages carry Content and/or ToolCalls;
//   - tool messages carry the result of one tool call: ToolCallID, Name, Content
//     and IsError.
type Message struct {
	Role       Role       `json:"role"`
	Content    string     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"toolCalls,omitempty"`
	ToolCallID string     `json:"toolCallId,omitempty"`
	// Name is the tool's name on a tool message.
	Name string `json:"name,omitempty"`
	// IsError marks a failed tool result on a tool message.
	IsError bool `json:"isError,omitempty"`
}

// System returns a system message.
func System(text string) Message { return Message{Role: RoleSystem, Content: text} }

// User returns a user message.
func User(text string) Message { return Message{Role: RoleUser, Content: text} }

// Assistant returns an assistant message with text and optional tool calls.
func Assistant(text string, calls ...ToolCall) Message {
	return Message{Role: RoleAssistant, Content: text, ToolCalls: calls}
}

// ToolResult returns the tool message answering call id of tool name.
func ToolResult(id, name, output string, isError bool) Message {
	return Message{Role: RoleTool, ToolCallID: id, Name: name, Content: output, IsError: isError}
}

// ToolDef is a tool as the model sees it: name, description and the JSON Schema
// of its arguments. Hints are deliberately absent: they are never sent to a model.
type ToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
}

// Usage counts tokens. Totals are summed across turns by the agent.
type Usage struct {
	InputTokens  int `json:"inputTokens"`
	OutputTokens int `json:"outputTokens"`
	TotalTokens  int `json:"totalTokens"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{u.InputTokens + v.InputTokens, u.OutputTokens + v.OutputTokens, u.TotalTokens + v.TotalTokens}
}

// FinishReason says why the model stopped.
type FinishReason string

// Finish reasons, mapped from each provider's own vocabulary.
const (
	FinishStop          FinishReason = "stop"
	FinishToolCalls     FinishReason = "tool_calls"
	FinishLength        FinishReason = "length"
	FinishContentFilter FinishReason = "content_filter"
	FinishOther         FinishReason = "other"
)

// Request is one model call.
type Request struct {
	// Model is the model ID, sent verbatim to the provider.
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	Tools    []ToolDef `json:"tools,omitempty"`
	// MaxTokens caps the output; 0 means the provider's default.
	MaxTokens int `json:"maxTokens,omitempty"`
	// Temperature, if non-nil, is sent as is.
	Temperature *float64 `json:"temperature,omitempty"`
}

// Response is one model answer.
type Response struct {
	// Message is the assistant message (text and/or tool calls).
	Message      Message      `json:"message"`
	Usage        Usage        `json:"usage"`
	FinishReason FinishReason `json:"finishReason"`
	// Model is the model that answered, as the provider reports it.
	Model string `json:"model,omitempty"`
	// Raw is the provider's own response as JSON, when the provider keeps it
	// (seed 002: AfterLlmEvent's "decoded provider payload"). model/openai and
	// model/anthropic set it on both paths: as the API sent it, or, when
	// streaming, the response assembled from the stream in the same shape (a
	// chat.completion; a message), with the provider's id, model, finish
	// reason and usage.
	Raw json.RawMessage `json:"raw,omitempty"`
}

// Model generates one assistant message for a request. Implementations must be
// safe for concurrent use and honour ctx.
type Model interface {
	Generate(ctx context.Context, req *Request) (*Response, error)
}

// Chunk is one piece of a streamed response: a text delta, or (last) the whole
// assembled response.
type Chunk struct {
	// Delta is a piece of assistant text.
	Delta string
	// Response is set on the final chunk only, with the complete message
	// (tool-call arguments assembled across chunks) and usage.
	Response *Response
}

// Streamer is implemented by models that can stream. The sequence yields text
// deltas and ends with exactly one chunk whose Response is set, or with an
// error. Stopping the iteration early must release every resource.
type Streamer interface {
	Stream(ctx context.Context, req *Request) iter.Seq2[Chunk, error]
}
