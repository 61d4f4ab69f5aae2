package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/tollgate-dev/tollgate/internal/provider"
	"github.com/tollgate-dev/tollgate/model"
)

// The Messages API wire format, as far as this package speaks it
// (https://docs.anthropic.com/en/api/messages). Answers and events are
// decoded by hand (decode.go) into the structs below, with the results
// json.Unmarshal gives for them (the tests compare the two); requests are
// encoded by hand
// (wireRequest.encode), into the bytes json.Marshal writes for the same
// structs, which the tests check. The tests decode the same bytes with the
// official SDK (github.com/anthropics/anthropic-sdk-go/v2) and compare: it
// is the oracle of this codec.

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

// wireResponse is a message: the answer without streaming. Usage is decoded
// in the same pass; fixed words (types, role, stop reason) are interned.
type wireResponse struct {
	ID         string          `json:"id"`
	Type       provider.String `json:"type"`
	Role       provider.String `json:"role"`
	Model      modelName       `json:"model"`
	Content    []wireBlockOut  `json:"content"`
	StopReason provider.String `json:"stop_reason"`
	Usage      wireUsage       `json:"usage"`
	Error      *wireError      `json:"error"`
}

// modelName is the model of an answer. The hand decoder (decode.go) sets
// name, borrowed, and response keeps the requested model's string when the
// answer echoes it; json.Unmarshal, the decoder's oracle in the tests,
// decodes it as a [provider.String], without allocating when it is hint.
type modelName struct {
	hint string
	name provider.String
}

// UnmarshalJSON implements [json.Unmarshaler]. b is a valid JSON value.
func (n *modelName) UnmarshalJSON(b []byte) error {
	if len(b) == len(n.hint)+2 && b[0] == '"' && string(b[1:len(b)-1]) == n.hint {
		plain := true
		for _, c := range b[1 : len(b)-1] {
			if c == '\\' || c >= 0x80 {
				plain = false // escapes and non-ASCII text: provider.String's rules
				break
			}
		}
		if plain {
			n.name = provider.String(n.hint)
			return nil
		}
	}
	return n.name.UnmarshalJSON(b)
}

// answer is a response in one allocation with room for its first tool
// calls and for the bytes it keeps (texts, ids, names, tool inputs): room
// is an array of one of a few sizes (newAnswer).
type answer[Room any] struct {
	resp  model.Response
	calls [2]model.ToolCall
	room  Room
}

// newAnswer returns a response, room for its first tool calls, and n
// bytes of room, in one allocation when n is at most 4 KiB.
func newAnswer(n int) (*model.Response, []model.ToolCall, []byte) {
	switch {
	case n <= 64:
		a := new(answer[[64]byte])
		return &a.resp, a.calls[:0], a.room[:0]
	case n <= 256:
		a := new(answer[[256]byte])
		return &a.resp, a.calls[:0], a.room[:0]
	case n <= 1024:
		a := new(answer[[1024]byte])
		return &a.resp, a.calls[:0], a.room[:0]
	case n <= 4096:
		a := new(answer[[4096]byte])
		return &a.resp, a.calls[:0], a.room[:0]
	}
	a := new(answer[struct{}])
	return &a.resp, a.calls[:0], make([]byte, 0, n)
}

