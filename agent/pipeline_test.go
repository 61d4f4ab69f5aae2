package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// recListener records the tool call listener's events.
type recListener struct {
	mu     sync.Mutex
	events []string
}

func (l *recListener) add(s string) { l.mu.Lock(); l.events = append(l.events, s); l.mu.Unlock() }
func (l *recListener) PreToolUse(ctx context.Context, u *hooks.ToolUse) {
	l.add("pre " + u.Tool + " " + string(u.Args))
}
func (l *recListener) PostToolUse(ctx context.Context, u *hooks.ToolUse) {
	l.add(fmt.Sprintf("post %s success=%v", u.Tool, u.Success))
}
func (l *recListener) OnError(ctx context.Context, u *hooks.ToolUse) { l.add("error " + u.Tool) }
func (l *recListener) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...)
}

// C01: a veto means no execution; the model sees the reason under the same call
// id; no postToolUse for the vetoed call; the allowed one runs once.
func TestC01VetoMeansNoExecution(t *testing.T) {
	edit := &testkit.Counter{Name: "edit_file"}
	h := (&hooks.Hooks{}).BeforeTool("protect-etc", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		var a struct{ Path string }
		json.Unmarshal(ev.Args, &a)
		if ev.Name == "edit_file" && a.Path == "/etc/app.cfg" {
			return hooks.Deny("editing /etc/app.cfg is not allowed"), nil
		}
		return nil, nil
	})
	l := &recListener{}
	a := newAgent(t, agent.Options{
		Model: testkit.Script(
			[]model.FuncCall{testkit.Call("c1", "edit_file", map[string]string{"path": "/etc/app.cfg"})},
			[]model.FuncCall{testkit.Call("c2", "edit_file", map[string]string{"path": "notes/ok.txt"})},
		),
		Tools: agent.ToolList{edit}, Hooks: h,
	})
	a.SetToolCallListener(l)
	res, err := a.Run(context.Background(), "edit")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agent.StatusDone {
		t.Fatalf("status %s, want done", res.Status)
	}
	if got := edit.Count(); got != 1 {
		t.Errorf("edit_file ran %d times, want 1 (only the allowed call)", got)
	}
	msgs := toolMsgs(res)
	if len(msgs) != 2 || msgs[0].ToolCallID != "c1" || !msgs[0].IsError || !strings.Contains(msgs[0].Content, "editing /etc/app.cfg is not allowed") {
		t.Errorf("first tool message = %+v, want an error result for c1 with the reason", msgs)
	}
	if msgs[1].ToolCallID != "c2" || msgs[1].IsError {
		t.Errorf("second tool message = %+v", msgs[1])
	}
	want := []string{`pre edit_file {"path":"notes/ok.txt"}`, "post edit_file success=true"}
	if d := cmp.Diff(want, l.list()); d != "" {
		t.Errorf("listener events (-want +got):\n%s", d)
	}
	if d := res.ToolCalls[0].Decision; d.Outcome != gate.OutcomeDenied || d.By.String() != "hook:protect-etc" {
		t.Errorf("decision %+v, want denied by hook:protect-etc", d)
	}
}

