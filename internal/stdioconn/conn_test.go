package stdioconn_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/internal/stdioconn"
)

// pipes returns a Conn reading one pipe and writing another, and the far
// ends: what to write to it and what it wrote.
func pipes(t *testing.T, max int) (*stdioconn.Conn, *os.File, *bufio.Reader) {
	t.Helper()
	c, w, r, _ := pipesOut(t, max)
	return c, w, r
}

// pipesOut is pipes, with the write end of the connection's output: a
// test closes it once the connection has stopped, to read all it wrote.
func pipesOut(t *testing.T, max int) (*stdioconn.Conn, *os.File, *bufio.Reader, *os.File) {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	in, closer, ok := stdioconn.Pollable(inR)
	if !ok {
		t.Fatal("a pipe is not pollable")
	}
	t.Cleanup(func() { inW.Close(); outR.Close(); outW.Close(); closer.Close(); inR.Close() })
	return stdioconn.New(in, outW, closer, max), inW, bufio.NewReader(outR), outW
}

// noMoreAnswers reads, once the connection has stopped (its output's
// write end closed), what it wrote after the answers read so far.
func noMoreAnswers(t *testing.T, r *bufio.Reader, out *os.File) {
	t.Helper()
	out.Close()
	if rest, _ := io.ReadAll(r); len(rest) > 0 {
		t.Fatalf("a batch under 2025-06-18 was answered: %q", rest)
	}
}

// serve serves an SDK server with an echo tool on c; the channel is closed
// when it has stopped.
func serve(t *testing.T, c *stdioconn.Conn) <-chan struct{} {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Run(ctx, stdioconn.Transport{Conn: c}) }()
	t.Cleanup(func() { cancel(); <-done })
	return done
}

func TestSDKClientAndServer(t *testing.T) {
	c, w, r := pipes(t, 0)
	serve(t, c)
	cl := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	cs, err := cl.Connect(t.Context(), &mcp.IOTransport{Reader: io.NopCloser(r), Writer: w}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, text := range []string{"one", "two", strings.Repeat("é", 100_000)} {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
		if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != text {
			t.Fatalf("echo %.10q: %+v, %v", text, res, err)
		}
	}
}

// lines writes raw lines to the server and returns the next line it writes.
func exchange(t *testing.T, w io.Writer, r *bufio.Reader, lines ...string) string {
	t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(w, l); err != nil {
			t.Fatal(err)
		}
	}
	got, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return got
}

const initialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"VERSION","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n"

func TestBlankLinesAndCRLF(t *testing.T) {
	c, w, r := pipes(t, 0)
	serve(t, c)
	exchange(t, w, r, strings.Replace(initialize, "VERSION", "2025-06-18", 1))
	got := exchange(t, w, r, "\n  \r\n", `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\r\n", `{"jsonrpc":"2.0","id":7,"method":"ping"}`+"\r\n")
	if !strings.Contains(got, `"id":7`) {
		t.Fatalf("ping answered %q", got)
	}
}

func TestBatchAnsweredAsOneArray(t *testing.T) {
	c, w, r := pipes(t, 0)
	serve(t, c)
	exchange(t, w, r, strings.Replace(initialize, "VERSION", "2025-03-26", 1))
	got := exchange(t, w, r, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n",
		`[{"jsonrpc":"2.0","id":"a","method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`+"\n")
	var resps []struct {
		ID any `json:"id"`
	}
	if err := json.Unmarshal([]byte(got), &resps); err != nil || len(resps) != 2 || resps[0].ID != "a" || resps[1].ID != 2.0 {
		t.Fatalf("a batch of two pings answered %q (%v)", got, err)
	}
}

func TestBatchRefusedAfter20250618(t *testing.T) {
	c, w, r, out := pipesOut(t, 0)
	done := serve(t, c)
	exchange(t, w, r, strings.Replace(initialize, "VERSION", "2025-06-18", 1))
	_, _ = io.WriteString(w, `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`+"\n")
	select {
	case <-done: // the connection ended, with nothing answered
	case <-time.After(30 * time.Second):
		t.Fatal("a batch under 2025-06-18 did not end the connection")
	}
	noMoreAnswers(t, r, out)
}

// read calls c.Read until it fails and returns the error and what it read.
func read(c *stdioconn.Conn) (msgs []jsonrpc.Message, err error) {
	for {
		m, err := c.Read(context.Background())
		if err != nil {
			return msgs, err
		}
		msgs = append(msgs, m)
	}
}

func TestLineErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		input string
		want  int // messages read before the error
	}{
		"trailing data":      {`{"jsonrpc":"2.0","id":1,"method":"ping"} {"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n", 0},
		"not json":           {`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\nhello\n", 1},
		"wrong version":      {`{"jsonrpc":"1.0","id":1,"method":"ping"}` + "\n", 0},
		"empty batch":        {"[]\n", 0},
		"duplicate in batch": {`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":1,"method":"ping"}]` + "\n", 0},
	} {
		t.Run(name, func(t *testing.T) {
			c := stdioconn.New(strings.NewReader(tc.input), io.Discard, io.NopCloser(nil), 0)
			msgs, err := read(c)
			if len(msgs) != tc.want || err == nil || errors.Is(err, io.EOF) {
				t.Fatalf("read %d messages, then %v; want %d, then an error", len(msgs), err, tc.want)
			}
		})
	}
}

func TestTooLongLine(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", 300<<10) + `"}}` + "\n"
	c := stdioconn.New(io.MultiReader(strings.NewReader(long), endless{}), io.Discard, io.NopCloser(nil), 256<<10)
	if _, err := read(c); !errors.Is(err, stdioconn.ErrTooLong) {
		t.Fatalf("a line over the limit read as %v", err)
	}
	c = stdioconn.New(strings.NewReader(long), io.Discard, io.NopCloser(nil), 512<<10)
	if msgs, err := read(c); len(msgs) != 1 || !errors.Is(err, io.EOF) {
		t.Fatalf("a line within the limit: %d messages, %v", len(msgs), err)
	}
}

// endless is a reader of 'a's that never ends a line.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

func TestCloseEndsAPendingRead(t *testing.T) {
	c, _, _ := pipes(t, 0)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Read(context.Background())
		errc <- err
	}()
	// The read may start before or after Close: either way it must end.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, io.EOF) {
			t.Fatalf("read after Close: %v, want io.EOF", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not end a pending Read")
	}
}

func TestPollableRefusesAFile(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, _, ok := stdioconn.Pollable(f); ok {
		t.Fatal("a regular file was taken as pollable")
	}
}

// A second initialize sent before the first is answered does not keep the
// version the first agreed from counting: batches stay refused.
func TestBatchRefusedAfterTwoInitializes(t *testing.T) {
	c, w, r, out := pipesOut(t, 0)
	done := serve(t, c)
	second := strings.Replace(strings.Replace(initialize, "VERSION", "2025-06-18", 1), `"id":0`, `"id":1`, 1)
	exchange(t, w, r, strings.Replace(initialize, "VERSION", "2025-06-18", 1), second)
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatalf("reading the second answer: %v", err)
	}
	_, _ = io.WriteString(w, `[{"jsonrpc":"2.0","id":2,"method":"ping"}]`+"\n")
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("a batch under 2025-06-18 did not end the connection")
	}
	noMoreAnswers(t, r, out)
}
