package declarative_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/hooks/declarative"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// sink records "[level] message" of every record at INFO or above.
type sink struct {
	mu   sync.Mutex
	msgs []string
}

func (s *sink) Enabled(context.Context, slog.Level) bool { return true }
func (s *sink) Handle(_ context.Context, r slog.Record) error {
	if r.Level < slog.LevelInfo {
		return nil
	}
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "hook" {
			msg += " hook=" + a.Value.String()
		}
		return true
	})
	s.mu.Lock()
	s.msgs = append(s.msgs, fmt.Sprintf("%s %s", r.Level, msg))
	s.mu.Unlock()
	return nil
}
func (s *sink) WithAttrs([]slog.Attr) slog.Handler { return s }
func (s *sink) WithGroup(string) slog.Handler      { return s }
func (s *sink) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.msgs)
}

func newAgent(t *testing.T, opts agent.Options) *agent.Agent {
	t.Helper()
	a, err := agent.New(&opts)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// C01, declarative part: a postToolUse log hook on * does not fire for a call
// that a BeforeTool hook vetoed; it fires once for the allowed one.
func TestC01VetoedCallFiresNoHook(t *testing.T) {
	n := &testkit.Counter{Name: "edit_file"}
	h := (&hooks.Hooks{}).BeforeTool("protect-etc", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		var a struct{ Path string }
		_ = json.Unmarshal(ev.Args, &a)
		if ev.Name == "edit_file" && a.Path == "/etc/app.cfg" {
			return hooks.Deny("editing /etc/app.cfg is not allowed"), nil
		}
		return nil, nil
	})
	a := newAgent(t, agent.Options{
		Model: testkit.Script(
			[]model.FuncCall{testkit.Call("c1", "edit_file", map[string]string{"path": "/etc/app.cfg"})},
			[]model.FuncCall{testkit.Call("c2", "edit_file", map[string]string{"path": "notes/ok.txt"})},
		),
		Tools: agent.ToolList{n}, Hooks: h,
	})
	s := &sink{}
	reg := declarative.FromYAML(strings.NewReader(`hooks:
  - event: postToolUse
    matcher: "*"
    action: {type: log, message: "post ${tool} ${callId} ${args}"}
`), &declarative.Options{Logger: slog.New(s)})
	reg.ApplyTo(context.Background(), a)
	res, err := a.Run(context.Background(), "edit")
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("run: %v %+v", err, res)
	}
	if n.Count() != 1 {
		t.Errorf("edit_file ran %d times, want 1", n.Count())
	}
	want := []string{`INFO [HOOK] post edit_file c2 {"path":"notes/ok.txt"}`}
	if d := cmp.Diff(want, s.list()); d != "" {
		t.Errorf("logs (-want +got):\n%s", d)
	}
	var msgs []model.Message
	for _, m := range res.Transcript {
		if m.Role == model.RoleTool {
			msgs = append(msgs, m)
		}
	}
	if len(msgs) != 2 || msgs[0].ToolCallID != "c1" || !msgs[0].IsError || !strings.Contains(msgs[0].Content, "not allowed") {
		t.Errorf("tool messages = %+v", msgs)
	}
}

// C23: the same registry applied twice, or the same file loaded twice, fires
// every hook once per event; ON_START fires once per ApplyTo.
func TestC23EachDefinitionFiresOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hooks.yaml")
	doc := `hooks:
  - {event: onStart, action: {type: log, message: "start ${agent}"}}
  - {event: preToolUse, action: {type: log, message: "pre ${tool}"}}
  - {event: postToolUse, matcher: "T*", action: {type: log, message: "post ${tool}"}}
`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, twice := range []string{"same registry", "same file"} {
		t.Run(twice, func(t *testing.T) {
			n := &testkit.Counter{Name: "tool"}
			a := newAgent(t, agent.Options{ID: "a1", Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "tool", nil)}), Tools: agent.ToolList{n}})
			s := &sink{}
			opts := &declarative.Options{Logger: slog.New(s)}
			r1, err := declarative.Load(path, opts)
			if err != nil {
				t.Fatal(err)
			}
			r2 := r1
			if twice == "same file" {
				if r2, err = declarative.Load(path, opts); err != nil {
					t.Fatal(err)
				}
			}
			r1.ApplyTo(context.Background(), a)
			r2.ApplyTo(context.Background(), a)
			if _, err := a.Run(context.Background(), "go"); err != nil {
				t.Fatal(err)
			}
			want := []string{"INFO [HOOK] start a1", "INFO [HOOK] start a1", "INFO [HOOK] pre tool", "INFO [HOOK] post tool"}
			if d := cmp.Diff(want, s.list()); d != "" {
				t.Errorf("logs (-want +got):\n%s", d)
			}
		})
	}
}