// C03: per-call state in a parallel batch: each note lands on its own call's
// result; stable with 50 parallel calls over 100 runs.
func TestC03ParallelAfterToolNotes(t *testing.T) {
	read := &testkit.Counter{Name: "read_file", Output: func(args json.RawMessage) tool.Result {
		var a struct{ Path string }
		json.Unmarshal(args, &a)
		return tool.Text("contents of " + a.Path)
	}}
	h := (&hooks.Hooks{}).AfterTool("note", func(ctx context.Context, ev *hooks.AfterToolEvent) (*hooks.ToolOverride, error) {
		var a struct{ Path string }
		json.Unmarshal(ev.Args, &a)
		r := ev.Result
		r.Output += "\nseen:" + a.Path
		return hooks.Replace(r), nil
	})
	for run := 0; run < 100; run++ {
		var calls []model.FuncCall
		for i := 0; i < 50; i++ {
			calls = append(calls, testkit.Call(fmt.Sprintf("c%d", i), "read_file", map[string]string{"path": fmt.Sprintf("f%d.txt", i)}))
		}
		a := newAgent(t, agent.Options{Model: testkit.Script(calls), Tools: agent.ToolList{read}, Hooks: h, MaxParallel: 16})
		res, err := a.Run(context.Background(), "read")
		if err != nil {
			t.Fatal(err)
		}
		msgs := toolMsgs(res)
		if len(msgs) != 50 {
			t.Fatalf("run %d: %d tool messages, want 50", run, len(msgs))
		}
		for i, m := range msgs {
			want := fmt.Sprintf("contents of f%d.txt\nseen:f%d.txt", i, i)
			if m.ToolCallID != fmt.Sprintf("c%d", i) || m.Content != want {
				t.Fatalf("run %d: message %d = %q (%s), want %q for c%d", run, i, m.Content, m.ToolCallID, want, i)
			}
		}
	}
}

// C06: a rewrite survives a later hook with no opinion; H2 saw the rewrite; H1 ran once.
func TestC06RewriteSurvivesLaterHook(t *testing.T) {
	sh := &testkit.Counter{Name: "run_shell"}
	var h1n int
	var h2saw []string
	var mu sync.Mutex
	h := (&hooks.Hooks{}).
		BeforeTool("h1", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
			mu.Lock()
			h1n++
			mu.Unlock()
			if string(ev.Args) == `{"cmd":"ls"}` {
				return hooks.Rewrite(json.RawMessage(`{"cmd":"ls --color=never"}`)), nil
			}
			return nil, nil
		}).
		BeforeTool("h2", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
			mu.Lock()
			h2saw = append(h2saw, string(ev.Args))
			mu.Unlock()
			return nil, nil
		})
	a := newAgent(t, agent.Options{Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "run_shell", json.RawMessage(`{"cmd":"ls"}`))}), Tools: agent.ToolList{sh}, Hooks: h})
	if _, err := a.Run(context.Background(), "ls"); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{`{"cmd":"ls --color=never"}`}, sh.Args()); d != "" {
		t.Errorf("tool ran with (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{`{"cmd":"ls --color=never"}`}, h2saw); d != "" {
		t.Errorf("h2 saw (-want +got):\n%s", d)
	}
	if h1n != 1 {
		t.Errorf("h1 ran %d times, want 1", h1n)
	}
}

// C07: a rewrite that drops a required field is validated again.
func TestC07RewriteValidatedAgain(t *testing.T) {
	sh := &testkit.Counter{Name: "run_shell", Schema: `{"type":"object","properties":{"cmd":{"type":"string"},"sandbox":{"type":"boolean"}},"required":["cmd"]}`}
	h := (&hooks.Hooks{}).BeforeTool("unsandbox", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		return hooks.Rewrite(json.RawMessage(`{"sandbox":false}`)), nil
	})
	a := newAgent(t, agent.Options{Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "run_shell", map[string]string{"cmd": "ls"})}), Tools: agent.ToolList{sh}, Hooks: h})
	res, err := a.Run(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	if sh.Count() != 0 {
		t.Errorf("tool ran %d times, want 0", sh.Count())
	}
	rec := res.ToolCalls[0]
	if !rec.IsError || rec.Decision.Outcome != gate.OutcomeInvalid || !strings.Contains(rec.Output, "cmd") {
		t.Errorf("record = %+v, want an invalid-arguments error naming cmd", rec)
	}
}

