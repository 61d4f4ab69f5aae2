package mcptool_test

// The MCP field cases end to end: MCP tools from mcptool offered to a real
// agent.Agent, with declarative hooks, BeforeTool/AfterTool hooks and an
// policy.Policy around them. The servers are go-sdk servers in this process
// (whose middleware records every tools/call that reaches them) and the real
// @modelcontextprotocol/server-filesystem.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/hooks/declarative"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/mcptool"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/tool"
)

// server is an in-process MCP server that records every tools/call request
// that reaches it, before any tool handler runs.
type server struct {
	srv   *mcp.Server
	mu    sync.Mutex
	calls []string // "<tool> <arguments as compact JSON>"
}

func newServer() *server {
	s := &server{srv: mcp.NewServer(&mcp.Implementation{Name: "in-process", Version: "0"}, nil)}
	s.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				p, _ := req.GetParams().(*mcp.CallToolParamsRaw)
				if p != nil {
					s.mu.Lock()
					s.calls = append(s.calls, p.Name+" "+compact(p.Arguments))
					s.mu.Unlock()
				}
			}
			return next(ctx, method, req)
		}
	})
	return s
}

// tool adds a tool that answers every call with res.
func (s *server) tool(name string, ann *mcp.ToolAnnotations, res *mcp.CallToolResult) {
	s.srv.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}, Annotations: ann},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return res, nil })
}

func (s *server) received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// config returns the server's configuration: one end of an in-memory pipe
// whose other end it serves.
func (s *server) config(t *testing.T, trusted bool) *mcptool.ServerConfig {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	return &mcptool.ServerConfig{Transport: ct, Trusted: trusted}
}

func compact(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func ptr[T any](v T) *T { return &v }

func openSet(t *testing.T, cfg *mcptool.Config) *mcptool.Set {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := mcptool.Open(ctx, cfg, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	for _, st := range s.Servers() {
		if st.State != mcptool.StateReady {
			t.Fatalf("server %s: %s: %v (stderr %q)", st.Name, st.State, st.Err, st.Stderr)
		}
	}
	return s
}

// scriptModel is testkit.Script over turns that also keeps every request it
// got.
type scriptModel struct {
	turns [][]model.FuncCall
	mu    sync.Mutex
	reqs  []model.Request
}

func (m *scriptModel) generate(ctx context.Context, req *model.Request) (model.Reply, error) {
	m.mu.Lock()
	m.reqs = append(m.reqs, *req)
	m.mu.Unlock()
	return testkit.Script(m.turns...)(ctx, req)
}

// seen returns the tool messages of the last request: what the model saw.
func (m *scriptModel) seen() map[string]model.Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]model.Message{}
	if len(m.reqs) == 0 {
		return out
	}
	for _, msg := range m.reqs[len(m.reqs)-1].Messages {
		if msg.Role == model.RoleTool {
			out[msg.ToolCallID] = msg
		}
	}
	return out
}

// hookLog is a declarative executor that records "<EVENT> <tool> <callId>"
// for each hook it runs (and success and error for the events after a call).
type hookLog struct {
	mu     sync.Mutex
	events []string
}

