package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/tollgate-dev/tollgate/internal/provider"
	"github.com/tollgate-dev/tollgate/internal/retry"
	"github.com/tollgate-dev/tollgate/model"
)

// Stream implements [model.Streamer]: a streaming Messages API call. Text
// deltas are yielded as they arrive, in whole characters: a character that
// the server cut between two text_delta events (its UTF-8 bytes, or the
// halves of an escaped surrogate pair) is held back from the first delta
// and yielded whole with the next, so that the deltas join into the final
// text; the last chunk carries the whole
// response, tool inputs assembled from their input_json_delta pieces. Transient
// failures are retried only until the first event has arrived, before
// anything was yielded; a failure after that ends the sequence with the
// error. Breaking out of the loop closes the connection.
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		tctx, cancel := provider.WithTimeout(ctx, m.timeout)
		defer cancel()
		m.stream(tctx, req, func(c model.Chunk, err error) bool {
			return yield(c, provider.TimeoutError(providerName, ctx, tctx, err, m.timeout))
		})
	}
}

// stream is Stream within the call's timeout: the request posted with
// retries until its first event, then every event handed to the
// accumulator and its text deltas to yield, and the whole response last.
func (m *Model) stream(ctx context.Context, req *model.Request, yield func(model.Chunk, error) bool) {
	body, id, err := m.body(ctx, req, true)
	if err != nil {
		yield(model.Chunk{}, err)
		return
	}
	var (
		resp  *http.Response
		evs   *provider.Events
		first wireEvent
		dec   decoder
		whole *model.Response // the answer of a server that did not stream
	)
	err = retry.Do(ctx, m.policy, m.log, func(ctx context.Context, attempt int) error {
		m.log.LogAttrs(ctx, slog.LevelDebug, "messages stream", slog.String("model", id), slog.Int("attempt", attempt))
		r, err := m.post(ctx, body, m.sseHeader)
		if err != nil {
			return err
		}
		// A server that does not stream (or a gateway that fails) answers
		// a streaming request with one JSON body: a message, or an error
		// object, read as Generate reads them. Events under a JSON
		// Content-Type are read as events.
		src, isJSON := provider.JSONAnswer(r)
		if isJSON {
			defer r.Body.Close()
			b, err := provider.ReadBody(src, m.maxBody)
			if err != nil {
				return m.wrap(ctx, fmt.Errorf("reading the answer: %w", err))
			}
			out, err := m.response(b, id)
			if err != nil {
				return err
			}
			whole = out
			return nil
		}
		e := provider.NewEventsLimit(src, m.maxBody)
		var ev wireEvent
		ok, perr := m.nextEvent(e, &dec, &ev)
		if ok && perr == nil {
			resp, evs, first = r, e, ev
			return nil
		}
		_ = r.Body.Close()
		if perr != nil {
			return perr
		}
		err = e.Err()
		if err == nil {
			err = errEmptyStream
		}
		return m.wrap(ctx, err)
	})
	if err != nil {
		yield(model.Chunk{}, err)
		return
	}
	if whole != nil {
		if d := whole.Message.Content; d != "" && !yield(model.Chunk{Delta: d}, nil) {
			return
		}
		yield(model.Chunk{Response: whole}, nil)
		return
	}
	defer resp.Body.Close()
	acc := accumulator{model: id}
	ev := &first
	for {
		if d := acc.add(ev); d != "" && !yield(model.Chunk{Delta: d}, nil) {
			return
		}
		ok, perr := m.nextEvent(evs, &dec, ev)
		if perr != nil {
			yield(model.Chunk{}, perr)
			return
		}
		if !ok {
			break
		}
	}
	if err := evs.Err(); err != nil {
		yield(model.Chunk{}, m.wrap(ctx, err))
		return
	}
	if !acc.stopped {
		yield(model.Chunk{}, m.wrap(ctx, errTruncated))
		return
	}
	if d := acc.rest(); d != "" && !yield(model.Chunk{Delta: d}, nil) {
		return
	}
	yield(model.Chunk{Response: acc.response()}, nil)
}