// wireBlockOut is a content block of an answer. Input is kept as sent.
type wireBlockOut struct {
	Type  provider.String `json:"type"`
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

// wireEvent is one event of a stream, decoded in one pass: the message of
// message_start and the block of content_block_start into their structs,
// usage kept as sent (its counts are read without a second decode).
type wireEvent struct {
	Type         provider.String `json:"type"`
	Message      *wireStart      `json:"message"`
	Index        int64           `json:"index"`
	ContentBlock *wireBlockOut   `json:"content_block"`
	Delta        wireDelta       `json:"delta"`
	Usage        json.RawMessage `json:"usage"`
	Error        *wireError      `json:"error"`

	// rawBlock is content_block_start's block as sent, for a block of a
	// type this package does not read (kept in Response.Raw as it came).
	rawBlock json.RawMessage
}

// wireStart is the message of message_start, as far as Response.Raw keeps
// it; its usage is kept as sent.
type wireStart struct {
	ID           string          `json:"id"`
	Model        string          `json:"model"`
	StopSequence json.RawMessage `json:"stop_sequence"`
	Usage        json.RawMessage `json:"usage"`
}

type wireDelta struct {
	Type        provider.String `json:"type"`
	Text        provider.Text   `json:"text"`         // may cut a character in two
	PartialJSON provider.Text   `json:"partial_json"` // may cut a character in two
	Thinking    string          `json:"thinking"`
	Signature   string          `json:"signature"`
	StopReason  provider.String `json:"stop_reason"`
}

// decodeEvent decodes the data of one stream event into ev with a decoder
// of its own (see decoder.decodeEvent).
func decodeEvent(typ, data []byte, ev *wireEvent) error {
	return new(decoder).decodeEvent(typ, data, ev)
}

// decodeEvent decodes the data of one stream event into ev (which it
// resets first); typ is the event: line, which wins over the data's type.
// ev is borrowed from data and d until d decodes the next event.
func (d *decoder) decodeEvent(typ, data []byte, ev *wireEvent) error {
	if err := d.event(data, ev); err != nil {
		return err
	}
	if len(typ) > 0 {
		ev.Type = provider.Word(typ)
	}
	if ev.Type == "content_block_start" && ev.ContentBlock != nil && !knownBlock(ev.ContentBlock.Type) {
		for k, v := range provider.Members(data) {
			if string(k) == "content_block" {
				ev.rawBlock = bytes.Clone(v)
			}
		}
	}
	return nil
}

// knownBlock reports whether the accumulator assembles blocks of type t
// itself.
func knownBlock(t provider.String) bool {
	return t == "text" || t == "tool_use" || t == "thinking"
}

// present reports whether a field was sent (not absent, not null).
func present(raw json.RawMessage) bool {
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

// parseUsage reads the counts of a usage object (a key's last value wins;
// a count that is not an integer is 0, as in a lenient decode), without
// decoding it into a struct.
func parseUsage(raw json.RawMessage) wireUsage {
	var u wireUsage
	if !present(raw) || !json.Valid(raw) {
		return u
	}
	for k, v := range provider.Members(raw) {
		switch string(k) {
		case "input_tokens":
			u.InputTokens = provider.Int(v)
		case "output_tokens":
			u.OutputTokens = provider.Int(v)
		case "cache_creation_input_tokens":
			u.CacheCreationInputTokens = provider.Int(v)
		case "cache_read_input_tokens":
			u.CacheReadInputTokens = provider.Int(v)
		}
	}
	return u
}

// encode returns the request as JSON: the bytes json.Marshal writes for w
// (the tests compare the two), appended by hand.
func (w *wireRequest) encode() ([]byte, error) {
	n := 256 + len(w.Model)
	for _, s := range w.System {
		n += 32 + len(s.Text) + len(s.Text)/8
	}
	for i := range w.Messages {
		for j := range w.Messages[i].Content {
			c := &w.Messages[i].Content[j]
			n += 96 + len(c.Text) + len(c.Text)/8 + len(c.ID) + len(c.Name) + len(c.Input) + len(c.ToolUseID)
			for _, t := range c.Content {
				n += 32 + len(t.Text) + len(t.Text)/8
			}
		}
	}
	for _, t := range w.Tools {
		n += 64 + len(t.Name) + len(t.Description) + len(t.InputSchema)
	}
	b := make([]byte, 0, n)
	b = append(b, `{"model":`...)
	b = provider.AppendString(b, w.Model)
	b = append(b, `,"max_tokens":`...)
	b = strconv.AppendInt(b, int64(w.MaxTokens), 10)
	b = append(b, `,"messages":`...)
	if w.Messages == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range w.Messages {
			m := &w.Messages[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"role":`...)
			b = provider.AppendString(b, m.Role)
			b = append(b, `,"content":`...)
			if m.Content == nil {
				b = append(b, "null"...)
			} else {
				b = append(b, '[')
				for j := range m.Content {
					if j > 0 {
						b = append(b, ',')
					}
					b = m.Content[j].appendJSON(b)
				}
				b = append(b, ']')
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if len(w.System) > 0 {
		b = append(b, `,"system":`...)
		b = appendTexts(b, w.System)
	}
	if len(w.Tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i := range w.Tools {
			t := &w.Tools[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = provider.AppendString(b, t.Name)
			if t.Description != "" {
				b = append(b, `,"description":`...)
				b = provider.AppendString(b, t.Description)
			}
			b = append(b, `,"input_schema":`...)
			b = provider.AppendValidRaw(b, t.InputSchema) // checked by inputSchema
			b = append(b, '}')
		}
		b = append(b, ']')
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
	return append(b, '}'), nil
}

func (c *wireBlock) appendJSON(b []byte) []byte {
	b = append(b, `{"type":`...)
	b = provider.AppendString(b, c.Type)
	if c.Text != "" {
		b = append(b, `,"text":`...)
		b = provider.AppendString(b, c.Text)
	}
	if c.ID != "" {
		b = append(b, `,"id":`...)
		b = provider.AppendString(b, c.ID)
	}
	if c.Name != "" {
		b = append(b, `,"name":`...)
		b = provider.AppendString(b, c.Name)
	}
	if len(c.Input) > 0 {
		b = append(b, `,"input":`...)
		b = provider.AppendValidRaw(b, c.Input) // checked by inputObject, or by raw's arguments
	}
	if c.ToolUseID != "" {
		b = append(b, `,"tool_use_id":`...)
		b = provider.AppendString(b, c.ToolUseID)
	}
	if len(c.Content) > 0 {
		b = append(b, `,"content":`...)
		b = appendTexts(b, c.Content)
	}
	if c.IsError {
		b = append(b, `,"is_error":true`...)
	}
	return append(b, '}')
}

func appendTexts(b []byte, ts []wireText) []byte {
	b = append(b, '[')
	for i, t := range ts {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":`...)
		b = provider.AppendString(b, t.Type)
		b = append(b, `,"text":`...)
		b = provider.AppendString(b, t.Text)
		b = append(b, '}')
	}
	return append(b, ']')
}