func (l *hookLog) Execute(ctx context.Context, a declarative.Action, hctx map[string]any) {
	e := fmt.Sprintf("%s %s %s %s", a.Message, hctx["event"], hctx["tool"], hctx["callId"])
	if s, ok := hctx["success"]; ok {
		e += fmt.Sprintf(" success=%v error=%q", s, hctx["error"])
	}
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

func (l *hookLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

func testPolicy(t *testing.T, src string) *policy.Policy {
	t.Helper()
	p, _, err := policy.ParsePolicy("policy.yaml", strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newAgent(t *testing.T, opts agent.Options) *agent.Agent {
	t.Helper()
	a, err := agent.New(&opts)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func records(res *agent.Result) map[string]gate.Record {
	out := map[string]gate.Record{}
	for _, r := range res.ToolCalls {
		out[r.ID] = r
	}
	return out
}

// askDestructive asks a person before any tool that is not read-only and may
// destroy data (MCP: destructiveHint matters only when readOnlyHint is false).
const askDestructive = `rules:
  - id: ask-destructive
    hints: {readOnly: false, destructive: true}
    decision: ask
    reason: destructive tools need a person
`

// C15: pre and post hooks with matcher mcp__fs__* fire once each for the one
// MCP call that runs; a call denied by a BeforeTool hook and one denied by a
// policy rule send no tools/call to the server and fire no hook.
func TestC15HooksFireForMCPToolsAndDeniedCallsSendNothing(t *testing.T) {
	fs := newServer()
	fs.tool("read_file", &mcp.ToolAnnotations{ReadOnlyHint: true}, text("the notes"))
	fs.tool("write_file", &mcp.ToolAnnotations{DestructiveHint: ptr(true)}, text("written"))
	set := openSet(t, &mcptool.Config{Servers: map[string]*mcptool.ServerConfig{"fs": fs.config(t, true)}})

	m := &scriptModel{turns: [][]model.FuncCall{{
		testkit.Call("c1", "mcp__fs__read_file", map[string]string{"path": "notes.txt"}),
		testkit.Call("c2", "mcp__fs__read_file", map[string]string{"path": "secret.txt"}),
		testkit.Call("c3", "mcp__fs__write_file", map[string]string{"path": "/etc/passwd", "content": "x"}),
	}}}
	h := (&hooks.Hooks{}).BeforeTool("no-secrets", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		if strings.Contains(string(ev.Args), "secret") {
			return hooks.Deny("secrets stay secret"), nil
		}
		return nil, nil
	})
	a := newAgent(t, agent.Options{
		Model: model.Func(m.generate), Tools: agent.ToolList(set.Tools()), Hooks: h,
		Authorizers: []approval.Authorizer{testPolicy(t, `rules:
  - id: no-etc
    tool: mcp__fs__*
    args:
      path: {pathPrefix: /etc}
    decision: deny
    reason: /etc is off limits
`)},
	})
	log := &hookLog{}
	declarative.Of([]declarative.Config{
		{Event: declarative.PreToolUse, Matcher: "mcp__fs__*", Action: declarative.Log("pre")},
		{Event: declarative.PostToolUse, Matcher: "mcp__fs__*", Action: declarative.Log("post")},
		{Event: declarative.PreToolUse, Matcher: "mcp__github__*", Action: declarative.Log("other server")},
		{Event: declarative.PreToolUse, Matcher: "mcp__fs", Action: declarative.Log("no implicit prefix")},
	}, &declarative.Options{Executor: log}).ApplyTo(context.Background(), a)

	res, err := a.Run(context.Background(), "read the notes")
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("run: %v %+v", err, res)
	}
	if d := cmp.Diff([]string{`read_file {"path":"notes.txt"}`}, fs.received()); d != "" {
		t.Errorf("tools/call requests the server received (-want +got):\n%s", d)
	}
	want := []string{
		`pre PRE_TOOL_USE mcp__fs__read_file c1`,
		`post POST_TOOL_USE mcp__fs__read_file c1 success=true error=""`,
	}
	if d := cmp.Diff(want, log.list()); d != "" {
		t.Errorf("declarative hooks (-want +got):\n%s", d)
	}
	recs := records(res)
	for id, want := range map[string]gate.Decision{
		"c1": {Outcome: gate.OutcomeAllowed},
		"c2": {Outcome: gate.OutcomeDenied, By: tool.Principal{Kind: "hook", Name: "no-secrets"}},
		"c3": {Outcome: gate.OutcomeDenied, By: tool.Principal{Kind: "rule", Name: "no-etc"}},
	} {
		got := recs[id].Decision
		if got.Outcome != want.Outcome || (!want.By.IsZero() && got.By != want.By) {
			t.Errorf("%s: decision %+v, want %s by %s", id, got, want.Outcome, want.By)
		}
		if ran := id == "c1"; recs[id].Ran != ran {
			t.Errorf("%s: ran = %v, want %v", id, recs[id].Ran, ran)
		}
	}
	seen := m.seen()
	if msg := seen["c1"]; msg.IsError || msg.Content != "the notes" {
		t.Errorf("c1: the model saw %+v", msg)
	}
	if msg := seen["c2"]; !msg.IsError || !strings.Contains(msg.Content, "secrets stay secret") {
		t.Errorf("c2: the model saw %+v", msg)
	}
	if msg := seen["c3"]; !msg.IsError || !strings.Contains(msg.Content, "/etc is off limits") {
		t.Errorf("c3: the model saw %+v", msg)
	}
}

// C36: an MCP tool's isError result is an error result: the model sees the
// error text, the run continues, and ON_ERROR fires once.
func TestC36MCPIsError(t *testing.T) {
	fs := newServer()
	fs.tool("sync", nil, &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "disk full: /data"}}})
	fs.tool("stat", &mcp.ToolAnnotations{ReadOnlyHint: true}, text("12 GB free"))
	set := openSet(t, &mcptool.Config{Servers: map[string]*mcptool.ServerConfig{"fs": fs.config(t, true)}})
	m := &scriptModel{turns: [][]model.FuncCall{
		{testkit.Call("c1", "mcp__fs__sync", nil)},
		{testkit.Call("c2", "mcp__fs__stat", nil)},
	}}
	a := newAgent(t, agent.Options{Model: model.Func(m.generate), Tools: agent.ToolList(set.Tools())})
	log := &hookLog{}
	declarative.Of([]declarative.Config{
		{Event: declarative.PostToolUse, Matcher: "mcp__fs__*", Action: declarative.Log("post")},
		{Event: declarative.OnError, Action: declarative.Log("error")},
	}, &declarative.Options{Executor: log}).ApplyTo(context.Background(), a)

	res, err := a.Run(context.Background(), "sync")
	if err != nil || res.Status != agent.StatusDone || res.Text != "done" {
		t.Fatalf("run: %v %+v", err, res)
	}
	if msg := m.seen()["c1"]; !msg.IsError || msg.Content != "disk full: /data" {
		t.Errorf("the model saw %+v, want the error text as an error result", msg)
	}
	if msg := m.seen()["c2"]; msg.IsError || msg.Content != "12 GB free" {
		t.Errorf("the call after the error: the model saw %+v", msg)
	}
	want := []string{
		`post POST_TOOL_USE mcp__fs__sync c1 success=false error="disk full: /data"`,
		`error ON_ERROR mcp__fs__sync c1 success=false error="disk full: /data"`,
		`post POST_TOOL_USE mcp__fs__stat c2 success=true error=""`,
	}
	if d := cmp.Diff(want, log.list()); d != "" {
		t.Errorf("declarative hooks (-want +got):\n%s", d)
	}
	if r := records(res)["c1"]; !r.Ran || !r.IsError || r.Decision.Outcome != gate.OutcomeAllowed {
		t.Errorf("c1 record %+v", r)
	}
	if d := cmp.Diff([]string{"sync {}", "stat {}"}, fs.received()); d != "" {
		t.Errorf("tools/call requests (-want +got):\n%s", d)
	}
}

