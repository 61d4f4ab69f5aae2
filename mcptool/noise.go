package mcptool

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
)

// noiseLineKeep is how much of a line that is not JSON-RPC a log record
// shows, in bytes; noiseLogged is how many such lines are logged per server
// (the rest are only counted).
const (
	noiseLineKeep = 200
	noiseLogged   = 20
	// noiseCheckLen is the longest line whose JSON-RPC form is checked in
	// full; a longer line that starts like a JSON object is passed on as it
	// streams (a large tool result, say).
	noiseCheckLen = 64 << 10
)

// noiseFilter passes on, from a stdio server's stdout, only the lines that are
// JSON-RPC messages (MCP specification 2025-06-18, "Transports: stdio": the
// server "MUST NOT write anything to its stdout that is not a valid MCP
// message"). Servers that break this rule (a banner before initialize, an
// "[info] handling …" line or a JSON log record between messages) would
// otherwise make the SDK's decoder fail and close the connection for good;
// such lines are dropped and logged, the first noiseLogged of them with at
// most noiseLineKeep bytes each, quoted. Blank lines are dropped silently.
//
// A line of at most noiseCheckLen bytes is a message when it is a JSON object
// with "jsonrpc": "2.0", or a JSON array (a batch); a longer line when it
// starts with '{' or '['. Lines end with '\n'; no line is buffered beyond
// maxMsg.
//
// A message line longer than maxMsg bytes is not handed on: it is read to
// its end in bounded memory ([oversize]) and replaced by a message of its
// own, so that the SDK never meets a line over its limit (which would close
// the connection): a tool result keeps the start of its text
// (cutResultBytes) with a note saying it was cut, any other response
// becomes a JSON-RPC error for the same ID, and a request or notification is
// dropped. The connection, and the server process, stay.
type noiseFilter struct {
	r       *bufio.Reader
	logger  *slog.Logger
	server  string
	maxMsg  int
	pending []byte // the rest of a chunk to hand out
	drop    bool   // inside a long line being dropped
	dropped int    // lines dropped so far

	long []byte    // a long message line so far, while at most maxMsg
	over *oversize // set while reading a long line; it keeps what the replacement needs
	cut  bool      // the long line is over maxMsg: long is nil
}

func newNoiseFilter(r io.Reader, logger *slog.Logger, server string, maxMsg int) *noiseFilter {
	return &noiseFilter{r: bufio.NewReaderSize(r, noiseCheckLen), logger: logger, server: server, maxMsg: maxMsg}
}

// Read hands out the bytes of the message lines.
func (f *noiseFilter) Read(p []byte) (int, error) {
	for {
		if len(f.pending) > 0 {
			n := copy(p, f.pending)
			f.pending = f.pending[n:]
			return n, nil
		}
		chunk, err := f.r.ReadSlice('\n')
		full := errors.Is(err, bufio.ErrBufferFull)
		switch {
		case f.over != nil:
			f.longChunk(chunk, full)
		case f.drop:
			f.drop = full
		case len(chunk) > 0:
			switch {
			case !isMessage(chunk, full):
				f.noise(chunk, full)
				f.drop = full
			case full:
				f.over, f.cut = new(oversize), false
				f.long = append(f.long[:0], chunk...)
				f.over.write(chunk)
			default:
				f.pending = chunk
			}
		}
		if err != nil && !full && len(f.pending) == 0 {
			if f.over != nil { // the stream ended in the middle of a long line
				f.over, f.long = nil, nil
			}
			return 0, err
		}
	}
}

// longChunk takes the next chunk of a long message line: kept while the line
// is within maxMsg, and at its end handed on whole, or replaced when it was
// over.
func (f *noiseFilter) longChunk(chunk []byte, more bool) {
	f.over.write(chunk)
	if !f.cut {
		if len(f.long)+len(chunk) <= f.maxMsg+2 { // the line's end (\r\n) does not count
			f.long = append(f.long, chunk...)
		} else {
			f.long, f.cut = nil, true
		}
	}
	if more {
		return
	}
	over := f.over
	f.over = nil
	if !f.cut {
		f.pending, f.long = f.long, nil
		return
	}
	msg, why := over.replacement(f.maxMsg)
	if msg == nil {
		f.logger.Warn("mcp server sent a message over the size limit; dropped it",
			"server", f.server, "bytes", over.n, "limit", f.maxMsg, "why", why)
		return
	}
	f.logger.Warn("mcp server sent a message over the size limit; handing on a cut answer in its place",
		"server", f.server, "bytes", over.n, "limit", f.maxMsg)
	f.pending = append(msg, '\n')
}

// isMessage reports whether a line (or, when partial, the start of one) is a
// JSON-RPC message.
func isMessage(line []byte, partial bool) bool {
	t := bytes.TrimSpace(line)
	if len(t) == 0 {
		return false
	}
	if partial {
		return t[0] == '{' || t[0] == '['
	}
	switch t[0] {
	case '[':
		return json.Valid(t)
	case '{':
		var m struct {
			JSONRPC string `json:"jsonrpc"`
		}
		return json.Unmarshal(t, &m) == nil && m.JSONRPC == "2.0"
	}
	return false
}

// noise logs a dropped line, within the bounds.
func (f *noiseFilter) noise(line []byte, partial bool) {
	t := bytes.TrimSpace(line)
	if len(t) == 0 {
		return
	}
	f.dropped++
	switch {
	case f.dropped <= noiseLogged:
		shown := t
		if len(shown) > noiseLineKeep {
			shown = shown[:noiseLineKeep]
			partial = true
		}
		f.logger.Warn("mcp server wrote a line to stdout that is not JSON-RPC; skipped it",
			"server", f.server, "line", fmt.Sprintf("%q", shown), "cut", partial)
	case f.dropped == noiseLogged+1:
		f.logger.Warn("mcp server keeps writing lines to stdout that are not JSON-RPC; skipping them without logging",
			"server", f.server)
	}
}
