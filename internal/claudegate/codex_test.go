package claudegate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/claudegate"
	"github.com/tollgate-dev/tollgate/internal/claudenames"
	"github.com/tollgate-dev/tollgate/policy"
)

func codexBridge(t testing.TB, pol *policy.Policy) *claudegate.Bridge {
	t.Helper()
	b, err := claudegate.New(&claudegate.Options{Policies: []*policy.Policy{pol}, StateDir: t.TempDir(), Source: gate.SourceCodex})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// codexPreToolUse answers a Codex PreToolUse of Bash with command.
func codexPreToolUse(t testing.TB, b *claudegate.Bridge, command string) claudegate.Answer {
	t.Helper()
	input, _ := json.Marshal(map[string]string{"command": command})
	in := &claudegate.Input{SessionID: "s", Cwd: "/w", HookEventName: claudenames.PreToolUse, ToolName: "Bash", ToolInput: input, ToolUseID: "call_1"}
	return claudegate.CodexAnswer(in.HookEventName, b.Handle(context.Background(), in))
}

// In Codex's dialect a deny and an ask are each a JSON deny and exit code
// 2 with the reason on stderr (Codex cannot ask, and lets through what it
// does not read as a block); an allow is no objection.
func TestCodexAnswer(t *testing.T) {
	b := codexBridge(t, testPolicy(t))
	for _, c := range []struct {
		command, reason string
	}{
		{"rm -rf /srv", "denied by rule:no-rm: no deletions"},
		{"git push origin main", "a person must approve this call and codex cannot ask"},
	} {
		a := codexPreToolUse(t, b, c.command)
		if a.Exit != 2 || !strings.Contains(a.Stderr, c.reason) || a.Output == nil || a.Output.Specific == nil ||
			a.Output.Specific.PermissionDecision != "deny" || !strings.Contains(a.Output.Specific.PermissionDecisionReason, c.reason) {
			t.Errorf("%s: %+v, want a deny with exit 2 saying %q", c.command, a, c.reason)
		}
	}
	if a := codexPreToolUse(t, b, "ls"); a.Output != nil || a.Exit != 0 {
		t.Errorf("ls: %+v, want no objection", a)
	}
	// An edited command cannot replace Codex's: a deny that names it.
	edited := claudegate.Answer{Output: &claudegate.Output{Specific: &claudegate.Specific{HookEventName: claudenames.PreToolUse, PermissionDecision: "allow", UpdatedInput: json.RawMessage(`{"command":"ls -a"}`)}}}
	if a := claudegate.CodexAnswer(claudenames.PreToolUse, edited); a.Exit != 2 || a.Output.Specific.PermissionDecision != "deny" || !strings.Contains(a.Stderr, "ls -a") {
		t.Errorf("edited: %+v", a)
	}
	if a := claudegate.CodexAnswer("", claudegate.Failed("", "bad input")); a.Exit != 2 || a.Output.Specific.PermissionDecision != "deny" {
		t.Errorf("failed: %+v", a)
	}
}

// FuzzCodexPreToolUse: whatever a PreToolUse event holds, Codex's answer
// is no objection or a deny with exit code 2, never an ask or an allow it
// would read as something else.
func FuzzCodexPreToolUse(f *testing.F) {
	f.Add([]byte(`{"session_id":"s","cwd":"/w","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf x"},"tool_use_id":"c","turn_id":"t","model":"gpt-5"}`))
	f.Add([]byte(`{"session_id":"s","cwd":"/w","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git push"},"tool_use_id":"c"}`))
	f.Add([]byte(`{"session_id":"s","cwd":"/w","hook_event_name":"PreToolUse","tool_name":"apply_patch","tool_input":{},"tool_use_id":"c"}`))
	b := codexBridge(f, testPolicy(f))
	f.Fuzz(func(t *testing.T, raw []byte) {
		in, err := claudegate.ParseInput(bytes.NewReader(raw))
		if err != nil || in.HookEventName != claudenames.PreToolUse {
			return
		}
		a := claudegate.CodexAnswer(in.HookEventName, b.Handle(context.Background(), in))
		if a.Output == nil {
			if a.Exit != 0 {
				t.Fatalf("exit %d without JSON", a.Exit)
			}
			return
		}
		if sp := a.Output.Specific; sp == nil || sp.PermissionDecision != "deny" || a.Exit != 2 || a.Stderr == "" {
			t.Fatalf("answer %+v %+v", a, a.Output.Specific)
		}
	})
}
