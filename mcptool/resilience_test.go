package mcptool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/internal/argcheck"
	"github.com/tollgate-dev/tollgate/internal/toolcall"
	"github.com/tollgate-dev/tollgate/tool"
)

// One tool with a schema that cannot be resolved (a $ref to a missing
// #/$defs/ScreenInstance) or a name that cannot be shown is skipped alone,
// with a reason naming what is wrong; its siblings, including schemas whose
// refs resolve ($defs and draft-07 definitions), are offered.
func TestUnusableToolSkippedAlone(t *testing.T) {
	srv := newServer(nil)
	ok := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "fine"}}}
	handler := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return ok, nil }
	srv.AddTool(&mcp.Tool{Name: "good", InputSchema: objectSchema}, handler)
	srv.AddTool(&mcp.Tool{Name: "screens", InputSchema: map[string]any{
		"type":       "object",
		"properties": map[string]any{"screen": map[string]any{"$ref": "#/$defs/ScreenInstance"}},
	}}, handler)
	srv.AddTool(&mcp.Tool{Name: "defs", InputSchema: map[string]any{
		"type":       "object",
		"properties": map[string]any{"p": map[string]any{"$ref": "#/$defs/Point"}},
		"$defs":      map[string]any{"Point": map[string]any{"type": "object", "required": []any{"x"}}},
	}}, handler)
	srv.AddTool(&mcp.Tool{Name: "draft7", InputSchema: map[string]any{
		"$schema":     "http://json-schema.org/draft-07/schema#",
		"type":        "object",
		"properties":  map[string]any{"p": map[string]any{"$ref": "#/definitions/Point"}},
		"definitions": map[string]any{"Point": map[string]any{"type": "object", "required": []any{"x"}}},
	}}, handler)
	srv.AddTool(&mcp.Tool{Name: "bell\x07", InputSchema: objectSchema}, handler)

	s := open(t, &Config{Servers: map[string]*ServerConfig{"app": {Transport: serve(t, srv)}}}, nil)
	st := status(t, s, "app")
	if st.State != StateReady || st.Tools != 3 {
		t.Fatalf("status = %+v; want ready with 3 tools", st)
	}
	tools := toolsByName(s)
	for _, name := range []string{"mcp__app__good", "mcp__app__defs", "mcp__app__draft7"} {
		if tools[name] == nil {
			t.Errorf("%s is not offered; tools: %v", name, tools)
		}
	}
	if len(st.Skipped) != 2 {
		t.Fatalf("skipped = %+v; want screens and the bell", st.Skipped)
	}
	// The SDK's server lists its tools by name.
	if sk := st.Skipped[1]; sk.Tool != "screens" || !strings.Contains(sk.Reason, "$defs/ScreenInstance") {
		t.Errorf("skipped[1] = %+v; want screens with the missing ref", sk)
	}
	if sk := st.Skipped[0]; sk.Tool != "bell\x07" || !strings.Contains(sk.Reason, "control character") {
		t.Errorf("skipped[0] = %+v; want the bell's name refused", sk)
	}
	res, err := tools["mcp__app__good"].Call(context.Background(), nil)
	if err != nil || res.Output != "fine" {
		t.Errorf("good: %+v, %v", res, err)
	}
	// The resolved refs are enforced, not ignored.
	v, err := argcheck.New(tools["mcp__app__draft7"].Spec().InputSchema)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Validate([]byte(`{"p": {}}`)); err == nil {
		t.Error(`draft7: {"p": {}} passed; definitions/Point requires x`)
	}
}

// A stdio server that writes a banner before initialize and log lines between
// messages on stdout: the lines are skipped and logged (quoted), and every
// call returns its result.
func TestStdoutNoiseSkipped(t *testing.T) {
	sw := &syncWriter{w: new(bytes.Buffer)}
	logger := slog.New(slog.NewTextHandler(sw, nil))
	s := open(t, &Config{Servers: map[string]*ServerConfig{"noisy": {
		Command: os.Args[0],
		Env:     map[string]string{"MCPTOOL_TEST_HELPER": "noisy"},
	}}}, &Options{Logger: logger})
	if st := status(t, s, "noisy"); st.State != StateReady || st.Tools != 1 {
		t.Fatalf("status = %+v", st)
	}
	echo := toolsByName(s)["mcp__noisy__echo"]
	for i := range 3 {
		want := fmt.Sprintf("call %d", i)
		res, err := echo.Call(context.Background(), json.RawMessage(fmt.Sprintf(`{"text": %q}`, want)))
		if err != nil || res.Output != want {
			t.Fatalf("call %d: %+v, %v", i, res, err)
		}
	}
	_ = s.Close()
	logged := sw.String()
	for _, want := range []string{"noisy-server 1.0 starting on stdio", "[info] handling tools/call echo", `{\\\"level\\\":\\\"info\\\"`} {
		if !strings.Contains(logged, want) {
			t.Errorf("log lacks %s:\n%s", want, logged)
		}
	}
}

