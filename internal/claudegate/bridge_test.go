package claudegate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/hooks/claudecode"
	"github.com/tollgate-dev/tollgate/internal/claudegate"
	"github.com/tollgate-dev/tollgate/internal/claudenames"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/tool"
)

const policyYAML = `rules:
  - id: no-rm
    tool: bash
    command: {program: rm}
    decision: deny
    reason: no deletions
  - id: no-secrets
    tool: [write, edit, read]
    args:
      path: {pathPrefix: secret}
    decision: deny
    reason: secrets are off limits
  - id: ask-push
    tool: bash
    command: {pattern: "git push *"}
    decision: ask
  - id: ls-ok
    tool: bash
    command: {program: ls}
    decision: allow
  - id: ask-notes
    tool: write
    args:
      path: {regex: 'notes'}
    decision: ask
`

func testPolicy(t testing.TB) *policy.Policy {
	t.Helper()
	p, _, err := policy.ParsePolicy("policy.yaml", strings.NewReader(policyYAML))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type fixture struct {
	b       *claudegate.Bridge
	mu      sync.Mutex
	records []gate.Record
	heard   []string
}

func newFixture(t *testing.T, asker claudegate.Asker) *fixture {
	t.Helper()
	f := &fixture{}
	b, err := claudegate.New(&claudegate.Options{
		Policies: []*policy.Policy{testPolicy(t)},
		StateDir: t.TempDir(),
		Asker:    asker,
		Prompter: "alice",
		Listener: listener{f},
		OnRecord: func(_ context.Context, rec gate.Record) {
			f.mu.Lock()
			f.records = append(f.records, rec)
			f.mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	f.b = b
	return f
}

type listener struct{ f *fixture }

func (l listener) add(s string) { l.f.mu.Lock(); l.f.heard = append(l.f.heard, s); l.f.mu.Unlock() }
func (l listener) PreToolUse(_ context.Context, u *hooks.ToolUse) {
	l.add("pre " + u.Tool)
}
func (l listener) PostToolUse(_ context.Context, u *hooks.ToolUse) {
	l.add("post " + u.Tool)
}
func (l listener) OnError(_ context.Context, u *hooks.ToolUse) { l.add("error " + u.Tool) }

func event(ev claudecode.Event, tool, input, id string) *claudegate.Input {
	return &claudegate.Input{SessionID: "s1", Cwd: "/work/ws", HookEventName: ev, ToolName: tool, ToolInput: json.RawMessage(input), ToolUseID: id}
}

func decision(a claudegate.Answer) string {
	if a.Output == nil || a.Output.Specific == nil {
		return "none"
	}
	return a.Output.Specific.PermissionDecision
}

func TestPreToolUse(t *testing.T) {
	for _, c := range []struct {
		tool, input, want, reason string
	}{
		{"Bash", `{"command":"/bin/rm -rf x"}`, "deny", "denied by rule:no-rm: no deletions"},
		{"Bash", `{"command":"env rm x"}`, "deny", "denied by rule:no-rm: no deletions"},
		{"Bash", `{"command":"echo a; (rm x)"}`, "deny", "rule:no-rm"},
		{"Write", `{"file_path":"/work/ws/secret/k","content":"x"}`, "deny", "denied by rule:no-secrets"},
		{"Edit", `{"file_path":"/work/ws/secret/k","old_string":"a","new_string":"b"}`, "deny", "rule:no-secrets"},
		{"MultiEdit", `{"file_path":"/work/ws/secret/k","edits":[]}`, "deny", "rule:no-secrets"},
		{"Read", `{"file_path":"/work/ws/secret/k"}`, "deny", "rule:no-secrets"},
		{"Bash", `{"command":"git push origin main"}`, "ask", "rule:ask-push"},
		{"Bash", `{"command":"ls -l"}`, "allow", "allowed by rule:ls-ok"},
		{"Bash", `{"command":"echo hi"}`, "none", ""},
		{"Write", `{"file_path":"/work/ws/a.txt","content":"x"}`, "none", ""},
		{"Bash", `{"command":7}`, "deny", "bash"},
		{"Write", `{"content":"x"}`, "deny", "path"},
	} {
		f := newFixture(t, nil)
		a := f.b.Handle(context.Background(), event(claudenames.PreToolUse, c.tool, c.input, "t1"))
		if got := decision(a); got != c.want {
			t.Errorf("%s %s: %s, want %s (%+v)", c.tool, c.input, got, c.want, a.Output)
			continue
		}
		if c.reason != "" && !strings.Contains(a.Output.Specific.PermissionDecisionReason, c.reason) {
			t.Errorf("%s %s: reason %q, want %q in it", c.tool, c.input, a.Output.Specific.PermissionDecisionReason, c.reason)
		}
		if a.Exit != 0 {
			t.Errorf("%s %s: exit %d", c.tool, c.input, a.Exit)
		}
	}
}

// A call allowed at PreToolUse is completed and recorded at PostToolUse,
// once, and the seed-000 listener hears it before and after it runs.
func TestPostToolUseRecords(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	if d := decision(f.b.Handle(ctx, event(claudenames.PreToolUse, "Bash", `{"command":"ls"}`, "t1"))); d != "allow" {
		t.Fatal(d)
	}
	if fmt.Sprint(f.heard) != "[pre bash]" || len(f.records) != 0 {
		t.Fatalf("heard %v, records %v", f.heard, f.records)
	}
	post := event(claudenames.PostToolUse, "Bash", `{"command":"ls"}`, "t1")
	post.ToolResponse = json.RawMessage(`{"stdout":"a.txt","stderr":""}`)
	f.b.Handle(ctx, post)
	f.b.Handle(ctx, post) // a second PostToolUse of the call records nothing more
	if len(f.records) != 1 {
		t.Fatalf("records %v", f.records)
	}
	r := f.records[0]
	if r.Name != "bash" || r.Decision.Outcome != gate.OutcomeAllowed || r.Decision.By.String() != "rule:ls-ok" || !r.Ran || !strings.Contains(r.Output, "a.txt") || r.RunID != "s1" {
		t.Errorf("record %+v", r)
	}
	if fmt.Sprint(f.heard) != "[pre bash post bash]" {
		t.Errorf("heard %v", f.heard)
	}
	fail := event(claudenames.PostToolUseFailure, "Bash", `{"command":"ls"}`, "t2")
	fail.Error = "exit 1"
	f.b.Handle(ctx, event(claudenames.PreToolUse, "Bash", `{"command":"ls"}`, "t2"))
	f.b.Handle(ctx, fail)
	if len(f.records) != 2 || !f.records[1].IsError || fmt.Sprint(f.heard) != "[pre bash post bash pre bash post bash error bash]" {
		t.Errorf("records %v heard %v", f.records, f.heard)
	}
}

// An ask without an Asker is Claude Code's prompt; a call that then runs
// was approved there, by the prompter.
func TestAskAtClaudeCodePrompt(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	if d := decision(f.b.Handle(ctx, event(claudenames.PreToolUse, "Bash", `{"command":"git push"}`, "t1"))); d != "ask" {
		t.Fatal(d)
	}
	post := event(claudenames.PostToolUse, "Bash", `{"command":"git push"}`, "t1")
	post.ToolResponse = json.RawMessage(`"pushed"`)
	f.b.Handle(ctx, post)
	if len(f.records) != 1 || f.records[0].Decision.Outcome != gate.OutcomeApproved || f.records[0].Decision.By.String() != "person:alice" {
		t.Errorf("records %+v", f.records)
	}
}

type asker func(p *gate.Pending) (*tool.Answer, error)

func (a asker) Ask(_ context.Context, _ *claudegate.Input, _ gate.Call, p *gate.Pending) (*tool.Answer, error) {
	return a(p)
}

// With an Asker, the hook waits for the answer: an approval allows (with
// edited arguments as updatedInput in Claude Code's shape), a decline and
// no answer deny, and so does an Asker that fails.
func TestAsker(t *testing.T) {
	ctx := context.Background()
	write := event(claudenames.PreToolUse, "Write", `{"file_path":"/work/ws/notes.txt","content":"a"}`, "t1")
	for _, c := range []struct {
		name   string
		ask    asker
		want   string
		reason string
		input  string
	}{
		{"approved", func(p *gate.Pending) (*tool.Answer, error) {
			return &tool.Answer{ID: p.Request.ID, OK: true, By: "bob"}, nil
		}, "allow", "approved by person:bob", ""},
		{"edited", func(p *gate.Pending) (*tool.Answer, error) {
			return &tool.Answer{ID: p.Request.ID, OK: true, By: "bob", Data: json.RawMessage(`{"path":"/work/ws/notes.txt","content":"b"}`)}, nil
		}, "allow", "", `{"content":"b","file_path":"/work/ws/notes.txt"}`},
		{"edited into a denied call", func(p *gate.Pending) (*tool.Answer, error) {
			return &tool.Answer{ID: p.Request.ID, OK: true, By: "bob", Data: json.RawMessage(`{"path":"/work/ws/secret/notes","content":"b"}`)}, nil
		}, "deny", "rule:no-secrets", ""},
		{"declined", func(p *gate.Pending) (*tool.Answer, error) {
			return &tool.Answer{ID: p.Request.ID, OK: false, By: "bob", Reason: "not today"}, nil
		}, "deny", "declined by bob: not today", ""},
		{"no answer", func(p *gate.Pending) (*tool.Answer, error) { return nil, nil }, "deny", "no one answered", ""},
		{"failed", func(p *gate.Pending) (*tool.Answer, error) { return nil, errors.New("server down") }, "deny", "server down", ""},
	} {
		f := newFixture(t, c.ask)
		a := f.b.Handle(ctx, write)
		if got := decision(a); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
			continue
		}
		s := a.Output.Specific
		if !strings.Contains(s.PermissionDecisionReason, c.reason) {
			t.Errorf("%s: reason %q, want %q", c.name, s.PermissionDecisionReason, c.reason)
		}
		if string(s.UpdatedInput) != c.input {
			t.Errorf("%s: updatedInput %s, want %s", c.name, s.UpdatedInput, c.input)
		}
		if c.want == "deny" && (len(f.records) != 1 || f.records[0].Ran) {
			t.Errorf("%s: records %+v", c.name, f.records)
		}
	}
}

// PermissionRequest refuses what the policy denies and leaves the rest to
// Claude Code's prompt; it records nothing (PreToolUse did).
func TestPermissionRequest(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	a := f.b.Handle(ctx, event(claudenames.PermissionRequest, "Bash", `{"command":"rm x"}`, "t1"))
	if a.Output == nil || a.Output.Specific.Decision == nil || a.Output.Specific.Decision.Behavior != "deny" || !strings.Contains(a.Output.Specific.Decision.Message, "no deletions") {
		t.Errorf("deny: %+v", a.Output)
	}
	for _, cmd := range []string{"ls", "git push", "echo"} {
		if a := f.b.Handle(ctx, event(claudenames.PermissionRequest, "Bash", `{"command":"`+cmd+`"}`, "t1")); a.Output != nil {
			t.Errorf("%s: %+v, want no opinion", cmd, a.Output.Specific)
		}
	}
	if len(f.records) != 0 {
		t.Errorf("records %+v", f.records)
	}
}

// A panic anywhere in the bridge denies with exit code 2.
func TestPanicDenies(t *testing.T) {
	f := newFixture(t, asker(func(*gate.Pending) (*tool.Answer, error) { panic("boom") }))
	a := f.b.Handle(context.Background(), event(claudenames.PreToolUse, "Bash", `{"command":"git push"}`, "t1"))
	if decision(a) != "deny" || a.Exit != 2 || !strings.Contains(a.Stderr, "boom") {
		t.Errorf("%+v", a)
	}
}

// The session's last prompt and stated intent are kept for approval cards.
func TestNotes(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	f.b.Handle(ctx, &claudegate.Input{SessionID: "s1", HookEventName: claudenames.UserPromptSubmit, Prompt: "tidy up"})
	f.b.Handle(ctx, &claudegate.Input{SessionID: "s1", HookEventName: claudenames.Stop, LastAssistantMessage: "I will push"})
	if p, i := f.b.Notes("s1"); p != "tidy up" || i != "I will push" {
		t.Errorf("notes %q %q", p, i)
	}
	f.b.Handle(ctx, &claudegate.Input{SessionID: "s1", HookEventName: claudenames.SessionEnd})
	if p, i := f.b.Notes("s1"); p != "" || i != "" {
		t.Errorf("after SessionEnd: %q %q", p, i)
	}
}

// A request shows the session's last prompt and the model's stated intent,
// read from the transcript Claude Code names.
func TestAskShowsTranscriptContext(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "t.jsonl")
	lines := []string{
		`{"type":"user","message":{"role":"user","content":"an old prompt"}}`,
		`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"old intent"}]}}`,
		`{"type":"user","message":{"role":"user","content":"tidy the notes"}}`,
		`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"I will rewrite notes.txt."},{"type":"tool_use","id":"t1","name":"Write","input":{}}]}}`,
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t0","content":"x"}]}}`,
	}
	if err := os.WriteFile(tr, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var shown string
	b, err := claudegate.New(&claudegate.Options{Policies: []*policy.Policy{testPolicy(t)}, StateDir: dir, ReadTranscript: true,
		Asker: asker(func(p *gate.Pending) (*tool.Answer, error) { shown = p.Request.Prompt; return nil, nil })})
	if err != nil {
		t.Fatal(err)
	}
	in := event(claudenames.PreToolUse, "Write", `{"file_path":"/work/ws/notes.txt","content":"a"}`, "t1")
	in.TranscriptPath = tr
	b.Handle(context.Background(), in)
	if !strings.Contains(shown, "Last user prompt: tidy the notes") || !strings.Contains(shown, "The model's stated intent: I will rewrite notes.txt.") {
		t.Errorf("the request shows %q", shown)
	}
}

// An AfterTool hook's replacement (a redaction) reaches Claude Code as
// updatedToolOutput, and the record keeps the replacement.
func TestAfterToolRedactionReachesClaudeCode(t *testing.T) {
	var recs []gate.Record
	h := (&hooks.Hooks{}).AfterTool("redact", func(_ context.Context, ev *hooks.AfterToolEvent) (*hooks.ToolOverride, error) {
		return hooks.Replace(tool.Text(strings.ReplaceAll(ev.Result.Output, "sk-secret", "[redacted]"))), nil
	})
	b, err := claudegate.New(&claudegate.Options{Policies: []*policy.Policy{testPolicy(t)}, StateDir: t.TempDir(), Hooks: h,
		OnRecord: func(_ context.Context, r gate.Record) { recs = append(recs, r) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	b.Handle(ctx, event(claudenames.PreToolUse, "Bash", `{"command":"ls"}`, "t1"))
	post := event(claudenames.PostToolUse, "Bash", `{"command":"ls"}`, "t1")
	post.ToolResponse = json.RawMessage(`"key sk-secret"`)
	a := b.Handle(ctx, post)
	if a.Output == nil || a.Output.Specific == nil || string(a.Output.Specific.UpdatedToolOutput) != `"key [redacted]"` {
		t.Fatalf("answer %+v", a.Output)
	}
	if len(recs) != 1 || recs[0].Output != "key [redacted]" || fmt.Sprint(recs[0].ReplacedBy) != "[redact]" {
		t.Errorf("records %+v", recs)
	}
}

// Rules may name Claude Code's tools, in its Tool(specifier) syntax too.
func TestRulesNameClaudeCodeTools(t *testing.T) {
	p, _, err := policy.ParsePolicy("p.yaml", strings.NewReader(`rules:
  - id: push
    tool: "Bash(git push:*)"
    decision: deny
  - id: writes
    tool: Write
    decision: ask
`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := claudegate.New(&claudegate.Options{Policies: []*policy.Policy{p}, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if d := decision(b.Handle(ctx, event(claudenames.PreToolUse, "Bash", `{"command":"cd x && git push origin"}`, "t1"))); d != "deny" {
		t.Errorf("git push: %s", d)
	}
	if d := decision(b.Handle(ctx, event(claudenames.PreToolUse, "Write", `{"file_path":"/w/a","content":""}`, "t2"))); d != "ask" {
		t.Errorf("Write: %s", d)
	}
}

// At SessionEnd, an ask Claude Code's prompt never approved is recorded as
// declined, and a call tollgate allowed that Claude Code never ran as not
// run: every call of the session has a record.
func TestSessionEndRecordsCallsThatNeverRan(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	f.b.Handle(ctx, event(claudenames.PreToolUse, "Bash", `{"command":"git push"}`, "t1"))
	f.b.Handle(ctx, event(claudenames.PreToolUse, "Bash", `{"command":"ls"}`, "t2"))
	if len(f.records) != 0 {
		t.Fatalf("records before the end: %+v", f.records)
	}
	f.b.Handle(ctx, &claudegate.Input{SessionID: "s1", Cwd: "/work/ws", HookEventName: claudenames.SessionEnd})
	got := map[string]string{}
	for _, r := range f.records {
		if r.Ran {
			t.Errorf("%s recorded as run", r.ID)
		}
		got[r.ID] = string(r.Decision.Outcome) + " by " + r.Decision.By.String()
	}
	if got["t1"] != "declined by runtime:claude-code" || got["t2"] != "allowed by rule:ls-ok" || len(got) != 2 {
		t.Errorf("records %v", got)
	}
}
