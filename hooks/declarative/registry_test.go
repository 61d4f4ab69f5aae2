package declarative

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tollgate-dev/tollgate/hooks"
)

// fakeAgent is a Target.
type fakeAgent struct {
	id       string
	listener hooks.ToolCallListener
	sets     int
}

func (a *fakeAgent) SetToolCallListener(l hooks.ToolCallListener) { a.listener = l; a.sets++ }
func (a *fakeAgent) ID() string                                   { return a.id }

func use(tool string) *hooks.ToolUse {
	return &hooks.ToolUse{Tool: tool, Args: json.RawMessage(`{"path":"a.txt"}`), CallID: "c1", Turn: 2, AgentID: "ag", RunID: "run1"}
}

func TestListenerContextAndMatchers(t *testing.T) {
	rec := &recorder{}
	r := Of([]Config{
		{Event: PreToolUse, Matcher: "file_*", Action: Log("pre ${tool}")},
		{Event: PreToolUse, Matcher: "bash", Action: Log("pre bash")},
		{Event: PostToolUse, Action: Log("post ${tool} ${success}")},
		{Event: OnError, Matcher: "nothing_matches_this", Action: Log("error ${error}")},
	}, &Options{Executor: rec})
	ctx := context.Background()
	u := use("FILE_read")
	r.Listener().PreToolUse(ctx, u)
	post := *u
	post.Latency, post.Success, post.Error, post.OutputSize = 1500*time.Microsecond, false, "disk full", 9
	r.Listener().PostToolUse(ctx, &post)
	r.Listener().OnError(ctx, &post)
	want := []string{
		`log pre FILE_read agent=ag args={"path":"a.txt"} callId=c1 event=PRE_TOOL_USE runId=run1 tool=FILE_read turn=2`,
		`log post FILE_read false agent=ag args={"path":"a.txt"} callId=c1 error=disk full event=POST_TOOL_USE latencyMs=1 outputSize=9 runId=run1 success=false tool=FILE_read turn=2`,
		// The ON_ERROR matcher is ignored.
		`log error disk full agent=ag args={"path":"a.txt"} callId=c1 error=disk full event=ON_ERROR latencyMs=1 outputSize=9 runId=run1 success=false tool=FILE_read turn=2`,
	}
	if d := cmp.Diff(want, rec.list()); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}
	// Typed values, as documented.
	c := rec.ctxs[1]
	if _, ok := c["args"].(json.RawMessage); !ok {
		t.Errorf("args is %T, want json.RawMessage", c["args"])
	}
	if _, ok := c["latencyMs"].(int64); !ok {
		t.Errorf("latencyMs is %T, want int64", c["latencyMs"])
	}
	if _, ok := c["turn"].(int); !ok {
		t.Errorf("turn is %T, want int", c["turn"])
	}
	if _, ok := c["outputSize"].(int); !ok {
		t.Errorf("outputSize is %T, want int", c["outputSize"])
	}
}

func TestApplyTo(t *testing.T) {
	rec := &recorder{}
	r := Of([]Config{
		{Event: OnStart, Matcher: "ignored", Action: Log("start ${agent}")},
		{Event: PreToolUse, Action: Log("pre")},
	}, &Options{Executor: rec})
	a1, a2 := &fakeAgent{id: "one"}, &fakeAgent{id: "two"}
	old := &fakeListener{}
	a1.listener = old
	r.ApplyTo(context.Background(), a1)
	r.ApplyTo(context.Background(), a1)
	r.ApplyTo(context.Background(), a2)
	if a1.listener != r.Listener() || a2.listener != r.Listener() {
		t.Errorf("listeners not replaced by the registry")
	}
	want := []string{"log start one agent=one event=ON_START", "log start one agent=one event=ON_START", "log start two agent=two event=ON_START"}
	if d := cmp.Diff(want, rec.list()); d != "" {
		t.Errorf("ON_START per ApplyTo (-want +got):\n%s", d)
	}
	// C23: applied twice, each hook still fires once per event.
	a1.listener.PreToolUse(context.Background(), use("x"))
	if n := len(rec.list()); n != 4 {
		t.Errorf("%d calls after one PreToolUse, want 4", n)
	}

	// A registry with no hooks does nothing.
	empty := FromYAML(strings.NewReader("hooks: []"), &Options{Executor: rec})
	a3 := &fakeAgent{id: "three", listener: old}
	empty.ApplyTo(context.Background(), a3)
	if a3.sets != 0 || a3.listener != hooks.ToolCallListener(old) || len(rec.list()) != 4 {
		t.Errorf("empty registry: sets=%d listener=%v calls=%v", a3.sets, a3.listener, rec.list())
	}
	var nilReg *Registry
	nilReg.ApplyTo(context.Background(), a3)
	nilReg.Listener().PreToolUse(context.Background(), use("x"))
	if a3.sets != 0 {
		t.Errorf("nil registry set a listener")
	}
}

type fakeListener struct{}

func (*fakeListener) PreToolUse(context.Context, *hooks.ToolUse)  {}
func (*fakeListener) PostToolUse(context.Context, *hooks.ToolUse) {}
func (*fakeListener) OnError(context.Context, *hooks.ToolUse)     {}

