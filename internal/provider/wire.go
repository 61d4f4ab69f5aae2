package provider

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"slices"
)

// Limits on what a server sends, so that no answer can exhaust memory.
const (
	// MaxBodyBytes bounds a JSON response body, an error body, and the
	// whole body of a server-sent event stream (see [NewEventsLimit]).
	MaxBodyBytes = 32 << 20
	// MaxEventBytes bounds one line of a server-sent event stream, and the
	// data of one event.
	MaxEventBytes = 8 << 20
)

// ErrTooLarge is wrapped by the errors of [ReadBody] and [Events] when a
// server sends more than their limits allow.
var ErrTooLarge = errors.New("the server's answer exceeds the size limit")

// RequestHeader returns the complete header of a JSON POST: Content-Type
// application/json, Accept accept ("application/json",
// "text/event-stream"), then every value of extra in order (a key of extra
// replaces those two). A provider builds it once per accept type and passes
// it to every [Post].
func RequestHeader(extra http.Header, accept string) http.Header {
	h := make(http.Header, len(extra)+2)
	h["Content-Type"] = []string{"application/json"}
	h["Accept"] = []string{accept}
	for k, v := range extra {
		h[k] = slices.Clone(v)
	}
	return h
}

// Post sends body to url as a POST with header (from [RequestHeader]),
// through client, and returns the response whatever its status; the caller
// closes its body. A redirect that the client (from [Client]) refuses fails
// with an error wrapping [ErrRedirect], never retried. header is used as the request's header as is, without a
// copy, when client cannot change it (no cookie jar, and its transport, or
// http.DefaultTransport when it has none, is an *http.Transport, which never
// writes to a request); for any other
// client, say a RoundTripper that adds a header in place, each request gets a
// copy, so that concurrent calls never share a map that is written.
func Post(ctx context.Context, client *http.Client, url string, header http.Header, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if readOnlyHeader(client) {
		req.Header = header
	} else {
		req.Header = header.Clone()
	}
	resp, err := client.Do(req)
	if err != nil && errors.Is(err, ErrRedirect) {
		// Unwrapped from its *url.Error, which is a net.Error: a refused
		// redirect is not a transient failure, and is not retried.
		var ue *neturl.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, err
	}
	return resp, err
}

// readOnlyHeader reports whether client leaves a request's header unchanged:
// net/http's Client writes to it only to add a cookie jar's cookies, and its
// Transport never does.
func readOnlyHeader(c *http.Client) bool {
	if c.Jar != nil {
		return false
	}
	t := c.Transport
	if t == nil {
		t = http.DefaultTransport // which a program may have replaced
	}
	_, ok := t.(*http.Transport)
	return ok
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
		// The announced length was read: anything after it is more body,
		// read into the room left for one more byte.
		if m, _ := io.ReadFull(r, b[size:size+1]); m == 0 {
			return b, nil
		}
		rest, err := ReadBody(r, limit-size-1)
		if err != nil {
			return nil, err
		}
		return append(b[:size+1], rest...), nil
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
// anywhere. Lines are bounded by [MaxEventBytes], the whole body by the
// limit given to [NewEventsLimit].
type Events struct {
	sc    bufio.Scanner
	body  capReader
	event []byte
	data  []byte
	err   error
	// buf is the scanner's first buffer and evbuf the event type's, so
	// that a stream of short lines costs one allocation.
	buf   [4096]byte
	evbuf [32]byte
}

// NewEvents returns an Events reading r, at most [MaxBodyBytes] of it.
func NewEvents(r io.Reader) *Events {
	return NewEventsLimit(r, MaxBodyBytes)
}

// NewEventsLimit returns an Events reading at most limit bytes of r, counted
// as they are read, whatever they hold (events, comments, pings): the
// events of the first limit bytes are dispatched, then the events end and
// Err returns an error wrapping [ErrTooLarge] that states the limit. A
// limit <= 0 means [MaxBodyBytes].
func NewEventsLimit(r io.Reader, limit int64) *Events {
	if limit <= 0 {
		limit = MaxBodyBytes
	}
	e := &Events{body: capReader{r: r, left: limit, limit: limit}}
	e.sc = *bufio.NewScanner(&e.body)
	e.sc.Buffer(e.buf[:0], MaxEventBytes)
	e.event = e.evbuf[:0]
	return e
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

// capReader reads r until limit bytes have been read; then one byte more
// is an error wrapping [ErrTooLarge], and the end of r is the end.
type capReader struct {
	r           io.Reader
	left, limit int64
	one         [1]byte
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left > 0 {
		if int64(len(p)) > c.left {
			p = p[:c.left]
		}
		n, err := c.r.Read(p)
		c.left -= int64(n)
		return n, err
	}
	if n, err := c.r.Read(c.one[:]); n == 0 {
		return 0, err
	}
	return 0, fmt.Errorf("%w: a streamed answer of more than %d bytes", ErrTooLarge, c.limit)
}

// Type is the current event's type ("" when it had no event field).
func (e *Events) Type() []byte { return e.event }

// Data is the current event's data.
func (e *Events) Data() []byte { return e.data }

// Err is the error that ended the events, nil at the end of the body.
func (e *Events) Err() error { return e.err }