// C37: MCP tools without annotations, or with some left out, get the MCP
// defaults (not read-only, destructive, open world), so a policy that asks for
// destructive tools asks for them and the run halts pending; a trusted
// server's read-only tool runs; an untrusted server's claim of read-only is
// not believed.
func TestC37MissingAnnotationsGetMCPDefaults(t *testing.T) {
	fs := newServer()
	fs.tool("bare", nil, text("bare ran"))
	fs.tool("titled", &mcp.ToolAnnotations{Title: "Only a title"}, text("titled ran"))
	fs.tool("partial", &mcp.ToolAnnotations{IdempotentHint: true, OpenWorldHint: ptr(false)}, text("partial ran"))
	fs.tool("reader", &mcp.ToolAnnotations{ReadOnlyHint: true}, text("reader ran"))
	other := newServer()
	other.tool("reader", &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: ptr(false), OpenWorldHint: ptr(false)}, text("claims"))
	set := openSet(t, &mcptool.Config{Servers: map[string]*mcptool.ServerConfig{
		"fs": fs.config(t, true), "other": other.config(t, false),
	}})
	specs := map[string]tool.Hints{}
	for _, tl := range set.Tools() {
		specs[tl.Spec().Name] = *tl.Spec().Hints
	}
	wantHints := map[string]tool.Hints{
		"mcp__fs__bare":      mcptool.HintsFor(nil, false),
		"mcp__fs__titled":    mcptool.HintsFor(nil, false),
		"mcp__fs__partial":   {Destructive: true, Idempotent: true},
		"mcp__fs__reader":    {ReadOnly: true, Destructive: true, OpenWorld: true},
		"mcp__other__reader": mcptool.HintsFor(nil, false),
	}
	if d := cmp.Diff(wantHints, specs); d != "" {
		t.Errorf("hints (-want +got):\n%s", d)
	}

	m := &scriptModel{turns: [][]model.FuncCall{{
		testkit.Call("c1", "mcp__fs__bare", nil),
		testkit.Call("c2", "mcp__fs__titled", nil),
		testkit.Call("c3", "mcp__fs__partial", nil),
		testkit.Call("c4", "mcp__fs__reader", nil),
		testkit.Call("c5", "mcp__other__reader", nil),
	}}}
	a := newAgent(t, agent.Options{
		Model: model.Func(m.generate), Tools: agent.ToolList(set.Tools()),
		Authorizers: []approval.Authorizer{testPolicy(t, askDestructive)},
	})
	res, err := a.Run(context.Background(), "go")
	if err != nil || res.Status != agent.StatusPending {
		t.Fatalf("run: %v, status %s, want pending", err, res.Status)
	}
	var asked []string
	for _, w := range res.State.Waiting() {
		asked = append(asked, w.Call.ID)
	}
	if d := cmp.Diff([]string{"c1", "c2", "c3", "c5"}, asked); d != "" {
		t.Errorf("calls asked about (-want +got):\n%s", d)
	}
	if len(res.Pending) != 4 {
		t.Errorf("%d pending requests, want 4", len(res.Pending))
	}
	if d := cmp.Diff([]string{"reader {}"}, fs.received()); d != "" {
		t.Errorf("tools/call requests to fs (-want +got):\n%s", d)
	}
	if got := other.received(); len(got) != 0 {
		t.Errorf("the untrusted server received %v", got)
	}
}

