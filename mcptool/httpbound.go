package mcptool

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
)

// ErrHTTPMessageTooLarge is returned (wrapped, with the server's name) when
// a streamable-HTTP server sends a JSON response body, or one event of an
// SSE stream, larger than [Options].MaxMessageBytes: the body is closed
// there, so that a hostile server cannot fill memory.
var ErrHTTPMessageTooLarge = errors.New("message over the size limit")

// ErrCrossHostRedirect is returned (wrapped) when a streamable-HTTP server
// with configured headers redirects to another scheme, host or port: the
// redirect is not followed, since the headers (Authorization, API keys)
// would go there too.
var ErrCrossHostRedirect = errors.New("redirect to another host refused")

// boundTransport limits what one streamable-HTTP server may send: a JSON
// body at most max bytes, an SSE stream at most max bytes per event.
type boundTransport struct {
	base   http.RoundTripper
	server string
	max    int64
	onOver func(*error) // may be nil
}

func (t *boundTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	sse := false
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err == nil && mt == "text/event-stream" {
		sse = true
	}
	resp.Body = &boundBody{rc: resp.Body, server: t.server, max: t.max, sse: sse, onOver: t.onOver}
	return resp, nil
}

// boundBody fails a read once more than max bytes came without an end of
// message: the end of the body, or for SSE a blank line (an event's end).
type boundBody struct {
	rc     io.ReadCloser
	server string
	max    int64
	sse    bool
	onOver func(*error)
	n      int64 // bytes of the current message
	prev   byte  // the last byte read, for "\n\n"
	prev2  byte  // the one before, for "\n\r\n"
	err    error
}

func (b *boundBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if int64(len(p)) > b.max+1 {
		p = p[:b.max+1]
	}
	n, err := b.rc.Read(p)
	for i := range n {
		c := p[i]
		b.n++
		if b.sse && c == '\n' && (b.prev == '\n' || (b.prev == '\r' && b.prev2 == '\n')) {
			b.n = 0
		}
		if b.n > b.max {
			b.err = fmt.Errorf("mcptool: server %q: %w: more than %d bytes in one %s", b.server, ErrHTTPMessageTooLarge, b.max, b.kind())
			_ = b.rc.Close()
			if b.onOver != nil {
				err := b.err
				b.onOver(&err)
			}
			return i, b.err
		}
		b.prev2, b.prev = b.prev, c
	}
	return n, err
}

func (b *boundBody) kind() string {
	if b.sse {
		return "SSE event"
	}
	return "response body"
}

func (b *boundBody) Close() error { return b.rc.Close() }

// refuseCrossHost returns a CheckRedirect that refuses a redirect to
// another origin (scheme, host and port) than the request's first, and
// otherwise defers to next (nil: Go's default of at most 10 redirects).
func refuseCrossHost(server string, next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) > 0 && !sameOrigin(req.URL, via[0].URL) {
			return fmt.Errorf("mcptool: server %q: %w: %s redirected to %s, and the server's headers would go with it", server, ErrCrossHostRedirect, origin(via[0].URL), origin(req.URL))
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
}

func sameOrigin(a, b *url.URL) bool {
	return a.Scheme == b.Scheme && a.Host == b.Host
}

func origin(u *url.URL) string { return u.Scheme + "://" + u.Host }