// C08: the transcript keeps the model's call; the tool, AfterTool, events and
// the record see the executed args; in-place mutation of event args has no effect.
func TestC08AskedVersusExecuted(t *testing.T) {
	echo := &testkit.Counter{Name: "echo", Output: func(a json.RawMessage) tool.Result { return tool.Text(string(a)) }}
	var afterSaw string
	h := (&hooks.Hooks{}).
		BeforeTool("mutate-in-place", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
			for i := range ev.Args {
				ev.Args[i] = ' ' // has no effect: the event holds a private copy
			}
			return nil, nil
		}).
		BeforeTool("rewrite", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
			return hooks.Rewrite(json.RawMessage(`{"v":"rewritten"}`)), nil
		}).
		AfterTool("look", func(ctx context.Context, ev *hooks.AfterToolEvent) (*hooks.ToolOverride, error) {
			afterSaw = string(ev.Args)
			return nil, nil
		})
	a := newAgent(t, agent.Options{Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "echo", json.RawMessage(`{"v":"original"}`))}), Tools: agent.ToolList{echo}, Hooks: h})
	var events []agent.Event
	var res *agent.Result
	for ev, err := range a.Stream(context.Background(), "x") {
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, ev)
		if ev.Kind == agent.EventDone {
			res = ev.Result
		}
	}
	if got := string(res.Transcript[1].ToolCalls[0].Arguments); got != `{"v":"original"}` {
		t.Errorf("transcript keeps %s, want the model's original call", got)
	}
	if d := cmp.Diff([]string{`{"v":"rewritten"}`}, echo.Args()); d != "" {
		t.Errorf("tool saw (-want +got):\n%s", d)
	}
	if afterSaw != `{"v":"rewritten"}` {
		t.Errorf("AfterTool saw %s", afterSaw)
	}
	rec := res.ToolCalls[0]
	if string(rec.RequestedArgs) != `{"v":"original"}` || string(rec.Args) != `{"v":"rewritten"}` || rec.RequestedDigest == rec.ArgsDigest {
		t.Errorf("record keeps requested %s and executed %s", rec.RequestedArgs, rec.Args)
	}
	var resultEv *gate.Record
	for _, ev := range events {
		if ev.Kind == agent.EventToolResult {
			resultEv = ev.Record
		}
	}
	if resultEv == nil || string(resultEv.Args) != `{"v":"rewritten"}` {
		t.Errorf("tool_result event = %+v, want executed args", resultEv)
	}
}

// C39 (native tools) and C44: an after-hook chain of redact, append and log:
// each receives the previous output, none is skipped, the model sees the final one.
func TestC44AfterToolChain(t *testing.T) {
	lookup := &testkit.Counter{Name: "lookup_config", Output: func(json.RawMessage) tool.Result { return tool.Text("db_password=hunter2") }}
	var logged string
	h := (&hooks.Hooks{}).
		AfterTool("redact", func(ctx context.Context, ev *hooks.AfterToolEvent) (*hooks.ToolOverride, error) {
			r := ev.Result
			r.Output = strings.ReplaceAll(r.Output, "hunter2", "***REDACTED***")
			return hooks.Replace(r), nil
		}).
		AfterTool("append", func(ctx context.Context, ev *hooks.AfterToolEvent) (*hooks.ToolOverride, error) {
			r := ev.Result
			r.Output += " [checked]"
			return hooks.Replace(r), nil
		}).
		AfterTool("log", func(ctx context.Context, ev *hooks.AfterToolEvent) (*hooks.ToolOverride, error) {
			logged = ev.Result.Output
			return nil, nil
		})
	var sent []string
	m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		for _, msg := range req.Messages {
			if msg.Role == model.RoleTool {
				sent = append(sent, msg.Content)
				return model.Reply{Content: "done"}, nil
			}
		}
		return model.Reply{ToolCalls: []model.FuncCall{testkit.Call("c1", "lookup_config", nil)}}, nil
	})
	a := newAgent(t, agent.Options{Model: m, Tools: agent.ToolList{lookup}, Hooks: h})
	res, err := a.Run(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	const want = "db_password=***REDACTED*** [checked]"
	if logged != want {
		t.Errorf("log hook saw %q, want %q", logged, want)
	}
	if d := cmp.Diff([]string{want}, sent); d != "" {
		t.Errorf("model saw (-want +got):\n%s", d)
	}
	if res.ToolCalls[0].Output != want || !cmp.Equal(res.ToolCalls[0].ReplacedBy, []string{"redact", "append"}) {
		t.Errorf("record = %q replaced by %v", res.ToolCalls[0].Output, res.ToolCalls[0].ReplacedBy)
	}
	for _, m := range res.Transcript {
		if strings.Contains(m.Content, "hunter2") {
			t.Errorf("the transcript holds the removed secret: %+v", m)
		}
	}
}

