package model

import (
	"context"
	"fmt"

	"github.com/tollgate-dev/tollgate/internal/ids"
	"github.com/tollgate-dev/tollgate/internal/jsonenc"
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
		args, err := jsonenc.Object(c.Arguments)
		if err != nil {
			return nil, fmt.Errorf("model.Func: tool call %d (%s): %w", i, c.Name, err)
		}
		id := c.ID
		if id == "" {
			id = ids.New("call_")
		}
		msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: id, Name: c.Name, Arguments: args})
	}
	fr := FinishStop
	if len(msg.ToolCalls) > 0 {
		fr = FinishToolCalls
	}
	return &Response{Message: msg, Usage: rep.Usage, FinishReason: fr, Model: req.Model}, nil
}