// nextEvent reads the next event of a stream into ev with d, skipping
// pings and events without data. ok is false at the end of the body
// (Events.Err says whether it failed); perr is set for an error event or
// data that is not JSON. ev's strings are borrowed from e and d until the
// next call, which clears them before it reads on.
func (m *Model) nextEvent(e *provider.Events, d *decoder, ev *wireEvent) (ok bool, perr *model.ProviderError) {
	*ev = wireEvent{}
	for e.Next() {
		typ, data := e.Type(), bytes.TrimSpace(e.Data())
		if string(typ) == "ping" || len(data) == 0 {
			continue
		}
		if err := d.decodeEvent(typ, data, ev); err != nil {
			if string(typ) == "error" {
				// An "event: error" is an error whatever its data holds:
				// its text, on one line.
				return false, m.eventError(nil, data)
			}
			return false, &model.ProviderError{Provider: providerName, Message: "the stream sent an event that is not JSON", Detail: retry.Redact(provider.Truncate(err.Error()+": "+string(data), 300), m.key)}
		}
		switch ev.Type {
		case "ping", "":
			continue
		case "error":
			return false, m.eventError(ev.Error, data)
		}
		return true, nil
	}
	return false, nil
}

// arguments returns a tool_use block's input as tool-call arguments: b
// itself when it is JSON (b is the caller's own copy: it is kept, not
// copied), {} when it is blank, and a JSON string of the text otherwise.
func arguments(b []byte) json.RawMessage {
	if len(bytes.TrimSpace(b)) == 0 {
		return json.RawMessage("{}")
	}
	if json.Valid(b) {
		return json.RawMessage(b)
	}
	s, _ := json.Marshal(string(b))
	return s
}

// accumulator assembles a streamed message.
type accumulator struct {
	text    strings.Builder  // as the deltas sent it: a character cut between two is whole only once both arrived
	sent    int              // the bytes of text handed on as deltas
	blocks  map[int64]*block // by index, once a delta is not for the last block (blockAt)
	order   []*block         // every content block, in order of content_block_start
	tools   []*block         // the tool_use blocks among them
	stop    string
	in, out int64
	model   string
	stopped bool
	// For Response.Raw: message_start's message, and the usage objects of
	// message_start and message_delta as sent, in order (merged key by key
	// when Raw is built).
	start      wireStart
	usages     []json.RawMessage
	usageBytes []byte
}

// block is one content block of a stream.
type block struct {
	index     int64
	typ       string
	start     json.RawMessage // content_block_start's block, as sent
	id, name  string
	startIn   json.RawMessage // the input of content_block_start
	text      strings.Builder // text, or thinking
	input     []byte          // input_json_delta pieces
	signature strings.Builder
	args      json.RawMessage // arguments(), once computed
}

// arguments returns the block's input: the input_json_delta pieces when any
// arrived, else the input of content_block_start.
func (b *block) arguments() json.RawMessage {
	if b.args == nil {
		if len(b.input) > 0 {
			b.args = arguments(provider.ValidBytes(b.input))
		} else {
			b.args = arguments(b.startIn)
		}
	}
	return b.args
}

