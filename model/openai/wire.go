package openai

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/tollgate-dev/tollgate/internal/jsondecode"
	"github.com/tollgate-dev/tollgate/internal/provider"
	"github.com/tollgate-dev/tollgate/model"
)

// The Chat Completions wire format, as far as this package speaks it
// (https://platform.openai.com/docs/api-reference/chat). Answers are decoded
// with encoding/json (the strings every chunk repeats and the fixed words
// through provider.String, usage read in place); requests are encoded by
// hand (wireRequest.encode), into the bytes json.Marshal writes for the
// same structs, which the tests check. The tests decode the same bytes with
// the official SDK (github.com/openai/openai-go/v3) and compare: it is the
// oracle of this codec.

// wireRequest is a chat completion request.
type wireRequest struct {
	Model               string             `json:"model"`
	Messages            []wireMessage      `json:"messages"`
	Tools               []wireTool         `json:"tools,omitempty"`
	MaxCompletionTokens int                `json:"max_completion_tokens,omitempty"`
	Temperature         *float64           `json:"temperature,omitempty"`
	Stream              bool               `json:"stream,omitempty"`
	StreamOptions       *wireStreamOptions `json:"stream_options,omitempty"`

	// tools is Tools as encode writes it, when they come from a toolCache.
	tools []byte
	// Room for the messages and tool calls of a short conversation, so
	// that a request is built in one allocation.
	msgs  [6]wireMessage
	calls [2]wireToolCall
}

// toolCache is the tools of a request, translated and encoded, with copies
// of the definitions they were made from: a request whose definitions are
// equal (an agent sends the same tools every turn) reuses them as they are,
// without checking and writing their schemas again. It is read-only once
// stored.
type toolCache struct {
	defs []model.ToolDef // with their own InputSchema bytes
	wire []wireTool      // whose Parameters are those copies
	json []byte          // wire, encoded
}

// matches reports whether defs equal the definitions of c, byte for byte.
func (c *toolCache) matches(defs []model.ToolDef) bool {
	if c == nil || len(c.defs) != len(defs) {
		return false
	}
	for i := range defs {
		d, o := &defs[i], &c.defs[i]
		if d.Name != o.Name || d.Description != o.Description || !bytes.Equal(d.InputSchema, o.InputSchema) {
			return false
		}
	}
	return true
}

// toolsOf returns the tools of defs, from the last request's when they are
// equal, else translated (each schema must be a JSON object; none is {})
// and kept for the next request.
func (m *Model) toolsOf(defs []model.ToolDef) (*toolCache, error) {
	if c := m.tools.Load(); c.matches(defs) {
		return c, nil
	}
	c := &toolCache{defs: make([]model.ToolDef, len(defs)), wire: make([]wireTool, len(defs))}
	for i, t := range defs {
		in := bytes.Clone(t.InputSchema)
		schema := emptySchema
		if len(in) > 0 {
			schema = bytes.TrimSpace(in)
			if len(schema) == 0 || schema[0] != '{' || !json.Valid(schema) {
				return nil, fmt.Errorf("openai: tool %q: input schema is not a JSON object", t.Name)
			}
		}
		c.defs[i] = model.ToolDef{Name: t.Name, Description: t.Description, InputSchema: in}
		c.wire[i] = wireTool{Type: "function", Function: wireFunctionDef{Name: t.Name, Description: t.Description, Parameters: schema}}
	}
	c.json = appendTools(nil, c.wire)
	m.tools.Store(c)
	return c, nil
}

// includeUsage is the stream options of every streaming request. It is
// never written to.
var includeUsage = &wireStreamOptions{IncludeUsage: true}

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

// request translates a tollgate request into w, a chat completion request.
// w's slices use its own room when they fit in it. A tool call's arguments
// are a view of the transcript's bytes (see wireArguments): w is encoded
// before anything can change them.
func (m *Model) request(req *model.Request, w *wireRequest) error {
	id := cmp.Or(req.Model, m.model)
	if id == "" {
		return errors.New("openai: no model ID: set Request.Model or Options.Model")
	}
	w.Model = id
	if len(req.Messages) <= len(w.msgs) {
		w.Messages = w.msgs[:0]
	} else {
		w.Messages = make([]wireMessage, 0, len(req.Messages))
	}
	calls := w.calls[:0]
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
			if n := len(msg.ToolCalls); n > 0 {
				if n > cap(calls)-len(calls) {
					calls = make([]wireToolCall, 0, n)
				}
				for _, c := range msg.ToolCalls {
					calls = append(calls, wireToolCall{ID: c.ID, Type: "function", Function: wireFunction{Name: c.Name, Arguments: wireArguments(c.Arguments)}})
				}
				a.ToolCalls = calls[len(calls)-n : len(calls) : len(calls)]
			}
			w.Messages = append(w.Messages, a)
		case model.RoleTool:
			w.Messages = append(w.Messages, wireMessage{Role: "tool", Content: &msg.Content, ToolCallID: msg.ToolCallID})
		default:
			return fmt.Errorf("openai: message %d has unknown role %q", i, msg.Role)
		}
	}
	if len(req.Tools) > 0 {
		c, err := m.toolsOf(req.Tools)
		if err != nil {
			return err
		}
		w.Tools, w.tools = c.wire, c.json
	}
	if req.MaxTokens > 0 {
		w.MaxCompletionTokens = req.MaxTokens
	}
	w.Temperature = req.Temperature
	return nil
}

