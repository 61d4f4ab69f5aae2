package claudecode_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/model/scripted"
)

// Popular guards, written afresh from their descriptions, run unchanged:
// they read Claude Code's names and shapes (tool_name "Bash",
// tool_input.file_path) and answer the way Claude Code reads.
const guards = `{
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "python3 \"$CLAUDE_PROJECT_DIR\"/../guards/block-rm-rf.py"}]},
      {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "$TD/guards/protect-files.sh"}]}
    ],
    "PostToolUse": [
      {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "$TD/guards/format-after-edit.sh", "timeout": 30}]}
    ],
    "Stop": [
      {"hooks": [{"type": "command", "command": "$TD/guards/require-tests.py"}]}
    ]
  }
}`

// needPrograms fails t, saying what to install, when a program the guards
// are written in is missing; otherwise each guard would fail as a hook and
// the test would report denials it cannot explain.
func needPrograms(t *testing.T, names ...string) {
	t.Helper()
	for _, name := range names {
		if _, err := exec.LookPath(name); err != nil {
			t.Fatalf("the guards are written in sh with jq and in python3, and %s is not on PATH: apt-get install %s (scripts/test.sh does)", name, name)
		}
	}
}

func TestPopularGuards(t *testing.T) {
	needPrograms(t, "jq", "python3")
	h := newHarness(t, strings.ReplaceAll(guards, `"$CLAUDE_PROJECT_DIR\"/../guards/`, `$TD/guards/`))
	h.finals = 2
	res, err := h.run(t, "tidy up",
		bash("rm -rf notes.txt"),
		[]scripted.ToolCall{call("edit", map[string]any{"path": ".env", "oldString": "TOKEN=x", "newString": "TOKEN=y"})},
		[]scripted.ToolCall{call("write", map[string]any{"path": "go.sum", "content": "forged\n"})},
		[]scripted.ToolCall{call("write", map[string]any{"path": "main.txt", "content": "a   \nb\t\n"})},
		bash("rm notes.txt"),
	)
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("status %s, err %v", res.Status, err)
	}
	want := []struct {
		outcome gate.Outcome
		reason  string
	}{
		{gate.OutcomeDenied, "rm -rf is not allowed"},
		{gate.OutcomeDenied, ".env is protected"},
		{gate.OutcomeDenied, "go.sum is protected"},
		{gate.OutcomeAllowed, ""},
		{gate.OutcomeAllowed, ""},
	}
	for i, w := range want {
		d := res.ToolCalls[i].Decision
		if d.Outcome != w.outcome || !strings.Contains(d.Reason, w.reason) {
			t.Errorf("call %d (%s): %s %q, want %s %q", i, res.ToolCalls[i].Args, d.Outcome, d.Reason, w.outcome, w.reason)
		}
	}
	if got := h.read(t, ".env"); got != "TOKEN=x\n" {
		t.Errorf(".env is %q", got)
	}
	if got := h.read(t, "go.sum"); got != "sum\n" {
		t.Errorf("go.sum is %q", got)
	}
	if got := h.read(t, "main.txt"); got != "a\nb\n" {
		t.Errorf("the formatter did not run after the write: %q", got)
	}
	if h.exists("notes.txt") {
		t.Error("a plain rm was blocked")
	}
	// The Stop guard sent the model back once to run the tests.
	n := 0
	for _, m := range res.Transcript {
		if strings.Contains(m.Content, "Run the tests") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the stop guard's reason reached the model %d times, want 1", n)
	}
}