// C04: allow never widens a deny; the record shows both votes and that deny won.
func TestC04AllowNeverWidensDeny(t *testing.T) {
	del := &testkit.Counter{Name: "delete_file", Hints: &tool.Hints{Destructive: true}}
	h := (&hooks.Hooks{}).BeforeTool("allow-all", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		return hooks.Allow("everything is fine"), nil
	})
	policy := approval.AuthorizerFunc(func(ctx context.Context, c approval.Call) (approval.Verdict, error) {
		if c.Hints == nil || c.Hints.Destructive {
			return approval.Verdict{Decision: approval.Deny, Reason: "destructive tools are denied", By: tool.Principal{Kind: "rule", Name: "no-destructive"}}, nil
		}
		return approval.Verdict{Decision: approval.Allow, By: tool.Principal{Kind: "rule", Name: "no-destructive"}}, nil
	})
	a := newAgent(t, agent.Options{Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "delete_file", nil)}), Tools: agent.ToolList{del}, Hooks: h, Authorizers: []approval.Authorizer{policy}})
	res, err := a.Run(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	if del.Count() != 0 {
		t.Fatal("delete_file ran")
	}
	d := res.ToolCalls[0].Decision
	want := gate.Decision{Outcome: gate.OutcomeDenied, By: tool.Principal{Kind: "rule", Name: "no-destructive"}, Reason: "destructive tools are denied", Votes: []tool.Vote{
		{Source: tool.Principal{Kind: "hook", Name: "allow-all"}, Decision: "allow", Reason: "everything is fine"},
		{Source: tool.Principal{Kind: "rule", Name: "no-destructive"}, Decision: "deny", Reason: "destructive tools are denied"},
	}}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("decision (-want +got):\n%s", diff)
	}
}

// C05: two hooks, one allowing, one denying delete_*, in both orders: denied both
// times, counter 0, the record names the hook that denied.
func TestC05SeveralMatchingHooks(t *testing.T) {
	allow := func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		return hooks.Allow("fine by me"), nil
	}
	deny := func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		if strings.HasPrefix(ev.Name, "delete_") {
			return hooks.Deny("no deletes"), nil
		}
		return nil, nil
	}
	for _, order := range []string{"allow-first", "deny-first"} {
		t.Run(order, func(t *testing.T) {
			del := &testkit.Counter{Name: "delete_file"}
			h := &hooks.Hooks{}
			if order == "allow-first" {
				h.BeforeTool("allower", allow).BeforeTool("denier", deny)
			} else {
				h.BeforeTool("denier", deny).BeforeTool("allower", allow)
			}
			a := newAgent(t, agent.Options{Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "delete_file", nil)}), Tools: agent.ToolList{del}, Hooks: h})
			res, err := a.Run(context.Background(), "x")
			if err != nil {
				t.Fatal(err)
			}
			if del.Count() != 0 {
				t.Error("delete_file ran")
			}
			if d := res.ToolCalls[0].Decision; d.Outcome != gate.OutcomeDenied || d.By.String() != "hook:denier" {
				t.Errorf("decision %+v, want denied by hook:denier", d)
			}
		})
	}
}