func TestFireEvent(t *testing.T) {
	rec := &recorder{}
	r := Of([]Config{
		{Event: OnStop, Action: Log("stop ${status}")},
		{Event: OnStop, Matcher: "zzz", Action: Log("stop again")},
		{Event: PreToolUse, Matcher: "file_*", Action: Log("pre ${tool}")},
		{Event: PreToolUse, Matcher: "bash", Action: Log("pre bash")},
		{Event: OnStart, Action: Log("start")},
	}, &Options{Executor: rec})
	ctx := context.Background()
	mine := map[string]any{"agent": "a1", "status": "done"}
	r.FireEvent(ctx, OnStop, mine)
	r.FireEvent(ctx, OnStop, map[string]any{"event": "custom"})
	r.FireToolEvent(ctx, PreToolUse, "file_write", map[string]any{"tool": "overridden", "x": 1})
	r.FireEvent(ctx, PreToolUse, nil) // every hook, matchers ignored
	r.FireEvent(ctx, Event(99), nil)
	want := []string{
		"log stop done agent=a1 event=ON_STOP status=done",
		"log stop again agent=a1 event=ON_STOP status=done",
		"log stop ${status} event=custom",
		"log stop again event=custom",
		"log pre file_write event=PRE_TOOL_USE tool=file_write x=1",
		"log pre ${tool} event=PRE_TOOL_USE",
		"log pre bash event=PRE_TOOL_USE",
	}
	if d := cmp.Diff(want, rec.list()); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}
	if len(mine) != 2 {
		t.Errorf("FireEvent changed the caller's map: %v", mine)
	}
}

// A panicking executor is contained: the other hooks run and it is logged.
func TestExecutorPanicIsContained(t *testing.T) {
	lg, h := newRecLogger()
	var ran []string
	exec := ExecutorFunc(func(ctx context.Context, a Action, hctx map[string]any) {
		if a.Message == "boom" {
			panic("executor bug")
		}
		ran = append(ran, a.Message)
	})
	r := FromYAML(strings.NewReader(`hooks:
  - {event: postToolUse, action: {type: log, message: boom}}
  - {event: postToolUse, action: {type: log, message: after}}
`), &Options{Executor: exec, Logger: lg, File: "p.yaml"})
	r.Listener().PostToolUse(context.Background(), use("t"))
	if d := cmp.Diff([]string{"after"}, ran); d != "" {
		t.Errorf("ran (-want +got):\n%s", d)
	}
	w := h.atLeast(slog.LevelWarn)
	if len(w) != 1 || w[0].Attrs["hook"] != "p.yaml:2:5" || w[0].Attrs["panic"] != "executor bug" {
		t.Errorf("warnings = %+v", w)
	}
}

// A custom executor gets its own copy of the context, and the hook's source
// through ctx (for wrapping the standard executor).
func TestCustomExecutorCopies(t *testing.T) {
	var sources []string
	exec := ExecutorFunc(func(ctx context.Context, a Action, hctx map[string]any) {
		sources = append(sources, hookSource(ctx))
		hctx["tool"] = "changed"
	})
	rec := &recorder{}
	r := Join(&Options{Executor: MultiTest{rec, exec}},
		FromYAML(strings.NewReader("hooks:\n  - {event: preToolUse, action: {type: log, message: a}}\n"), &Options{File: "j.yaml"}),
		Of([]Config{{Event: PreToolUse, Action: Log("${tool}")}}, nil))
	r.Listener().PreToolUse(context.Background(), use("t"))
	if d := cmp.Diff([]string{"j.yaml:2:5", ""}, sources); d != "" {
		t.Errorf("sources (-want +got):\n%s", d)
	}
	if got := rec.list(); len(got) != 2 || !strings.HasPrefix(got[1], "log t ") || !strings.Contains(got[1], " tool=t ") {
		t.Errorf("second hook saw %v, want the unchanged tool", got)
	}
}

// MultiTest runs executors in order with the same map.
type MultiTest []Executor

func (m MultiTest) Execute(ctx context.Context, a Action, hctx map[string]any) {
	for _, e := range m {
		e.Execute(ctx, a, hctx)
	}
}

func TestJoinKeepsOrderAndDiagnostics(t *testing.T) {
	a := FromYAML(strings.NewReader("hooks:\n  - {event: onStop, action: {type: log, message: a}}\n  - {event: bad}\n"), &Options{File: "a.yaml"})
	b := Of([]Config{{Event: OnStop, Action: Log("b")}}, nil)
	j := Join(nil, a, nil, b)
	var got []string
	for _, c := range j.Hooks() {
		got = append(got, c.String())
	}
	if d := cmp.Diff([]string{`a.yaml:2:5 ON_STOP log "a"`, `ON_STOP log "b"`}, got); d != "" {
		t.Errorf("hooks (-want +got):\n%s", d)
	}
	if ds := j.Diagnostics(); len(ds) != 1 || ds[0].Line != 3 {
		t.Errorf("diagnostics = %v", ds)
	}
}

func TestParseEvent(t *testing.T) {
	for _, e := range allEvents() {
		for _, name := range []string{e.String(), e.camelName()} {
			if got, err := parseEvent(name); err != nil || got != e {
				t.Errorf("parseEvent(%q) = %v, %v", name, got, err)
			}
		}
	}
	for _, bad := range []string{"", "PreToolUse", "pre_tool_use", "ON-ERROR", "onerror", "start"} {
		if _, err := parseEvent(bad); err == nil {
			t.Errorf("parseEvent(%q) succeeded", bad)
		}
	}
	for _, s := range []string{"log", "LOG", "Log", "command", "COMMAND", "cOmMaNd"} {
		if _, err := parseActionType(s); err != nil {
			t.Errorf("parseActionType(%q): %v", s, err)
		}
	}
	if _, err := parseActionType("shell"); err == nil {
		t.Error("parseActionType(shell) succeeded")
	}
}
