// Package jsondecode decodes JSON with encoding/json, reusing its decoding
// state from one call to the next.
//
// json.Unmarshal builds its decoding state afresh on every call: the state
// itself, the scanner's stack of nested values, the stack of field names it
// keeps for its errors; for a small document such as a tool call's
// arguments or a model's answer these cost more allocations than the values
// decoded. [Unmarshal] takes a json.Decoder from a pool instead, whose state
// keeps its capacity across calls, and has the result and the errors of
// json.Unmarshal.
package jsondecode

import (
	"bytes"
	"encoding/json"
	"sync"
)

// MaxPooled is the largest document, in bytes, that [Unmarshal] decodes
// with a pooled decoder; a larger one goes to json.Unmarshal, so that no
// pooled decoder keeps a large buffer alive.
const MaxPooled = 64 << 10

// decoder is a json.Decoder reading r, which is reset to each document.
type decoder struct {
	r   bytes.Reader
	dec *json.Decoder
	fed int64 // bytes given to dec over its life
}

var pool = sync.Pool{New: func() any {
	d := new(decoder)
	d.dec = json.NewDecoder(&d.r)
	return d
}}

// Unmarshal is json.Unmarshal: it decodes the JSON document data into v,
// with the same result and the same errors, with one difference: when data
// holds a value followed by more than white space (the error "invalid
// character ... after top-level value"), v may have been filled from that
// first value, where json.Unmarshal leaves it as it was. A document of at most
// [MaxPooled] bytes is decoded by a decoder taken from a pool; any failure
// (data that is not one JSON value, a value of another type than v's) is
// left to json.Unmarshal itself, which gives its own error (and, for a
// value of another type, decodes the rest as it does), and the decoder is
// dropped. It is safe for concurrent use.
func Unmarshal(data []byte, v any) error {
	if len(data) > MaxPooled {
		return json.Unmarshal(data, v)
	}
	d := pool.Get().(*decoder)
	d.r.Reset(data)
	d.fed += int64(len(data))
	err := d.dec.Decode(v)
	if err == nil {
		// The decoder stops at the end of the value: what follows it in
		// data must be white space, as json.Unmarshal requires. (The white
		// space it has not read is read before the next document, which
		// may begin with white space too.)
		rest := d.fed - d.dec.InputOffset()
		if rest < 0 || rest > int64(len(data)) || !blank(data[int64(len(data))-rest:]) {
			err = errTrailing
		}
	}
	d.r.Reset(nil)
	if err != nil {
		return json.Unmarshal(data, v)
	}
	pool.Put(d)
	return nil
}

// errTrailing marks a document with more than white space after its value;
// json.Unmarshal reports it in its own words.
var errTrailing = &json.SyntaxError{}

// blank reports whether b is JSON white space only.
func blank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}