// add takes in one event and returns its text delta. ev is borrowed (see
// decoder.event): what the accumulator keeps of it, it copies.
func (a *accumulator) add(ev *wireEvent) string {
	switch ev.Type {
	case "message_start":
		var msg wireStart
		if ev.Message != nil {
			msg = *ev.Message
		}
		a.start = wireStart{ID: strings.Clone(msg.ID)}
		if present(msg.StopSequence) {
			a.start.StopSequence = bytes.Clone(msg.StopSequence)
		}
		if msg.Model != "" && msg.Model != a.model {
			a.model = strings.Clone(msg.Model)
		}
		u := parseUsage(msg.Usage)
		a.in, a.out = u.input(), u.OutputTokens
		a.mergeUsage(msg.Usage)
	case "content_block_start":
		var cb wireBlockOut
		if ev.ContentBlock != nil {
			cb = *ev.ContentBlock
		}
		b := &block{index: ev.Index, typ: provider.Keep(cb.Type), start: ev.rawBlock}
		if cb.ID != "" || cb.Name != "" {
			idName := cb.ID + cb.Name // one copy for both
			b.id, b.name = idName[:len(cb.ID)], idName[len(cb.ID):]
		}
		if a.blocks != nil {
			a.blocks[ev.Index] = b
		}
		a.order = append(a.order, b)
		switch cb.Type {
		case "text":
			b.text.WriteString(cb.Text)
			return a.addText(cb.Text)
		case "tool_use":
			// Anthropic sends input {} here and the input in
			// input_json_delta pieces; some compatible servers send the
			// whole input here and no delta.
			b.startIn = bytes.Clone(cb.Input)
			a.tools = append(a.tools, b)
		}
	case "content_block_delta":
		b := a.blockAt(ev.Index)
		switch ev.Delta.Type {
		case "text_delta":
			if b != nil {
				b.text.WriteString(string(ev.Delta.Text))
			}
			return a.addText(string(ev.Delta.Text))
		case "input_json_delta":
			if b != nil {
				b.input = append(b.input, ev.Delta.PartialJSON...)
			}
		case "thinking_delta":
			if b != nil {
				b.text.WriteString(ev.Delta.Thinking)
			}
		case "signature_delta":
			if b != nil {
				b.signature.WriteString(ev.Delta.Signature)
			}
		}
	case "message_delta":
		if ev.Delta.StopReason != "" {
			a.stop = provider.Keep(ev.Delta.StopReason)
		}
		// message_delta usage is cumulative.
		u := parseUsage(ev.Usage)
		if u.OutputTokens != 0 {
			a.out = u.OutputTokens
		}
		if in := u.input(); in != 0 {
			a.in = in
		}
		a.mergeUsage(ev.Usage)
	case "message_stop":
		a.stopped = true
	}
	return ""
}

// addText adds a text delta to the message's text and returns the text
// not handed on yet up to its last whole character (provider.TextDelta: a
// character cut between two deltas is held back until it is whole), as a
// copy that shares the text's memory when it is valid UTF-8.
func (a *accumulator) addText(s string) string {
	a.text.WriteString(s)
	d, end := provider.TextDelta(a.text.String(), a.sent, false)
	a.sent = end
	return d
}

// rest returns what addText held back, once the stream has ended: a
// character that stayed cut, as U+FFFD.
func (a *accumulator) rest() string {
	d, end := provider.TextDelta(a.text.String(), a.sent, true)
	a.sent = end
	return d
}

// mergeUsage keeps a copy of a usage object for Response.Raw, in
// usageBytes with the others.
func (a *accumulator) mergeUsage(raw json.RawMessage) {
	if present(raw) {
		start := len(a.usageBytes)
		a.usageBytes = append(a.usageBytes, raw...)
		// An earlier usage stays where it was when usageBytes grows.
		a.usages = append(a.usages, a.usageBytes[start:len(a.usageBytes):len(a.usageBytes)])
	}
}

// blockAt returns the block last started with index i (nil for none):
// the last block of all, which the deltas of a stream are for, or one
// found in a map of the blocks by index, made the first time a delta is
// for another.
func (a *accumulator) blockAt(i int64) *block {
	n := len(a.order)
	if n > 0 && a.order[n-1].index == i {
		return a.order[n-1]
	}
	if a.blocks == nil {
		a.blocks = make(map[int64]*block, n)
		for _, b := range a.order {
			a.blocks[b.index] = b
		}
	}
	return a.blocks[i]
}

// usageMember is a member of a usage object of the stream.
type usageMember struct{ key, value []byte }