func TestUnknownToolAndInvalidArgs(t *testing.T) {
	c := &testkit.Counter{Name: "t", Schema: `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`}
	a := newAgent(t, agent.Options{Model: testkit.Script([]model.FuncCall{
		testkit.Call("c1", "nope", nil),
		testkit.Call("c2", "t", map[string]any{"n": "x"}),
		testkit.Call("c3", "t", map[string]any{"n": 3}),
	}), Tools: agent.ToolList{c}})
	res, err := a.Run(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	got := []gate.Outcome{res.ToolCalls[0].Decision.Outcome, res.ToolCalls[1].Decision.Outcome, res.ToolCalls[2].Decision.Outcome}
	if d := cmp.Diff([]gate.Outcome{gate.OutcomeUnknownTool, gate.OutcomeInvalid, gate.OutcomeAllowed}, got); d != "" {
		t.Errorf("outcomes (-want +got):\n%s", d)
	}
	if !strings.Contains(res.ToolCalls[0].Output, `"nope"`) || !strings.Contains(res.ToolCalls[0].Output, "t") {
		t.Errorf("unknown tool output %q should name it and list the tools", res.ToolCalls[0].Output)
	}
	if c.Count() != 1 {
		t.Errorf("tool ran %d times, want 1", c.Count())
	}
}

// A hook error or panic fails the run with a typed error naming the stage and
// hook; the partial transcript is still returned.
func TestHookErrorIsTyped(t *testing.T) {
	for _, mode := range []string{"error", "panic"} {
		t.Run(mode, func(t *testing.T) {
			c := &testkit.Counter{Name: "t"}
			h := (&hooks.Hooks{}).AfterTool("bad", func(ctx context.Context, ev *hooks.AfterToolEvent) (*hooks.ToolOverride, error) {
				if mode == "panic" {
					panic("boom")
				}
				return nil, errors.New("boom")
			})
			a := newAgent(t, agent.Options{Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "t", nil)}), Tools: agent.ToolList{c}, Hooks: h})
			res, err := a.Run(context.Background(), "x")
			var he *hooks.Error
			if !errors.As(err, &he) || he.Stage != hooks.StageAfterTool || he.Hook != "bad" {
				t.Fatalf("err = %v, want *hooks.Error for after_tool hook bad", err)
			}
			if res == nil || res.Status != agent.StatusError || len(res.Transcript) < 2 {
				t.Fatalf("partial result = %+v", res)
			}
		})
	}
}

// A tool that errors or panics gives an error result; the run goes on; the
// listener sees success=false and OnError once each (C41's runtime part).
func TestToolErrorAndPanic(t *testing.T) {
	failing := tool.Must("failing", "", func(ctx context.Context, in struct{}) (string, error) { return "", errors.New("disk full") }, nil)
	panicking := tool.Must("panicking", "", func(ctx context.Context, in struct{}) (string, error) { panic("nil map") }, nil)
	l := &recListener{}
	a := newAgent(t, agent.Options{Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "failing", nil)}, []model.FuncCall{testkit.Call("c2", "panicking", nil)}), Tools: agent.ToolList{failing, panicking}})
	a.SetToolCallListener(l)
	res, err := a.Run(context.Background(), "x")
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("run: %v, %+v", err, res)
	}
	msgs := toolMsgs(res)
	if len(msgs) != 2 || !msgs[0].IsError || msgs[0].Content != "disk full" || !msgs[1].IsError || !strings.Contains(msgs[1].Content, "panicked: nil map") {
		t.Errorf("tool messages = %+v", msgs)
	}
	want := []string{"pre failing {}", "post failing success=false", "error failing", "pre panicking {}", "post panicking success=false", "error panicking"}
	if d := cmp.Diff(want, l.list()); d != "" {
		t.Errorf("listener (-want +got):\n%s", d)
	}
}

func TestMaxTurnsIncomplete(t *testing.T) {
	c := &testkit.Counter{Name: "t"}
	loop := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		return model.Reply{ToolCalls: []model.FuncCall{{Name: "t"}}}, nil
	})
	a := newAgent(t, agent.Options{Model: loop, Tools: agent.ToolList{c}, MaxTurns: 3})
	res, err := a.Run(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agent.StatusIncomplete || res.Turns != 3 || !strings.Contains(res.Reason, "MaxTurns (3)") || c.Count() != 3 {
		t.Errorf("status %s turns %d reason %q count %d", res.Status, res.Turns, res.Reason, c.Count())
	}
}