// syncWriter serializes writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.String()
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// A streamable-HTTP server that restarts after the first call (its sessions
// are gone; it answers 404 "session not found"): the next call starts a new
// session and succeeds, and so do the calls after it.
func TestStreamableHTTPServerRestarted(t *testing.T) {
	var inits atomic.Int32
	newHandler := func() http.Handler {
		srv := newServer(&mcp.ServerOptions{InitializedHandler: func(context.Context, *mcp.InitializedRequest) { inits.Add(1) }})
		srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: objectSchema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ Text string }
			_ = json.Unmarshal(req.Params.Arguments, &args)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: args.Text}}}, nil
		})
		return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	}
	var current atomic.Pointer[http.Handler]
	h := newHandler()
	current.Store(&h)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*current.Load()).ServeHTTP(w, r) }))
	t.Cleanup(hs.Close)

	s := open(t, &Config{Servers: map[string]*ServerConfig{"web": {URL: hs.URL}}}, nil)
	echo := toolsByName(s)["mcp__web__echo"]
	if echo == nil {
		t.Fatalf("no echo tool; status %+v", s.Servers())
	}
	call := func(text string) {
		t.Helper()
		res, err := echo.Call(context.Background(), json.RawMessage(fmt.Sprintf(`{"text": %q}`, text)))
		if err != nil || res.IsError || res.Output != text {
			t.Fatalf("call %q: %+v, %v", text, res, err)
		}
	}
	call("before")
	// The restart: a new handler knows no session.
	h2 := newHandler()
	current.Store(&h2)
	start := time.Now()
	rep := &notices{}
	res, err := echo.Call(toolcall.WithReporter(context.Background(), rep), json.RawMessage(`{"text": "after"}`))
	if err != nil || res.Output != "after" {
		t.Fatalf("call after the restart: %+v, %v", res, err)
	}
	t.Logf("the call that renewed the session took %s", time.Since(start))
	if got := rep.list(); len(got) != 1 || got[0].Kind != "restart" || !strings.Contains(got[0].Message, "new session") {
		t.Errorf("notices %+v; want one new session of mcp:web", got)
	}
	call("again")
	if n := inits.Load(); n != 2 {
		t.Errorf("%d sessions were initialized; want 2", n)
	}
	if st := status(t, s, "web"); st.Renewals != 1 {
		t.Errorf("renewals = %d; want 1", st.Renewals)
	}
}

// A stdio server that exits in the middle of a call: the call fails with an
// error naming the server and the tool (it does not hang), and the next call
// starts the server again and gets its result.
func TestStdioServerExitsDuringCall(t *testing.T) {
	s := open(t, &Config{Servers: map[string]*ServerConfig{"flaky": {
		Command: os.Args[0],
		Env:     map[string]string{"MCPTOOL_TEST_HELPER": "crash"},
	}}}, &Options{ShutdownGrace: 200 * time.Millisecond})
	tools := toolsByName(s)
	echo, crash := tools["mcp__flaky__echo"], tools["mcp__flaky__crash"]
	if echo == nil || crash == nil {
		t.Fatalf("tools: %v; status %+v", tools, s.Servers())
	}
	first, err := echo.Call(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// A bound for the test only: without it a hang would block until the
	// test binary's own timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, err = crash.Call(ctx, nil)
	t.Logf("the call in flight failed after %s: %v", time.Since(start), err)
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), `mcp server "flaky": tool "crash"`) {
		t.Fatalf("crash: err = %v (ctx %v); want an error naming the server and tool, before the deadline", err, ctx.Err())
	}
	start = time.Now()
	rep := &notices{}
	second, err := echo.Call(toolcall.WithReporter(context.Background(), rep), nil)
	t.Logf("the call that restarted the server took %s", time.Since(start))
	if err != nil || second.IsError {
		t.Fatalf("echo after the crash: %+v, %v", second, err)
	}
	if got := rep.list(); len(got) != 1 || got[0].Kind != "restart" || got[0].Source != "mcp:flaky" || !strings.Contains(got[0].Message, "started again") {
		t.Errorf("notices %+v; want one restart of mcp:flaky", got)
	}
	if second.Output == first.Output {
		t.Errorf("echo answered from pid %s both times; want a new process", first.Output)
	}
	if st := status(t, s, "flaky"); st.Renewals != 1 {
		t.Errorf("renewals = %d; want 1", st.Renewals)
	}
}

