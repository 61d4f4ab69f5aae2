package anthropic

import (
	"encoding/json"

	"github.com/tollgate-dev/tollgate/internal/provider"
	"github.com/tollgate-dev/tollgate/internal/retry"
	"github.com/tollgate-dev/tollgate/model"
)

// response translates a message, as the server sent it, into a tollgate
// response. The message is decoded by hand (decoder.messageContent), on the
// stack, its strings borrowed from raw; what the response keeps (texts,
// ids, names, tool inputs, and the model when it is not the requested one)
// is copied into room at the end of the response's own allocation
// (newAnswer), so that raw, kept as Response.Raw, can change without
// changing them.
func (m *Model) response(raw []byte, requested string) (*model.Response, error) {
	var (
		d      decoder
		msg    wireResponse
		blocks [4]wireBlockOut
	)
	content, err := d.messageContent(raw, &msg, blocks[:0])
	if err != nil {
		return nil, &model.ProviderError{Provider: providerName, Message: "the answer is not a JSON message", Detail: retry.Redact(provider.Truncate(err.Error(), 300), m.key)}
	}
	if msg.Type == "error" || msg.Error != nil {
		return nil, m.eventError(msg.Error, raw)
	}
	// What the response keeps, counted, then copied into the answer's
	// room: the texts first, in their order (the message's text is their
	// concatenation), then the model, the ids and names of the calls, and
	// their inputs. The room is written once: its strings never change,
	// and each input is a slice of its own that cannot grow into the next.
	calls, n := 0, 0
	name := string(msg.Model.name)
	if name != requested {
		n += len(name)
	}
	for i := range content {
		b := &content[i]
		switch b.Type {
		case "text":
			n += len(b.Text)
		case "tool_use":
			calls++
			n += len(b.ID) + len(b.Name) + len(b.Input)
		}
	}
	resp, toolCalls, room := newAnswer(n)
	keep := func(s string) string {
		start := len(room)
		room = append(room, s...)
		return stringOf(room[start:])
	}
	text := len(room)
	for i := range content {
		if b := &content[i]; b.Type == "text" {
			room = append(room, b.Text...)
		}
	}
	out := model.Message{Role: model.RoleAssistant, Content: stringOf(room[text:])}
	if name == requested {
		name = requested
	} else {
		name = keep(name)
	}
	if calls > cap(toolCalls) {
		toolCalls = make([]model.ToolCall, 0, calls)
	}
	for i := range content {
		b := &content[i]
		if b.Type != "tool_use" {
			continue
		}
		call := model.ToolCall{ID: keep(b.ID), Name: keep(b.Name)}
		if len(b.Input) > 0 {
			// A value of a valid document, without space around it: valid
			// JSON, which arguments keeps as it is.
			start := len(room)
			room = append(room, b.Input...)
			call.Arguments = room[start:len(room):len(room)]
		} else {
			call.Arguments = json.RawMessage("{}")
		}
		toolCalls = append(toolCalls, call)
	}
	if calls > 0 {
		out.ToolCalls = toolCalls[:calls:calls]
	}
	u := msg.Usage
	*resp = model.Response{
		Message:      out,
		Usage:        usage(u.input(), u.OutputTokens),
		FinishReason: finishReason(string(msg.StopReason)),
		Model:        name,
		Raw:          json.RawMessage(raw),
	}
	return resp, nil
}

// stringOf returns a copy of b as a string.
func stringOf(b []byte) string { return string(b) }

// usage is the usage of a message of in input and out output tokens.
func usage(in, out int64) model.Usage {
	return model.Usage{InputTokens: int(in), OutputTokens: int(out), TotalTokens: int(in + out)}
}

// finishReason maps Anthropic's stop_reason: end_turn and stop_sequence are
// stop, tool_use is tool_calls, max_tokens and model_context_window_exceeded
// are length, refusal is content_filter; pause_turn and anything else are
// other.
func finishReason(r string) model.FinishReason {
	switch r {
	case "end_turn", "stop_sequence":
		return model.FinishStop
	case "tool_use":
		return model.FinishToolCalls
	case "max_tokens", "model_context_window_exceeded":
		return model.FinishLength
	case "refusal":
		return model.FinishContentFilter
	}
	return model.FinishOther
}
