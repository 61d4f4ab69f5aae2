package model

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// Reply is what a [Func] returns: text, tool calls, or both.
type Reply struct {
	Content   string
	ToolCalls []FuncCall
	// Usage, if the function wants to report any.
	Usage Usage
}

// FuncCall is a tool call in a [Reply]. ID may be empty (one is generated);
// Arguments may be any value that encodes to a JSON object, a json.RawMessage,
// or nil (encoded as {}).
type FuncCall struct {
	ID        string
	Name      string
	Arguments any
}

// Func adapts a Go function into a [Model] (seed 002's in-process generate). The
// library fills in call IDs ("call_" and 16 random hex digits), the finish
// reason (tool_calls when there are calls, else stop) and the JSON encoding of
// arguments. An error from the function is returned as is; arguments that do
// not encode to a JSON object are an error naming the call.
type Func func(ctx context.Context, req *Request) (Reply, error)

// Generate implements [Model].
func (f Func) Generate(ctx context.Context, req *Request) (*Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rep, err := f(ctx, req)
	if err != nil {
		return nil, err
	}
	msg := Message{Role: RoleAssistant, Content: rep.Content}
	for i, c := range rep.ToolCalls {
		args, err := EncodeArguments(c.Arguments)
		if err != nil {
			return nil, fmt.Errorf("model.Func: tool call %d (%s): %w", i, c.Name, err)
		}
		id := c.ID
		if id == "" {
			id = NewCallID()
		}
		msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: id, Name: c.Name, Arguments: args})
	}
	fr := FinishStop
	if len(msg.ToolCalls) > 0 {
		fr = FinishToolCalls
	}
	return &Response{Message: msg, Usage: rep.Usage, FinishReason: fr, Model: req.Model}, nil
}

// EncodeArguments encodes v as a JSON object: nil becomes {}, a json.RawMessage
// or []byte is checked and kept, anything else goes through json.Marshal. It
// returns an error when the result is not a JSON object.
func EncodeArguments(v any) (json.RawMessage, error) {
	var b []byte
	switch x := v.(type) {
	case nil:
		return json.RawMessage("{}"), nil
	case json.RawMessage:
		b = x
	case []byte:
		b = x
	case string:
		b = []byte(x)
	default:
		var err error
		if b, err = MarshalJSON(x); err != nil {
			return nil, err
		}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("arguments must be a JSON object, got %.80q", b)
	}
	return json.RawMessage(append([]byte(nil), b...)), nil
}

// NewCallID returns a fresh tool call ID: "call_" and 16 random hex digits.
func NewCallID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

// MarshalJSON is json.Marshal without HTML escaping, so that arguments such as
// "a && b" stay readable in transcripts, records and logs ("&&", not
// "\u0026\u0026"). The result has no trailing newline.
func MarshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
