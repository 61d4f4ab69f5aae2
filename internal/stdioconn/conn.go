// Package stdioconn is an MCP connection over newline-delimited JSON-RPC
// (MCP specification 2025-06-18, "Transports: stdio"): each message is one
// line of UTF-8 JSON, ended by '\n'.
//
// It does what the official SDK's [mcp.IOTransport] does, with two
// differences that matter on a relay's hot path: a line is read in the
// goroutine that calls [Conn.Read] (no reader goroutine and channel between
// the pipe and the SDK), and each line is decoded once. So the reader given
// to [New] must be unblocked by closing it: an [*os.File] made pollable (a
// pipe or socket in non-blocking mode, see [Pollable]), not a terminal.
package stdioconn

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrTooLong is the error of a line over the connection's limit. The
// connection is closed after it, as the SDK's is.
var ErrTooLong = errors.New("stdioconn: a JSON-RPC message is over the size limit")

// Conn is an [mcp.Connection] over a reader and a writer. Read is called
// by one goroutine at a time (the SDK's); Write and Close by any.
type Conn struct {
	r      *bufio.Reader
	w      io.Writer
	closer io.Closer
	max    int

	line  []byte            // the line being read, reused
	queue []jsonrpc.Message // the rest of a batch

	wmu     sync.Mutex
	batches batches

	closeOnce sync.Once
	closeErr  error
}

// New returns a connection that reads messages from r, writes them to w,
// and on Close closes closer (which must unblock a Read of r pending then).
// A line longer than max bytes ends the connection with [ErrTooLong]; zero
// means [mcp.DefaultMaxLineLength] (16 MiB).
func New(r io.Reader, w io.Writer, closer io.Closer, max int) *Conn {
	if max <= 0 {
		max = mcp.DefaultMaxLineLength
	}
	return &Conn{r: bufio.NewReaderSize(r, 64<<10), w: w, closer: closer, max: max}
}

// Transport is an [mcp.Transport] whose Connect returns Conn.
type Transport struct{ Conn *Conn }

// Connect returns t.Conn; it can be called once.
func (t Transport) Connect(context.Context) (mcp.Connection, error) { return t.Conn, nil }

// Read returns the next message. Blank lines are skipped. Errors: io.EOF at
// the end of input or after Close, [ErrTooLong], a line that is not one
// JSON-RPC message or batch (the connection cannot go on after either), a
// batch after a protocol version that has none was agreed.
func (c *Conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, nil
	}
	for {
		line, err := c.readLine()
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			continue
		}
		if line[0] == '[' {
			return c.readBatch(line)
		}
		return c.decode(line)
	}
}

// readLine returns the next line without its end, or an error.
func (c *Conn) readLine() ([]byte, error) {
	c.line = c.line[:0]
	for {
		chunk, err := c.r.ReadSlice('\n')
		if len(c.line)+len(chunk) > c.max+2 { // the line's end (\r\n) does not count
			return nil, ErrTooLong
		}
		c.line = append(c.line, chunk...)
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, os.ErrClosed):
			return nil, io.EOF
		case err != nil && (len(c.line) == 0 || !errors.Is(err, io.EOF)):
			return nil, err
		}
		return bytes.TrimSpace(c.line), nil
	}
}

// decode decodes one message; the line must hold exactly one JSON value.
func (c *Conn) decode(line []byte) (jsonrpc.Message, error) {
	if !json.Valid(line) {
		return nil, fmt.Errorf("stdioconn: a line is not one JSON value")
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return nil, fmt.Errorf("stdioconn: %w", err)
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "initialize" && req.ID.IsValid() {
		c.batches.initializing(req.ID)
	}
	return msg, nil
}

// Write writes msg as one line; a response that completes a batch writes
// the batch's responses as one array, and one that does not is held.
func (c *Conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.batches.answered(resp)
		if all, held := c.batches.complete(resp); held {
			if all == nil {
				return nil
			}
			return c.writeBatch(all)
		}
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("stdioconn: encoding a message: %w", err)
	}
	return c.writeLine(data)
}

func (c *Conn) writeLine(data []byte) error {
	data = append(data, '\n')
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(data)
	return err
}

// Close closes the reader's closer once; later calls return the same error.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.closer.Close() })
	return c.closeErr
}

// SessionID is empty: a stdio connection has no session ID.
func (c *Conn) SessionID() string { return "" }
