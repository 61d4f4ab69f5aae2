package anthropic

import (
	"encoding/json"
	"errors"

	"github.com/tollgate-dev/tollgate/internal/provider"
)

// The answer and the stream events are decoded by hand, with a
// provider.Cursor, into the wire structs of wire.go: json.Unmarshal's
// reflection and decode state cost about a hundred allocations per
// streamed two-turn run, and twenty per run without streaming. The
// decoders keep json.Unmarshal's results for the same bytes, leniency
// included (a value of another type than its field's leaves the field as
// it was, and decoding goes on, as the SDK forgives it; only data that is
// not JSON is an error): what is rejected is what json.Valid rejects, keys
// match fields as encoding/json matches them (exactly, else under case
// folding), a repeated key decodes again into its field (an array into the
// elements already there, as encoding/json does), unknown keys are
// skipped. The differential tests and FuzzDecode check every byte of that
// against json.Unmarshal into the same structs.
//
// Strings and raw values are borrowed from the input (see
// provider.Cursor): response copies what the answer keeps, and the
// accumulator what a stream keeps, before the next event reuses the
// buffer.

// Field names, in the order of the decoders' switches.
var (
	responseFields = []string{"id", "type", "role", "model", "content", "stop_reason", "usage", "error"}
	blockFields    = []string{"type", "text", "id", "name", "input"}
	usageFields    = []string{"input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"}
	errorFields    = []string{"type", "message"}
	eventFields    = []string{"type", "message", "index", "content_block", "delta", "usage", "error"}
	startFields    = []string{"id", "model", "stop_sequence", "usage"}
	deltaFields    = []string{"type", "text", "partial_json", "thinking", "signature", "stop_reason"}
)

// decoder decodes answers and events. The pointer fields of an event point
// into its own storage, which the next event reuses.
type decoder struct {
	c     provider.Cursor
	start wireStart
	block wireBlockOut
	err   wireError
}

// errNotJSON stands for a syntax error; syntaxError says which.
var errNotJSON = errors.New("not JSON")

// syntaxError is encoding/json's error for data that json.Valid rejected.
func syntaxError(data []byte) error {
	var v struct{}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	return errNotJSON
}

// message decodes an answer into msg as json.Unmarshal does, leniently;
// the strings of msg are borrowed from data and from d.
func (d *decoder) message(data []byte, msg *wireResponse) error {
	content, err := d.messageContent(data, msg, msg.Content)
	msg.Content = content
	return err
}

// messageContent is message, with msg.Content given and returned apart
// (content's array can then stay on the caller's stack).
func (d *decoder) messageContent(data []byte, msg *wireResponse, content []wireBlockOut) ([]wireBlockOut, error) {
	if !d.c.Reset(data) {
		return content, syntaxError(data)
	}
	if !d.c.Object() {
		return content, nil
	}
	for {
		key, ok := d.c.Key()
		if !ok {
			return content, nil
		}
		switch provider.Field(key, responseFields) {
		case 0:
			d.str(&msg.ID)
		case 1:
			d.word(&msg.Type)
		case 2:
			d.word(&msg.Role)
		case 3:
			if s, ok := d.c.String(); ok {
				msg.Model.name = provider.String(s)
			}
		case 4:
			content = d.blocks(content)
		case 5:
			d.word(&msg.StopReason)
		case 6:
			d.usage(&msg.Usage)
		case 7:
			if d.c.Null() {
				msg.Error = nil
			} else {
				if msg.Error == nil {
					msg.Error = new(wireError) // encoding/json's, for a value of any type
				}
				d.wireError(msg.Error)
			}
		default:
			d.c.Skip()
		}
	}
}

// blocks decodes an array of content blocks into s as encoding/json
// decodes into a slice: element i into s[i] where it exists (within the
// capacity, what a shorter array left there), [] as an empty slice, null
// as nil, any other value leaving s as it is.
func (d *decoder) blocks(s []wireBlockOut) []wireBlockOut {
	if d.c.Null() {
		return nil
	}
	if !d.c.Array() {
		return s
	}
	i := 0
	for d.c.More() {
		if i >= cap(s) {
			s = append(s[:cap(s)], wireBlockOut{})[:len(s)]
		}
		if i >= len(s) {
			s = s[:i+1]
		}
		d.wireBlock(&s[i])
		i++
	}
	if i == 0 {
		return make([]wireBlockOut, 0)
	}
	return s[:i]
}