// rawUsage returns, appended to members, the usage of Response.Raw,
// sorted by key: the keys of every usage object the stream sent, each with
// its last value that is not null (a key whose values are all null is left
// out). ok is false when the stream sent no usage object (Raw's usage is
// null).
func (a *accumulator) rawUsage(members []usageMember) (_ []usageMember, ok bool) {
	for _, raw := range a.usages {
		ok = ok || raw[0] == '{' // present: not empty
		for k, v := range provider.Members(raw) {
			if present(v) {
				members = append(members, usageMember{k, v})
			}
		}
	}
	// Sorted by key, the values of a key in the stream's order: the last
	// of each run wins.
	slices.SortStableFunc(members, func(x, y usageMember) int { return bytes.Compare(x.key, y.key) })
	out := members[:0]
	for i, m := range members {
		if i+1 < len(members) && bytes.Equal(members[i+1].key, m.key) {
			continue
		}
		out = append(out, m)
	}
	return out, ok
}

func (a *accumulator) response() *model.Response {
	msg := model.Message{Role: model.RoleAssistant, Content: provider.ValidText(a.text.String())}
	for _, b := range a.tools {
		msg.ToolCalls = append(msg.ToolCalls, model.ToolCall{ID: b.id, Name: b.name, Arguments: b.arguments()})
	}
	return &model.Response{
		Message:      msg,
		Usage:        usage(a.in, a.out),
		FinishReason: finishReason(a.stop),
		Model:        a.model,
		Raw:          a.raw(),
	}
}

// raw is the streamed message as the API returns it without streaming: id,
// type, role and model of message_start, the content blocks (text, thinking
// with its signature, tool_use with the assembled input, any other block as
// content_block_start sent it), stop_reason, stop_sequence, and the usage of
// message_start updated by message_delta's.
func (a *accumulator) raw() json.RawMessage {
	n := 256 + len(a.start.ID) + len(a.model) + len(a.start.StopSequence)
	for _, b := range a.order {
		n += 64 + b.text.Len()*9/8 + b.signature.Len() + len(b.id) + len(b.name) + len(b.input) + len(b.startIn) + len(b.start)
	}
	for _, u := range a.usages {
		n += len(u)
	}
	out := make([]byte, 0, n)
	out = append(out, `{"id":`...)
	out = provider.AppendString(out, a.start.ID)
	out = append(out, `,"type":"message","role":"assistant","model":`...)
	out = provider.AppendString(out, a.model)
	out = append(out, `,"content":[`...)
	var err error
	first := true
	for _, b := range a.order {
		switch b.typ {
		case "text", "thinking", "tool_use":
		default:
			if !present(b.start) {
				continue
			}
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		switch b.typ {
		case "text":
			out = append(out, `{"type":"text","text":`...)
			out = provider.AppendString(out, provider.ValidText(b.text.String())) // a character cut between two deltas, whole
			out = append(out, '}')
		case "thinking":
			out = append(out, `{"type":"thinking","thinking":`...)
			out = provider.AppendString(out, b.text.String())
			out = append(out, `,"signature":`...)
			out = provider.AppendString(out, b.signature.String())
			out = append(out, '}')
		case "tool_use":
			in := b.arguments()
			if !bytes.HasPrefix(in, []byte("{")) {
				in = json.RawMessage("{}")
			}
			out = (&wireBlock{Type: "tool_use", ID: b.id, Name: b.name, Input: in}).appendJSON(out)
		default:
			if out, err = provider.AppendRaw(out, b.start); err != nil {
				return nil
			}
		}
	}
	out = append(out, `],"stop_reason":`...)
	if a.stop != "" {
		out = provider.AppendString(out, a.stop)
	} else {
		out = append(out, "null"...)
	}
	out = append(out, `,"stop_sequence":`...)
	stopSeq := a.start.StopSequence
	if !present(stopSeq) {
		stopSeq = json.RawMessage("null")
	}
	if out, err = provider.AppendRaw(out, stopSeq); err != nil {
		return nil
	}
	out = append(out, `,"usage":`...)
	var room [8]usageMember
	if u, ok := a.rawUsage(room[:0]); !ok {
		out = append(out, "null"...)
	} else {
		out = append(out, '{')
		for i, m := range u {
			if i > 0 {
				out = append(out, ',')
			}
			out = provider.AppendString(out, string(m.key))
			out = append(out, ':')
			if out, err = provider.AppendRaw(out, m.value); err != nil {
				return nil
			}
		}
		out = append(out, '}')
	}
	return append(out, '}')
}