// C39: an AfterTool hook's replacement of an MCP tool's result is what the
// model sees, what the stream's tool_result event carries and what the record
// keeps.
func TestC39AfterToolReplacesMCPResult(t *testing.T) {
	fs := newServer()
	fs.tool("read_file", &mcp.ToolAnnotations{ReadOnlyHint: true}, text("password=hunter2"))
	set := openSet(t, &mcptool.Config{Servers: map[string]*mcptool.ServerConfig{"fs": fs.config(t, true)}})
	m := &scriptModel{turns: [][]model.FuncCall{{testkit.Call("c1", "mcp__fs__read_file", map[string]string{"path": "creds"})}}}
	h := (&hooks.Hooks{}).AfterTool("redact", func(ctx context.Context, ev *hooks.AfterToolEvent) (*hooks.ToolOverride, error) {
		r := ev.Result
		r.Output = strings.ReplaceAll(r.Output, "hunter2", "[redacted]")
		return hooks.Replace(r), nil
	})
	a := newAgent(t, agent.Options{Model: model.Func(m.generate), Tools: agent.ToolList(set.Tools()), Hooks: h})

	var streamed []string
	var res *agent.Result
	for ev, err := range a.Stream(context.Background(), "read creds") {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case agent.EventToolResult:
			streamed = append(streamed, ev.Record.Output)
		case agent.EventDone:
			res = ev.Result
		}
	}
	const want = "password=[redacted]"
	if d := cmp.Diff([]string{want}, streamed); d != "" {
		t.Errorf("tool_result events (-want +got):\n%s", d)
	}
	if msg := m.seen()["c1"]; msg.Content != want {
		t.Errorf("the model saw %q, want %q", msg.Content, want)
	}
	if res == nil || res.Status != agent.StatusDone {
		t.Fatalf("result %+v", res)
	}
	r := records(res)["c1"]
	if r.Output != want || !slices.Equal(r.ReplacedBy, []string{"redact"}) {
		t.Errorf("record: output %q, replaced by %v", r.Output, r.ReplacedBy)
	}
	for _, msg := range res.Transcript {
		if strings.Contains(msg.Content, "hunter2") {
			t.Errorf("the transcript keeps the original result: %+v", msg)
		}
	}
	if n := len(fs.received()); n != 1 {
		t.Errorf("the server received %d calls, want 1", n)
	}
}