func (d *decoder) wireBlock(b *wireBlockOut) {
	if !d.c.Object() {
		return
	}
	for {
		key, ok := d.c.Key()
		if !ok {
			return
		}
		switch provider.Field(key, blockFields) {
		case 0:
			d.word(&b.Type)
		case 1:
			d.str(&b.Text)
		case 2:
			d.str(&b.ID)
		case 3:
			d.str(&b.Name)
		case 4:
			b.Input = d.c.Raw()
		default:
			d.c.Skip()
		}
	}
}

func (d *decoder) usage(u *wireUsage) {
	if !d.c.Object() {
		return
	}
	for {
		key, ok := d.c.Key()
		if !ok {
			return
		}
		var p *int64
		switch provider.Field(key, usageFields) {
		case 0:
			p = &u.InputTokens
		case 1:
			p = &u.OutputTokens
		case 2:
			p = &u.CacheCreationInputTokens
		case 3:
			p = &u.CacheReadInputTokens
		default:
			d.c.Skip()
			continue
		}
		if n, ok := d.c.Int(); ok {
			*p = n
		}
	}
}

func (d *decoder) wireError(e *wireError) {
	if !d.c.Object() {
		return
	}
	for {
		key, ok := d.c.Key()
		if !ok {
			return
		}
		switch provider.Field(key, errorFields) {
		case 0:
			d.str(&e.Type)
		case 1:
			d.str(&e.Message)
		default:
			d.c.Skip()
		}
	}
}

// str decodes a string field: a JSON string sets it, anything else leaves
// it.
func (d *decoder) str(p *string) {
	if s, ok := d.c.String(); ok {
		*p = s
	}
}

// text decodes a provider.Text field as its UnmarshalJSON does.
func (d *decoder) text(p *provider.Text) {
	if s, ok := d.c.Text(); ok {
		*p = provider.Text(s)
	}
}

// word decodes a provider.String field as its UnmarshalJSON does: like a
// string field, with the fixed words of the wire format interned.
func (d *decoder) word(p *provider.String) {
	if s, ok := d.c.String(); ok {
		*p = provider.Intern(s)
	}
}

// event decodes the data of one stream event into ev (which it resets
// first), as json.Unmarshal does, leniently. Its pointer fields point into
// d, and its strings are borrowed from data and d, until the next event.
func (d *decoder) event(data []byte, ev *wireEvent) error {
	*ev = wireEvent{}
	if !d.c.Reset(data) {
		return syntaxError(data)
	}
	if !d.c.Object() {
		return nil
	}
	for {
		key, ok := d.c.Key()
		if !ok {
			return nil
		}
		switch provider.Field(key, eventFields) {
		case 0:
			d.word(&ev.Type)
		case 1:
			if d.c.Null() {
				ev.Message = nil
			} else {
				if ev.Message == nil {
					d.start = wireStart{}
					ev.Message = &d.start
				}
				d.wireStart(ev.Message)
			}
		case 2:
			if n, ok := d.c.Int(); ok {
				ev.Index = n
			}
		case 3:
			if d.c.Null() {
				ev.ContentBlock = nil
			} else {
				if ev.ContentBlock == nil {
					d.block = wireBlockOut{}
					ev.ContentBlock = &d.block
				}
				d.wireBlock(ev.ContentBlock)
			}
		case 4:
			d.delta(&ev.Delta)
		case 5:
			ev.Usage = d.c.Raw()
		case 6:
			if d.c.Null() {
				ev.Error = nil
			} else {
				if ev.Error == nil {
					d.err = wireError{}
					ev.Error = &d.err
				}
				d.wireError(ev.Error)
			}
		default:
			d.c.Skip()
		}
	}
}

func (d *decoder) wireStart(s *wireStart) {
	if !d.c.Object() {
		return
	}
	for {
		key, ok := d.c.Key()
		if !ok {
			return
		}
		switch provider.Field(key, startFields) {
		case 0:
			d.str(&s.ID)
		case 1:
			d.str(&s.Model)
		case 2:
			s.StopSequence = d.c.Raw()
		case 3:
			s.Usage = d.c.Raw()
		default:
			d.c.Skip()
		}
	}
}

func (d *decoder) delta(w *wireDelta) {
	if !d.c.Object() {
		return
	}
	for {
		key, ok := d.c.Key()
		if !ok {
			return
		}
		switch provider.Field(key, deltaFields) {
		case 0:
			d.word(&w.Type)
		case 1:
			d.text(&w.Text)
		case 2:
			d.text(&w.PartialJSON)
		case 3:
			d.str(&w.Thinking)
		case 4:
			d.str(&w.Signature)
		case 5:
			d.word(&w.StopReason)
		default:
			d.c.Skip()
		}
	}
}