// C24: ON_STOP fires only when the caller fires it, once per call; a failing
// ON_STOP command is logged and changes nothing else.
func TestC24OnStop(t *testing.T) {
	n := &testkit.Counter{Name: "tool"}
	a := newAgent(t, agent.Options{ID: "a1", Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "tool", nil)}), Tools: agent.ToolList{n}})
	s := &sink{}
	reg := declarative.FromYAML(strings.NewReader(`hooks:
  - {event: onStop, action: {type: log, message: "stop ${agent} ${status}"}}
  - {event: ON_STOP, action: {type: command, command: "echo stop failed; exit 7"}}
  - {event: onStop, action: {type: log, message: "still runs"}}
`), &declarative.Options{Logger: slog.New(s), File: "stop.yaml"})
	reg.ApplyTo(context.Background(), a)
	res, err := a.Run(context.Background(), "go")
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("run: %v", err)
	}
	if got := s.list(); len(got) != 0 {
		t.Fatalf("hooks fired before ON_STOP was fired: %v", got)
	}
	reg.FireEvent(context.Background(), declarative.OnStop, map[string]any{"agent": a.ID(), "status": string(res.Status)})
	want := []string{
		"INFO [HOOK] stop a1 done",
		"WARN hook command exited with status 7 hook=stop.yaml:3:5",
		"INFO [HOOK] still runs",
	}
	if d := cmp.Diff(want, s.list()); d != "" {
		t.Errorf("logs (-want +got):\n%s", d)
	}
	if res.Status != agent.StatusDone || n.Count() != 1 {
		t.Errorf("status %s, tool ran %d times", res.Status, n.Count())
	}
}

// C41: a tool that returns an error and one that panics: POST_TOOL_USE with
// success=false and ON_ERROR once each; the model gets an error result for
// every call.
func TestC41FailurePaths(t *testing.T) {
	failing := tool.Must("failing", "", func(ctx context.Context, in struct{}) (string, error) { return "", errors.New("disk full") }, nil)
	panicking := tool.Must("panicking", "", func(ctx context.Context, in struct{}) (string, error) { panic("nil map") }, nil)
	var events []string
	var mu sync.Mutex
	rec := declarative.ExecutorFunc(func(ctx context.Context, act declarative.Action, hctx map[string]any) {
		mu.Lock()
		events = append(events, fmt.Sprintf("%s %s success=%v", hctx["event"], hctx["tool"], hctx["success"]))
		mu.Unlock()
	})
	reg := declarative.Of([]declarative.Config{
		{Event: declarative.PostToolUse, Matcher: declarative.MatchAll, Action: declarative.Log("post")},
		{Event: declarative.OnError, Action: declarative.Log("error")},
	}, &declarative.Options{Executor: rec})
	a := newAgent(t, agent.Options{Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "failing", nil)}, []model.FuncCall{testkit.Call("c2", "panicking", nil)}), Tools: agent.ToolList{failing, panicking}})
	reg.ApplyTo(context.Background(), a)
	res, err := a.Run(context.Background(), "x")
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("run: %v", err)
	}
	want := []string{
		"POST_TOOL_USE failing success=false", "ON_ERROR failing success=false",
		"POST_TOOL_USE panicking success=false", "ON_ERROR panicking success=false",
	}
	if d := cmp.Diff(want, events); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	errs := 0
	for _, m := range res.Transcript {
		if m.Role == model.RoleTool && m.IsError {
			errs++
		}
	}
	if errs != 2 {
		t.Errorf("%d error results, want 2", errs)
	}
}

