package agent

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/jsonenc"
	"github.com/tollgate-dev/tollgate/model"
)

// clone returns a deep copy of s that shares nothing mutable with it: every
// slice, map, pointer and byte slice (arguments, request data, tool state)
// is new, and only strings and other immutable values are shared. So the
// receiver of a checkpoint may keep its state while the runner goes on
// appending to the transcript, the records and the batch, and a failed
// resume leaves the caller's state untouched.
//
// A record's Metadata is copied value by value: nil, booleans, numbers and
// strings as they are, map[string]any, []any, []string and json.RawMessage
// by a copy of their elements; any other value (a tool's own type) through
// its JSON form, as [State.MarshalJSON] would store it. The copy costs one
// walk of the state with a few allocations per record, where a JSON round
// trip encoded and parsed all of it: a checkpoint is taken after every
// finished call, so a turn of n calls copies the state n times. The error is
// that of a Metadata value that does not encode.
func (s *stateData) clone() (*stateData, error) {
	var cl cloner
	c := *s
	c.Messages = cl.messages(s.Messages)
	c.Requests = slices.Clone(s.Requests)
	if s.ToolState != nil {
		c.ToolState = make(map[string]json.RawMessage, len(s.ToolState))
		for k, v := range s.ToolState {
			c.ToolState[k] = cl.bytes(v)
		}
	}
	if s.ToolCalls != nil {
		c.ToolCalls = make([]gate.Record, len(s.ToolCalls))
		for i := range s.ToolCalls {
			if err := cl.record(&c.ToolCalls[i], &s.ToolCalls[i]); err != nil {
				return nil, err
			}
		}
	}
	if s.Batch != nil {
		c.Batch = make([]batchCall, len(s.Batch))
		var records, pending int
		for _, b := range s.Batch {
			if b.Record != nil {
				records++
			}
			if b.Pending != nil {
				pending++
			}
		}
		recs := make([]gate.Record, records)
		pends := make([]gate.Pending, pending)
		for i, b := range s.Batch {
			c.Batch[i].Call, c.Batch[i].CutOff = cl.call(b.Call), b.CutOff
			if b.Record != nil {
				r := &recs[0]
				recs = recs[1:]
				if err := cl.record(r, b.Record); err != nil {
					return nil, err
				}
				c.Batch[i].Record = r
			}
			if b.Pending != nil {
				p := &pends[0]
				pends = pends[1:]
				cl.pending(p, b.Pending)
				c.Batch[i].Pending = p
			}
		}
	}
	return &c, nil
}

// cloner copies the parts of one state, carving byte slices out of shared
// chunks: each carved slice has its length as its capacity, so that an
// append to one reallocates rather than writing into its neighbour.
type cloner struct {
	buf []byte
}

// cloneChunk is the smallest chunk a cloner allocates for byte slices.
const cloneChunk = 4 << 10

// bytes returns a copy of b: nil for nil, an empty non-nil slice for an
// empty one.
func (cl *cloner) bytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	if len(b) > cap(cl.buf)-len(cl.buf) {
		cl.buf = make([]byte, 0, max(cloneChunk, len(b)))
	}
	i := len(cl.buf)
	cl.buf = append(cl.buf, b...)
	return cl.buf[i:len(cl.buf):len(cl.buf)]
}

// call copies a tool call (its arguments).
func (cl *cloner) call(tc model.ToolCall) model.ToolCall {
	tc.Arguments = cl.bytes(tc.Arguments)
	return tc
}

// messages copies a transcript; the tool calls of all its messages share
// one new backing array, each message's part capped at its length.
func (cl *cloner) messages(ms []model.Message) []model.Message {
	if ms == nil {
		return nil
	}
	out := slices.Clone(ms)
	n := 0
	for _, m := range ms {
		n += len(m.ToolCalls)
	}
	calls := make([]model.ToolCall, 0, n)
	for i, m := range ms {
		if m.ToolCalls == nil {
			continue
		}
		j := len(calls)
		for _, tc := range m.ToolCalls {
			calls = append(calls, cl.call(tc))
		}
		out[i].ToolCalls = calls[j:len(calls):len(calls)]
	}
	return out
}

// record copies src into dst.
func (cl *cloner) record(dst, src *gate.Record) error {
	*dst = *src
	dst.RequestedArgs = cl.bytes(src.RequestedArgs)
	dst.Args = cl.bytes(src.Args)
	dst.ReplacedBy = slices.Clone(src.ReplacedBy)
	dst.Decision.Votes = slices.Clone(src.Decision.Votes)
	dst.Decision.Shadow = slices.Clone(src.Decision.Shadow)
	if src.Metadata != nil {
		m, err := cloneMetadata(src.Metadata, 0)
		if err != nil {
			return err
		}
		dst.Metadata = m
	}
	return nil
}

// pending copies src into dst.
func (cl *cloner) pending(dst, src *gate.Pending) {
	*dst = *src
	dst.Request.Data = cl.bytes(src.Request.Data)
	if src.Request.ExpiresAt != nil {
		t := *src.Request.ExpiresAt
		dst.Request.ExpiresAt = &t
	}
	dst.Args = cl.bytes(src.Args)
	dst.Votes = slices.Clone(src.Votes)
	dst.Shadow = slices.Clone(src.Shadow)
	if src.Approved != nil {
		ap := *src.Approved
		ap.Answer.Data = cl.bytes(src.Approved.Answer.Data)
		dst.Approved = &ap
	}
}

// maxCloneDepth is how deep cloneValue follows nested maps and lists by
// itself; below it a value goes through its JSON form, whose encoder
// refuses a cycle.
const maxCloneDepth = 64

// cloneMetadata copies a record's Metadata (see [stateData.clone]).
func cloneMetadata(m map[string]any, depth int) (map[string]any, error) {
	out := make(map[string]any, len(m))
	for k, v := range m {
		c, err := cloneValue(v, depth+1)
		if err != nil {
			return nil, err
		}
		out[k] = c
	}
	return out, nil
}

// cloneValue copies one Metadata value (see [stateData.clone]).
func cloneValue(v any, depth int) (any, error) {
	if depth > maxCloneDepth {
		return jsonCopy(v)
	}
	switch v := v.(type) {
	case nil, bool, string, json.Number,
		float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return v, nil
	case json.RawMessage:
		return slices.Clone(v), nil
	case []string:
		return slices.Clone(v), nil
	case map[string]string:
		return maps.Clone(v), nil
	case map[string]any:
		if v == nil {
			return v, nil
		}
		return cloneMetadata(v, depth)
	case []any:
		if v == nil {
			return v, nil
		}
		out := make([]any, len(v))
		for i, e := range v {
			c, err := cloneValue(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	return jsonCopy(v)
}

// jsonCopy returns v as its JSON form decodes: maps, lists, float64
// numbers, strings, booleans and nil.
func jsonCopy(v any) (any, error) {
	b, err := jsonenc.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}
