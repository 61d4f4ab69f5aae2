package provider

import (
	"bufio"
	"io"
	"net/http"
	"strings"
)

// JSONAnswer tells the answer to a streaming request that is one JSON body
// (a server that does not stream, a gateway that fails, sends a whole
// answer or an error object) from an event stream. It returns the reader
// to read the body from, and whether the body is JSON: its Content-Type is
// application/json or a type with a +json suffix, and its first byte that
// is not white space is '{'. An event stream labelled application/json is
// an event stream. The reader is resp.Body itself when the Content-Type is
// not JSON, else a reader that buffers it: of a JSON body only the white
// space before it is consumed, of an event stream nothing.
func JSONAnswer(resp *http.Response) (io.Reader, bool) {
	ct, _, _ := strings.Cut(strings.ToLower(resp.Header.Get("Content-Type")), ";")
	ct = strings.TrimSpace(ct)
	if ct != "application/json" && !strings.HasSuffix(ct, "+json") {
		return resp.Body, false
	}
	br := bufio.NewReader(resp.Body)
	return br, startsJSON(br)
}

// startsJSON reports whether the first byte of r that is not white space
// is '{', without consuming it.
func startsJSON(r *bufio.Reader) bool {
	for {
		c, err := r.ReadByte()
		if err != nil {
			return false
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		_ = r.UnreadByte()
		return c == '{'
	}
}