// wireCompletion is a chunk of a stream (or, for the tests' oracle, a chat
// completion: a chunk's choices carry delta where a completion's carry
// message). Error is there for the error objects that compatible servers
// send in place of either. A stream decodes all its chunks into one
// wireCompletion (see reset): the id, model and fingerprint every chunk
// repeats then cost no allocation after the first.
type wireCompletion struct {
	ID                provider.String `json:"id"`
	Created           int64           `json:"created"`
	Model             provider.String `json:"model"`
	Choices           []wireChoice    `json:"choices"`
	Usage             wireUsageField  `json:"usage"`
	ServiceTier       provider.String `json:"service_tier"`
	SystemFingerprint provider.String `json:"system_fingerprint"`
	Error             json.RawMessage `json:"error"`
}

// reset readies c for the next chunk: everything a chunk may leave out is
// cleared, the choices' array and the usage's buffer are kept for reuse,
// and the strings every chunk repeats keep their value (a chunk that leaves
// one out is read as repeating it, which is how the accumulator reads
// them).
func (c *wireCompletion) reset() {
	clear(c.Choices[:cap(c.Choices)])
	c.Choices = c.Choices[:0]
	c.Created = 0
	c.Usage.reset()
	c.Error = c.Error[:0]
}

// wireAnswer is a chat completion, the answer without streaming, as far as
// a response needs it: Response.Raw is the answer as sent, so its usage is
// read in place and not kept as sent. Model is a provider.String: a model
// equal to the one set before decoding (the requested one) costs no
// allocation.
type wireAnswer struct {
	Model   provider.String `json:"model"`
	Choices []wireChoice    `json:"choices"`
	Usage   wireUsageCounts `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

// answer is an answer decoded, and translated, in one allocation: the wire
// answer with room for one choice and its first tool calls, which
// encoding/json fills before it grows a slice, and the response with room
// for its first tool calls.
type answer struct {
	w         wireAnswer
	choices   [1]wireChoice
	calls     [2]wireToolCallOut
	resp      model.Response
	toolCalls [2]model.ToolCall
}

type wireChoice struct {
	Index        int64           `json:"index"`
	Message      wireMessageOut  `json:"message"`
	Delta        wireDeltaOut    `json:"delta"`
	FinishReason provider.String `json:"finish_reason"`
}

// wireDeltaOut is the delta of a stream's chunk. Its content may start or
// end mid-character: it is decoded as provider.Text keeps it, for the
// accumulator to hand on in whole characters. Content null is "".
type wireDeltaOut struct {
	Content   provider.Text     `json:"content"`
	ToolCalls []wireToolCallOut `json:"tool_calls"`
}

// wireMessageOut is the message of an answer. Content null is "".
type wireMessageOut struct {
	Content   string            `json:"content"`
	ToolCalls []wireToolCallOut `json:"tool_calls"`
}

type wireToolCallOut struct {
	Index    int64           `json:"index"`
	ID       string          `json:"id"`
	Type     provider.String `json:"type"`
	Function wireFunctionOut `json:"function"`
}

// wireFunctionOut is the function of a tool call in an answer: its
// arguments are JSON text sent as a JSON string, decoded straight into
// bytes.
type wireFunctionOut struct {
	Name      string   `json:"name"`
	Arguments wireArgs `json:"arguments"`
}

// wireArgs is the text of a tool call's arguments, or of the piece of them
// that one chunk carries, as bytes, decoded as a provider.Text is: a JSON
// string unquoted keeping a character cut between two chunks (its bytes, or
// the half of a surrogate pair) for provider.ValidBytes to put together
// once the pieces are joined; an object or an array (arguments sent as an
// object, by llama.cpp's server and Text Generation Inference) as its own
// text; null, and any other value, leave it as it is. One allocation.
type wireArgs []byte

// UnmarshalJSON implements [json.Unmarshaler]. b is a valid JSON value (the
// decoder checked the whole input before).
func (a *wireArgs) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || (b[0] != '"' && b[0] != '{' && b[0] != '[') {
		return nil
	}
	if out, ok := provider.AppendText(make([]byte, 0, len(b)), b); ok {
		*a = out
	}
	return nil
}

type wireUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// wireUsageField is a usage field: its counts, read in place without a
// second decode, and the value as sent (raw, nil when absent or null),
// which a stream's Response.Raw keeps.
type wireUsageField struct {
	wireUsageCounts
	raw json.RawMessage
}

// UnmarshalJSON implements [json.Unmarshaler]: the counts as
// [wireUsageCounts] reads them, and the value as sent.
func (u *wireUsageField) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	u.raw = append(u.raw[:0], b...)
	return u.wireUsageCounts.UnmarshalJSON(b)
}

// wireUsageCounts is a usage field's counts, read in place without a
// second decode.
type wireUsageCounts struct{ wireUsage }

// UnmarshalJSON implements [json.Unmarshaler]: null is no usage; a value
// that is not an object is usage with no counts; a count that is not an
// integer is 0 (a key's last value wins), as a lenient decode reads it.
func (u *wireUsageCounts) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	u.wireUsage = wireUsage{}
	for k, v := range provider.Members(b) {
		switch string(k) {
		case "prompt_tokens":
			u.PromptTokens = provider.Int(v)
		case "completion_tokens":
			u.CompletionTokens = provider.Int(v)
		case "total_tokens":
			u.TotalTokens = provider.Int(v)
		}
	}
	return nil
}

// present reports whether the usage was sent (not absent, not null).
func (u *wireUsageField) present() bool { return len(u.raw) > 0 }

func (u *wireUsageField) reset() {
	u.wireUsage = wireUsage{}
	u.raw = u.raw[:0]
}

// decode unmarshals data into v leniently, as the SDK does: a field whose
// JSON has another type than expected (a number sent as a string, a null
// where an object belongs) is left at its zero value instead of failing the
// whole answer. Only data that is not JSON at all is an error.
func decode(data []byte, v any) error {
	err := jsondecode.Unmarshal(data, v)
	if _, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		return nil
	}
	return err
}

// hasError reports whether an error field was sent (not absent, not null).
func hasError(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}

// encode returns the request as JSON: the bytes json.Marshal writes for w
// (the tests compare the two), appended by hand.
func (w *wireRequest) encode() ([]byte, error) {
	n := 256 + len(w.Model)
	for i := range w.Messages {
		m := &w.Messages[i]
		n += 64 + len(m.ToolCallID)
		if m.Content != nil {
			n += len(*m.Content) + len(*m.Content)/8
		}
		for _, c := range m.ToolCalls {
			n += 96 + len(c.ID) + len(c.Function.Name) + len(c.Function.Arguments)*5/4
		}
	}
	if w.tools != nil {
		n += len(w.tools)
	} else {
		for _, t := range w.Tools {
			n += 96 + len(t.Function.Name) + len(t.Function.Description) + len(t.Function.Parameters)
		}
	}
	b := make([]byte, 0, n)
	b = append(b, `{"model":`...)
	b = provider.AppendString(b, w.Model)
	b = append(b, `,"messages":`...)
	if w.Messages == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range w.Messages {
			if i > 0 {
				b = append(b, ',')
			}
			b = w.Messages[i].appendJSON(b)
		}
		b = append(b, ']')
	}
	if len(w.Tools) > 0 {
		b = append(b, `,"tools":`...)
		if w.tools != nil {
			b = append(b, w.tools...)
		} else {
			b = appendTools(b, w.Tools)
		}
	}
	if w.MaxCompletionTokens != 0 {
		b = append(b, `,"max_completion_tokens":`...)
		b = strconv.AppendInt(b, int64(w.MaxCompletionTokens), 10)
	}
	if w.Temperature != nil {
		t, err := json.Marshal(*w.Temperature)
		if err != nil {
			return nil, fmt.Errorf("temperature: %w", err)
		}
		b = append(b, `,"temperature":`...)
		b = append(b, t...)
	}
	if w.Stream {
		b = append(b, `,"stream":true`...)
	}
	if w.StreamOptions != nil {
		b = append(b, `,"stream_options":{"include_usage":`...)
		b = strconv.AppendBool(b, w.StreamOptions.IncludeUsage)
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// appendTools appends tools as a JSON array.
func appendTools(b []byte, tools []wireTool) []byte {
	b = append(b, '[')
	for i := range tools {
		t := &tools[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":`...)
		b = provider.AppendString(b, t.Type)
		b = append(b, `,"function":{"name":`...)
		b = provider.AppendString(b, t.Function.Name)
		if t.Function.Description != "" {
			b = append(b, `,"description":`...)
			b = provider.AppendString(b, t.Function.Description)
		}
		b = append(b, `,"parameters":`...)
		b = provider.AppendValidRaw(b, t.Function.Parameters) // checked by toolsOf
		b = append(b, "}}"...)
	}
	return append(b, ']')
}

func (m *wireMessage) appendJSON(b []byte) []byte {
	b = append(b, `{"role":`...)
	b = provider.AppendString(b, m.Role)
	if m.Content != nil {
		b = append(b, `,"content":`...)
		b = provider.AppendString(b, *m.Content)
	}
	if len(m.ToolCalls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i := range m.ToolCalls {
			c := &m.ToolCalls[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = provider.AppendString(b, c.ID)
			b = append(b, `,"type":`...)
			b = provider.AppendString(b, c.Type)
			b = append(b, `,"function":{"name":`...)
			b = provider.AppendString(b, c.Function.Name)
			b = append(b, `,"arguments":`...)
			b = provider.AppendString(b, c.Function.Arguments)
			b = append(b, "}}"...)
		}
		b = append(b, ']')
	}
	if m.ToolCallID != "" {
		b = append(b, `,"tool_call_id":`...)
		b = provider.AppendString(b, m.ToolCallID)
	}
	return append(b, '}')
}