// A stdio server that exits and then cannot start again: the next call gets
// an error saying the new session failed after a bounded number of tries,
// with backoff between them, not a hang or an endless loop.
func TestStdioServerRestartBounded(t *testing.T) {
	s := open(t, &Config{Servers: map[string]*ServerConfig{"once": {
		Command: os.Args[0],
		Env:     map[string]string{"MCPTOOL_TEST_HELPER": "once", "MCPTOOL_TEST_MARKER": filepath.Join(t.TempDir(), "started")},
	}}}, &Options{ShutdownGrace: 200 * time.Millisecond})
	tools := toolsByName(s)
	if _, err := tools["mcp__once__crash"].Call(context.Background(), nil); err == nil {
		t.Fatal("crash: no error")
	}
	start := time.Now()
	_, err := tools["mcp__once__echo"].Call(context.Background(), nil)
	took := time.Since(start)
	t.Logf("giving up on the restart took %s: %v", took, err)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("a new session failed %d times", renewAttempts)) ||
		!strings.Contains(err.Error(), "once: refusing to start again") {
		t.Fatalf("err = %v; want the bounded restart to give up, with the server's stderr", err)
	}
	if took < 3*renewBackoff {
		t.Errorf("gave up after %s; want the backoff (%s, then %s) between tries", took, renewBackoff, 2*renewBackoff)
	}
	if st := status(t, s, "once"); st.Renewals != 0 {
		t.Errorf("renewals = %d; want 0", st.Renewals)
	}
}

// A result over the limit for one message (here over the SDK's own limit,
// 16 MiB, whose breach would close the connection; the ID written last, as
// Node.js servers do) is cut to its first cutResultBytes of text, with a
// note, and the connection stays: later calls are answered by the same
// process, which started once.
func TestStdioOversizedResult(t *testing.T) {
	starts := filepath.Join(t.TempDir(), "starts")
	s := open(t, &Config{Servers: map[string]*ServerConfig{"flaky": {
		Command: os.Args[0],
		Env:     map[string]string{"MCPTOOL_TEST_HELPER": "rawbig", "MCPTOOL_TEST_STARTS": starts},
	}}}, &Options{ShutdownGrace: 200 * time.Millisecond})
	tools := toolsByName(s)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	before, err := tools["mcp__flaky__echo"].Call(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := tools["mcp__flaky__big"].Call(ctx, nil)
	t.Logf("the oversized result took %s", time.Since(start))
	if err != nil || res.IsError {
		t.Fatalf("big: %.200v, %v; want a result cut to its start", res, err)
	}
	if !strings.HasPrefix(res.Output, strings.Repeat("b", 1000)) || !strings.Contains(res.Output, "[cut: the MCP server's message was") ||
		len(res.Output) > cutResultBytes+300 {
		t.Errorf("big: %d bytes, ending %q", len(res.Output), res.Output[max(0, len(res.Output)-200):])
	}
	if n, _ := res.Metadata[metaCut].(int64); n <= int64(mcp.DefaultMaxLineLength) {
		t.Errorf("metadata %s = %v; want the message's size", metaCut, res.Metadata[metaCut])
	}
	after, err := tools["mcp__flaky__echo"].Call(ctx, nil)
	if err != nil || after.IsError {
		t.Fatalf("echo after the oversized result: %+v, %v", after, err)
	}
	if after.Output != before.Output {
		t.Errorf("echo answered from pid %s, then %s; want the same process", before.Output, after.Output)
	}
	if st := status(t, s, "flaky"); st.Renewals != 0 {
		t.Errorf("renewals = %d; want 0", st.Renewals)
	}
	if b, _ := os.ReadFile(starts); strings.Count(string(b), "\n") != 1 {
		t.Errorf("the server started %d times; want once", strings.Count(string(b), "\n"))
	}
}

// With a limit for one message below what its replacement holds (the
// first cutResultBytes of its text), a result over the limit is still cut
// and handed on, and the connection stays.
func TestStdioOversizedResultSmallLimit(t *testing.T) {
	s := open(t, &Config{Servers: map[string]*ServerConfig{"small": {
		Command: os.Args[0],
		Env:     map[string]string{"MCPTOOL_TEST_HELPER": "rawbig", "MCPTOOL_TEST_BIG": strconv.Itoa(2 * noiseCheckLen)},
	}}}, &Options{ShutdownGrace: 200 * time.Millisecond, MaxMessageBytes: 4096})
	tools := toolsByName(s)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	before, err := tools["mcp__small__echo"].Call(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tools["mcp__small__big"].Call(ctx, nil)
	if err != nil || res.IsError || !strings.Contains(res.Output, "[cut: the MCP server's message was") {
		t.Fatalf("big: %.200v, %v; want a result cut to its start", res, err)
	}
	after, err := tools["mcp__small__echo"].Call(ctx, nil)
	if err != nil || after.IsError || after.Output != before.Output {
		t.Fatalf("echo after the oversized result: %+v, %v; want pid %s", after, err, before.Output)
	}
}

// notices is a tool.Reporter that keeps the notices.
type notices struct {
	mu sync.Mutex
	ns []tool.Notice
}

func (n *notices) Progress(tool.Progress) {}

func (n *notices) Notice(x tool.Notice) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ns = append(n.ns, x)
}

func (n *notices) list() []tool.Notice {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]tool.Notice(nil), n.ns...)
}