// C11: a command hook never returns a decision: whatever it prints, and however
// it exits, the call runs as it would have without it.
func TestC11CommandOutputIsNeverADecision(t *testing.T) {
	for _, out := range []string{`{"decision":"deny","reason":"no"}`, `{"decision":"allow"}`, "garbage", "noise {\"allow\":true}", ""} {
		n := &testkit.Counter{Name: "tool"}
		a := newAgent(t, agent.Options{Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "tool", nil)}), Tools: agent.ToolList{n}})
		s := &sink{}
		reg := declarative.Of([]declarative.Config{
			{Event: declarative.PreToolUse, Action: declarative.Argv("sh", "-c", `printf '%s' "$1"; exit 2`, "sh", out)},
		}, &declarative.Options{Logger: slog.New(s)})
		reg.ApplyTo(context.Background(), a)
		res, err := a.Run(context.Background(), "x")
		if err != nil || res.Status != agent.StatusDone || n.Count() != 1 {
			t.Errorf("output %q: err %v, status %v, tool ran %d times", out, err, res.Status, n.Count())
		}
		if got := s.list(); len(got) != 1 || !strings.HasPrefix(got[0], "WARN hook command exited with status 2 hook=command argv[") {
			t.Errorf("output %q: logs %v, want one WARN naming the hook", out, got)
		}
	}
}

// A later SetToolCallListener removes the hooks.
func TestSetToolCallListenerRemovesHooks(t *testing.T) {
	n := &testkit.Counter{Name: "tool"}
	a := newAgent(t, agent.Options{Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "tool", nil)}), Tools: agent.ToolList{n}})
	s := &sink{}
	reg := declarative.Of([]declarative.Config{{Event: declarative.PreToolUse, Action: declarative.Log("pre")}}, &declarative.Options{Logger: slog.New(s)})
	reg.ApplyTo(context.Background(), a)
	a.SetToolCallListener(nil)
	if _, err := a.Run(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	if got := s.list(); len(got) != 0 {
		t.Errorf("hooks fired after the listener was replaced: %v", got)
	}
}