// Against the real server-filesystem, trusted: a policy that asks for
// destructive tools lets read_file run and halts write_file pending; resumed
// with an approval (from the halted state's JSON), write_file writes the file,
// exactly once.
func TestFilesystemServerUnderPolicy(t *testing.T) {
	node, entry := mcptool.NpmServer(t, "server-filesystem")
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hello from tollgate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"fs": map[string]any{"command": node, "args": []string{entry, "${FS_ROOT}"}, "trusted": true},
	}})
	cfg, err := mcptool.Parse(filepath.Join(root, "mcp.json"), src)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("FS_ROOT", root)
	set := openSet(t, cfg)

	out := filepath.Join(root, "out.txt")
	m := &scriptModel{turns: [][]model.FuncCall{{
		testkit.Call("read", "mcp__fs__read_file", map[string]string{"path": filepath.Join(root, "hello.txt")}),
		testkit.Call("write", "mcp__fs__write_file", map[string]string{"path": out, "content": "written once\n"}),
	}}}
	a := newAgent(t, agent.Options{
		Model: model.Func(m.generate), Tools: agent.ToolList(set.Tools()),
		Authorizers: []approval.Authorizer{testPolicy(t, askDestructive)},
	})
	log := &hookLog{}
	declarative.Of([]declarative.Config{
		{Event: declarative.PostToolUse, Matcher: "mcp__fs__*", Action: declarative.Log("post")},
	}, &declarative.Options{Executor: log}).ApplyTo(context.Background(), a)

	ctx := context.Background()
	res, err := a.Run(ctx, "copy the greeting")
	if err != nil || res.Status != agent.StatusPending {
		t.Fatalf("run: %v, status %s, want pending", err, res.Status)
	}
	if len(res.Pending) != 1 {
		t.Fatalf("pending %+v, want one request (write_file)", res.Pending)
	}
	if r := records(res)["read"]; !r.Ran || r.IsError || !strings.Contains(r.Output, "hello from tollgate") {
		t.Errorf("read_file record %+v", r)
	}
	if w := res.State.Waiting(); len(w) != 1 || w[0].Call.ID != "write" {
		t.Errorf("waiting calls %+v, want only write", w)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("write_file ran before approval (stat: %v)", err)
	}

	raw, err := json.Marshal(res.State)
	if err != nil {
		t.Fatal(err)
	}
	var st agent.State
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	res, err = a.Resume(ctx, &st, tool.Answer{ID: res.Pending[0].ID, OK: true, By: "alice"})
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("resume: %v %+v", err, res)
	}
	got, err := os.ReadFile(out)
	if err != nil || string(got) != "written once\n" {
		t.Errorf("out.txt = %q, %v", got, err)
	}
	if r := records(res)["write"]; !r.Ran || r.IsError || r.Decision.Outcome != gate.OutcomeApproved || r.Decision.By.String() != "person:alice" {
		t.Errorf("write_file record %+v", r)
	}
	want := []string{
		`post POST_TOOL_USE mcp__fs__read_file read success=true error=""`,
		`post POST_TOOL_USE mcp__fs__write_file write success=true error=""`,
	}
	if d := cmp.Diff(want, log.list()); d != "" {
		t.Errorf("tool executions across run and resume (-want +got):\n%s", d)
	}
	if msg := m.seen()["write"]; msg.IsError {
		t.Errorf("the model saw %+v for write_file", msg)
	}
}
