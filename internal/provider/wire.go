package provider

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// Limits on what a server sends, so that no answer can exhaust memory.
const (
	// MaxBodyBytes bounds a JSON response body and an error body.
	MaxBodyBytes = 32 << 20
	// MaxEventBytes bounds one line of a server-sent event stream, and the
	// data of one event.
	MaxEventBytes = 8 << 20
)

// ErrTooLarge is wrapped by the errors of [ReadBody] and [Events] when a
// server sends more than their limits allow.
var ErrTooLarge = errors.New("the server's answer exceeds the size limit")

// Post sends body to url as a JSON POST with the headers in header (its
// values are copied into the request in order), through client, and returns
// the response whatever its status; the caller closes its body. accept is the
// Accept header ("application/json", "text/event-stream").
func Post(ctx context.Context, client *http.Client, url string, header http.Header, accept string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	h := make(http.Header, len(header)+2)
	h["Content-Type"] = []string{"application/json"}
	h["Accept"] = []string{accept}
	for k, v := range header {
		h[k] = v
	}
	req.Header = h
	return client.Do(req)
}

// ReadBody reads r to its end, at most limit bytes; more is an error that
// wraps [ErrTooLarge].
func ReadBody(r io.Reader, limit int64) ([]byte, error) {
	return ReadBodySize(r, -1, limit)
}

// ReadBodySize is [ReadBody] for a body whose length the server announced
// (size, an http.Response's ContentLength; -1 when unknown): a body that
// fits the limit is read into one buffer of that size. A body longer or
// longer than announced is still read whole, up to the limit; one shorter
// than announced is cut, and fails with io.ErrUnexpectedEOF.
func ReadBodySize(r io.Reader, size, limit int64) ([]byte, error) {
	if size >= 0 && size <= limit {
		b := make([]byte, size, size+1)
		if _, err := io.ReadFull(r, b); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF // shorter than announced: cut
			}
			return nil, err
		}
		// The announced length was read: anything after it is more body.
		var one [1]byte
		if m, _ := io.ReadFull(r, one[:]); m == 0 {
			return b, nil
		}
		rest, err := ReadBody(r, limit-size-1)
		if err != nil {
			return nil, err
		}
		return append(append(b, one[0]), rest...), nil
	}
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
	}
	return b, nil
}

// Events reads server-sent events (https://html.spec.whatwg.org/multipage/server-sent-events.html)
// from a response body: "event:" and "data:" fields (several data lines
// joined by "\n"), comments (lines starting with ':') and other fields
// ignored, an event dispatched at a blank line. An event cut off by the end
// of the body, without its blank line, is not dispatched: it may be cut
// anywhere. Lines are bounded by [MaxEventBytes].
type Events struct {
	sc    *bufio.Scanner
	event []byte
	data  []byte
	err   error
}

// NewEvents returns an Events reading r.
func NewEvents(r io.Reader) *Events {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), MaxEventBytes)
	return &Events{sc: sc}
}

// Next reads the next event and reports whether there is one. Its type and
// data are valid until the next call.
func (e *Events) Next() bool {
	if e.err != nil {
		return false
	}
	e.event, e.data = e.event[:0], e.data[:0]
	hasData := false
	for e.sc.Scan() {
		line := e.sc.Bytes()
		if len(line) == 0 {
			if !hasData {
				e.event = e.event[:0]
				continue
			}
			if n := len(e.data); n > 0 && e.data[n-1] == '\n' {
				e.data = e.data[:n-1]
			}
			return true
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(name) {
		case "event":
			e.event = append(e.event[:0], value...)
		case "data":
			if len(e.data)+len(value) > MaxEventBytes {
				e.err = fmt.Errorf("%w: an event of more than %d bytes", ErrTooLarge, MaxEventBytes)
				return false
			}
			e.data = append(e.data, value...)
			e.data = append(e.data, '\n')
			hasData = true
		}
	}
	if err := e.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("%w: a line of more than %d bytes", ErrTooLarge, MaxEventBytes)
		}
		e.err = err
	}
	return false
}

// Type is the current event's type ("" when it had no event field).
func (e *Events) Type() []byte { return e.event }

// Data is the current event's data.
func (e *Events) Data() []byte { return e.data }

// Err is the error that ended the events, nil at the end of the body.
func (e *Events) Err() error { return e.err }