// A call that the authorization check denies fires no hooks; an allowed one
// waits for its PRE_TOOL_USE command to finish before it runs.
func TestDeniedCallFiresNoHooksAndToolWaitsForPre(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "pre-done")
	var sawMarker []bool
	var mu sync.Mutex
	run := tool.Must("run", "", func(ctx context.Context, in struct{}) (string, error) {
		_, err := os.Stat(marker)
		mu.Lock()
		sawMarker = append(sawMarker, err == nil)
		mu.Unlock()
		return "ran", nil
	}, nil)
	n := &testkit.Counter{Name: "delete"}
	deny := approval.AuthorizerFunc(func(ctx context.Context, c approval.Call) (approval.Verdict, error) {
		if c.Tool == "delete" {
			return approval.Verdict{Decision: approval.Deny, Reason: "no deleting", By: tool.Principal{Kind: "rule", Name: "policy"}}, nil
		}
		return approval.Verdict{Decision: approval.Allow, By: tool.Principal{Kind: "rule", Name: "policy"}}, nil
	})
	s := &sink{}
	reg := declarative.Of([]declarative.Config{
		{Event: declarative.PreToolUse, Action: declarative.Log("pre ${tool}")},
		{Event: declarative.PreToolUse, Matcher: "run", Action: declarative.Command("sleep 0.2; touch " + marker)},
		{Event: declarative.PostToolUse, Action: declarative.Log("post ${tool}")},
		{Event: declarative.OnError, Action: declarative.Log("error ${tool}")},
	}, &declarative.Options{Logger: slog.New(s)})
	a := newAgent(t, agent.Options{
		Model:       testkit.Script([]model.FuncCall{testkit.Call("c1", "delete", nil)}, []model.FuncCall{testkit.Call("c2", "run", nil)}),
		Tools:       agent.ToolList{n, run},
		Authorizers: []approval.Authorizer{deny},
	})
	reg.ApplyTo(context.Background(), a)
	if _, err := a.Run(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	if n.Count() != 0 {
		t.Errorf("the denied tool ran")
	}
	if d := cmp.Diff([]string{"INFO [HOOK] pre run", "INFO [HOOK] post run"}, s.list()); d != "" {
		t.Errorf("logs (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]bool{true}, sawMarker); d != "" {
		t.Errorf("the tool did not wait for its PRE_TOOL_USE command (-want +got):\n%s", d)
	}
}

// A tool that asks for an answer fires PRE_TOOL_USE when it starts and asks,
// and no POST_TOOL_USE or ON_ERROR then: the call has not run to a result.
// Run again with the answer (by WaitFor, or on Resume after a halt), it
// fires one POST_TOOL_USE with that run's success and output, and no second
// PRE_TOOL_USE: a hook that logs sees the call start once.
func TestToolThatAsksFiresPostOnceItRan(t *testing.T) {
	ask := tool.Must("ask", "", func(ctx context.Context, _ struct{}) (tool.Result, error) {
		if tool.InvocationFrom(ctx).Answer == nil {
			return tool.Pending(tool.Request{Kind: tool.KindInput, Prompt: "code?"}), nil
		}
		return tool.Text("code accepted"), nil
	}, nil)
	setup := func(t *testing.T, waitFor tool.WaitFunc) (*agent.Agent, func() []string) {
		var events []string
		var mu sync.Mutex
		rec := declarative.ExecutorFunc(func(ctx context.Context, act declarative.Action, hctx map[string]any) {
			mu.Lock()
			defer mu.Unlock()
			e := fmt.Sprintf("%s %s %s", hctx["event"], hctx["tool"], hctx["callId"])
			if hctx["event"] != "PRE_TOOL_USE" {
				e += fmt.Sprintf(" success=%v outputSize=%v", hctx["success"], hctx["outputSize"])
			}
			events = append(events, e)
		})
		reg := declarative.Of([]declarative.Config{
			{Event: declarative.PreToolUse, Matcher: declarative.MatchAll, Action: declarative.Log("pre")},
			{Event: declarative.PostToolUse, Matcher: declarative.MatchAll, Action: declarative.Log("post")},
			{Event: declarative.OnError, Action: declarative.Log("error")},
		}, &declarative.Options{Executor: rec})
		a := newAgent(t, agent.Options{Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "ask", nil)}), Tools: agent.ToolList{ask}, WaitFor: waitFor})
		reg.ApplyTo(context.Background(), a)
		return a, func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(events) }
	}
	ran := fmt.Sprintf("POST_TOOL_USE ask c1 success=true outputSize=%d", len("code accepted"))

	t.Run("halt and resume", func(t *testing.T) {
		a, events := setup(t, nil)
		res, err := a.Run(context.Background(), "x")
		if err != nil || res.Status != agent.StatusPending {
			t.Fatalf("run: %v %+v", err, res)
		}
		if d := cmp.Diff([]string{"PRE_TOOL_USE ask c1"}, events()); d != "" {
			t.Errorf("events while the call waits (-want +got):\n%s", d)
		}
		res, err = a.Resume(context.Background(), res.State, tool.Answer{ID: res.Pending[0].ID, OK: true, Data: json.RawMessage(`{"code":"1"}`)})
		if err != nil || res.Status != agent.StatusDone {
			t.Fatalf("resume: %v %+v", err, res)
		}
		if d := cmp.Diff([]string{"PRE_TOOL_USE ask c1", ran}, events()); d != "" {
			t.Errorf("events (-want +got):\n%s", d)
		}
	})
	t.Run("wait for the answer", func(t *testing.T) {
		a, events := setup(t, func(ctx context.Context, r tool.Request) (tool.Answer, error) {
			return tool.Answer{ID: r.ID, OK: true, Data: json.RawMessage(`{"code":"1"}`)}, nil
		})
		if res, err := a.Run(context.Background(), "x"); err != nil || res.Status != agent.StatusDone {
			t.Fatalf("run: %v %+v", err, res)
		}
		if d := cmp.Diff([]string{"PRE_TOOL_USE ask c1", ran}, events()); d != "" {
			t.Errorf("events (-want +got):\n%s", d)
		}
	})
	t.Run("declined", func(t *testing.T) {
		a, events := setup(t, func(ctx context.Context, r tool.Request) (tool.Answer, error) {
			return tool.Answer{ID: r.ID, OK: false, Reason: "no"}, nil
		})
		if res, err := a.Run(context.Background(), "x"); err != nil || res.Status != agent.StatusDone {
			t.Fatalf("run: %v %+v", err, res)
		}
		if d := cmp.Diff([]string{"PRE_TOOL_USE ask c1"}, events()); d != "" {
			t.Errorf("events (-want +got):\n%s", d)
		}
	})
}
