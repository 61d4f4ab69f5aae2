package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `tollgate run --claude-settings` runs a settings file's PreToolUse guard
// unchanged: the rm -rf it blocks never runs, a plain command does, and the
// guard that fails denies (fail closed) with "hook failed" in the output.
func TestRunClaudeSettings(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	writeFile(t, ws, "notes.txt", "keep me\n")
	writeFile(t, ws, "other.txt", "x\n")
	dir := t.TempDir()
	settings := writeFile(t, dir, "settings.json", `{
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "grep -q 'rm -rf' && { echo 'rm -rf is blocked' >&2; exit 2; }; exit 0"}]},
      {"matcher": "Write", "hooks": [{"type": "command", "command": "exit 1"}]}
    ],
    "Bogus": []
  }
}`)
	script := writeFile(t, dir, "script.yaml", `turns:
  - toolCalls:
      - {name: bash, args: {command: "rm -rf notes.txt"}}
      - {name: bash, args: {command: "rm other.txt"}}
      - {name: write, args: {path: new.txt, content: x}}
  - text: done
`)
	code, out, errOut := runMain(t, "run", "--model", "script:"+script, "--workdir", ws, "--claude-settings", settings, "go")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(ws, "notes.txt")); err != nil {
		t.Errorf("notes.txt was deleted:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(ws, "other.txt")); err == nil {
		t.Errorf("the plain rm did not run:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(ws, "new.txt")); err == nil {
		t.Errorf("the write ran although its guard failed:\n%s", out)
	}
	for _, want := range []string{"denied by hook:claude:PreToolUse: rm -rf is blocked", "denied by hook:claude:PreToolUse: hook failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "settings.json:7:5: warning: skipped hooks.Bogus: unknown event") {
		t.Errorf("stderr lacks the diagnostic:\n%s", errOut)
	}

	// Fail open on request: the write runs.
	code, out, errOut = runMain(t, "run", "--model", "script:"+script, "--workdir", ws, "--claude-settings", settings, "--claude-fail", "PreToolUse=open", "go")
	if _, err := os.Stat(filepath.Join(ws, "new.txt")); code != 0 || err != nil {
		t.Errorf("with --claude-fail PreToolUse=open the write did not run (exit %d):\n%s\n%s", code, out, errOut)
	}
	if code, _, _ := runMain(t, "run", "--model", "script:"+script, "--claude-settings", settings, "--claude-fail", "PreToolUse=maybe", "go"); code != exitUsage {
		t.Errorf("a bad --claude-fail: exit %d, want %d", code, exitUsage)
	}
}

// --claude-project-settings reads the workspace's .claude files.
func TestRunClaudeProjectSettings(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, ".claude"), 0o755)
	writeFile(t, ws, ".claude/settings.local.json", `{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"echo local says no >&2; exit 2"}]}]}}`)
	script := writeFile(t, t.TempDir(), "script.yaml", "turns:\n  - toolCalls:\n      - {name: bash, args: {command: \"touch ran\"}}\n  - text: done\n")
	// The command's HOME, not the process's: ~/.claude/settings.json is the test's.
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".claude"), 0o755)
	writeFile(t, home, ".claude/settings.json", `{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"echo home says no >&2; exit 2"}]}]}}`)
	code, out, errOut := tgMainIn(t, "", map[string]string{"HOME": home}, "run", "--model", "script:"+script, "--workdir", ws, "--claude-project-settings", "go")
	if code != 0 || !strings.Contains(out, "local says no") || !strings.Contains(out, "home says no") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
		t.Fatal("the call ran")
	}
}

func TestHooksCheckClaudeSettings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := writeFile(t, dir, "good.json", `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"./stop.sh"}]}]}}`)
	code, out, _ := runMain(t, "hooks", "check", good)
	if code != 0 || !strings.Contains(out, "1 Claude Code hook handler(s) loaded") || !strings.Contains(out, "Stop *: "+good+":1:29 (./stop.sh)") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	bad := writeFile(t, dir, "bad.json", `{"hooks":{"PreToolUse":[{"matcher":"(","hooks":[{"type":"command","command":"x"}]}]}}`)
	code, out, _ = runMain(t, "hooks", "check", bad)
	if code != exitError || !strings.Contains(out, "bad.json:1:25: warning: skipped hooks.PreToolUse[0]") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

// A guard that did not load must not let calls through: settings whose
// PreToolUse handler was skipped are refused; and hooks see the allowlisted
// environment, never a database password or URL of the process.
func TestRunClaudeSettingsFailClosedAndScrubbed(t *testing.T) {
	ws := t.TempDir()
	dir := t.TempDir()
	script := writeFile(t, dir, "script.yaml", `turns:
  - toolCalls:
      - {name: bash, args: {command: "echo hi"}}
  - text: done
`)
	broken := writeFile(t, dir, "broken.json", `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "exit 2", "timeout": "10"}]}],
  "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]}}`)
	code, out, errOut := runMain(t, "run", "--model", "script:"+script, "--workdir", ws, "--claude-settings", broken, "go")
	if code != exitUsage || !strings.Contains(errOut, "PreToolUse entry was skipped") {
		t.Fatalf("a skipped guard: exit %d, want %d\n%s\n%s", code, exitUsage, out, errOut)
	}
	if code, out, errOut := runMain(t, "run", "--model", "script:"+script, "--workdir", ws, "--claude-settings", broken, "--claude-fail", "PreToolUse=open", "go"); code != 0 {
		t.Fatalf("with PreToolUse=open the run goes on: exit %d\n%s\n%s", code, out, errOut)
	}

	t.Setenv("DB_PASS", "db-secret-1")
	t.Setenv("DATABASE_URL", "postgres://u:pw@h/db")
	envFile := filepath.Join(ws, "hookenv.txt")
	dump := writeFile(t, dir, "dump.json", `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "env > hookenv.txt"}]}]}}`)
	if code, out, errOut := runMain(t, "run", "--model", "script:"+script, "--workdir", ws, "--claude-settings", dump, "go"); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	b, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "db-secret-1") || strings.Contains(string(b), "postgres://") {
		t.Fatalf("a Claude Code hook saw the process's secrets:\n%s", b)
	}
	if !strings.Contains(string(b), "CLAUDE_PROJECT_DIR=") {
		t.Fatalf("the hook's environment lacks CLAUDE_PROJECT_DIR:\n%s", b)
	}
}

// The model's file tools cannot rewrite the files that govern its run when
// they sit in the workspace (the policy, the records), nor plant Claude Code settings that a later run would read.
func TestFileToolsCannotRewriteGovernance(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	policy := writeFile(t, ws, "policy.yaml", "rules:\n  - id: no-rm\n    tool: bash\n    command: {program: rm}\n    decision: deny\n    reason: no\n")
	script := writeFile(t, t.TempDir(), "script.yaml", `turns:
  - toolCalls:
      - {name: write, args: {path: policy.yaml, content: "rules: []\n"}}
      - {name: write, args: {path: .claude/settings.json, content: "{}"}}
      - {name: edit, args: {path: recs.jsonl, oldString: "x", newString: "y"}}
  - text: done
`)
	code, out, errOut := runMain(t, "run", "--model", "script:"+script, "--workdir", ws, "--policy", policy,
		"--records", filepath.Join(ws, "recs.jsonl"), "go")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if n := strings.Count(out, "govern this agent"); n != 3 {
		t.Errorf("%d refusals, want 3:\n%s", n, out)
	}
	if b, _ := os.ReadFile(policy); !strings.Contains(string(b), "no-rm") {
		t.Errorf("the policy was rewritten: %q", b)
	}
	for _, p := range []string{".claude/settings.json"} {
		if _, err := os.Stat(filepath.Join(ws, p)); err == nil {
			t.Errorf("%s was written", p)
		}
	}
}

// `tollgate run --claude-settings` enforces the settings' permissions as
// rules: a deny list's Bash(rm:*) denies /bin/rm too, naming the rule;
// `hooks check` lists them and reports one it cannot read.
func TestRunClaudeSettingsPermissions(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	writeFile(t, ws, "keep.txt", "x\n")
	dir := t.TempDir()
	settings := writeFile(t, dir, "settings.json", `{"permissions": {"deny": ["Bash(rm:*)"], "allow": ["WebSearch", "Bash(ls:*)"]}}`)
	script := writeFile(t, dir, "script.yaml", `turns:
  - toolCalls:
      - {name: bash, args: {command: "/bin/rm keep.txt"}}
      - {name: bash, args: {command: "touch made.txt"}}
  - text: done
`)
	code, out, errOut := runMain(t, "run", "--model", "script:"+script, "--workdir", ws, "--claude-settings", settings, "go")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(ws, "keep.txt")); err != nil {
		t.Errorf("keep.txt was removed:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(ws, "made.txt")); err != nil {
		t.Errorf("the other command did not run:\n%s", out)
	}
	if !strings.Contains(out, "denied by rule:deny:Bash(rm:*)") {
		t.Errorf("output lacks the rule:\n%s", out)
	}
	if !strings.Contains(errOut, "permissions.allow") || !strings.Contains(errOut, "WebSearch") {
		t.Errorf("stderr does not say the allow rule was left out:\n%s", errOut)
	}
	code, out, _ = runMain(t, "hooks", "check", settings)
	if code != 0 || !strings.Contains(out, "3 permission rule(s)") || !strings.Contains(out, "deny Bash(rm:*)") {
		t.Errorf("hooks check: exit %d\n%s", code, out)
	}
	bad := writeFile(t, dir, "bad.json", `{"permissions": {"deny": ["Frobnicate(x)"]}}`)
	if code, _, _ := runMain(t, "run", "--model", "script:"+script, "--workdir", ws, "--claude-settings", bad, "go"); code == 0 {
		t.Error("a deny rule tollgate cannot read did not stop the run")
	}
	if code, out, _ := runMain(t, "hooks", "check", bad); code == 0 || !strings.Contains(out, "bad.json:1:27: error: permissions.deny") {
		t.Errorf("hooks check bad: exit %d\n%s", code, out)
	}
}

// A Claude Code hook the hooks sandbox refuses (it writes outside the
// workspace) denies the call, and the reason says it may have been the
// sandbox and names the setting.
func TestRunClaudeHookRefusedBySandbox(t *testing.T) {
	t.Parallel()
	ws, outside := t.TempDir(), t.TempDir()
	dir := t.TempDir()
	settings := writeFile(t, dir, "settings.json", `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo seen > `+outside+`/log.txt"}]}]}}`)
	script := writeFile(t, dir, "script.yaml", "turns:\n  - toolCalls:\n      - {name: bash, args: {command: \"touch ran\"}}\n  - text: done\n")
	code, out, errOut := runMain(t, "run", "--model", "script:"+script, "--workdir", ws, "--claude-settings", settings, "--hooks-sandbox", "workspace", "go")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !sandboxedHere(t) {
		// Without a sandbox the hook writes its log and the call runs.
		if _, err := os.Stat(filepath.Join(outside, "log.txt")); err != nil {
			t.Errorf("the unconfined hook did not run: %v\n%s", err, out)
		}
		return
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
		t.Errorf("the call ran although its guard was refused:\n%s", out)
	}
	if !strings.Contains(out, "denied by hook:claude:PreToolUse: the hooks sandbox (workspace; --hooks-sandbox, sandbox.hooks in server.yaml) may have refused it: sh: ") {
		t.Errorf("the reason does not name the sandbox:\n%s", out)
	}
}

// The settings name files the hook reads at every call: a missing policy
// is said now (exit 2, naming the flag and the file), not found later as
// a hook that denies every call.
func TestClaudeSettingsRefusesAMissingPolicy(t *testing.T) {
	t.Parallel()
	code, out, errOut := apMain(t, "claude-code", "settings", "--policy", filepath.Join(t.TempDir(), "nope.yaml"))
	if code != exitUsage || !strings.Contains(errOut, "--policy") || !strings.Contains(errOut, "nope.yaml") || strings.Contains(out, "hooks") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
}

// Codex's settings say so too.
func TestCodexSettingsRefusesAMissingPolicy(t *testing.T) {
	t.Parallel()
	code, out, errOut := apMain(t, "codex", "settings", "--policy", filepath.Join(t.TempDir(), "nope.yaml"))
	if code != exitUsage || !strings.Contains(errOut, "--policy") || !strings.Contains(errOut, "nope.yaml") || strings.Contains(out, "hooks") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
}

// The settings block passes --hooks-sandbox on to the hook command, and
// refuses a mode the hook would not know (it would deny every call).
func TestClaudeSettingsHooksSandbox(t *testing.T) {
	t.Parallel()
	hooksFile := writeFile(t, t.TempDir(), "hooks.yaml", "hooks:\n  - {event: preToolUse, action: {type: command, command: 'true'}}\n")
	for _, agent := range []string{"claude-code", "codex"} {
		code, out, errOut := apMain(t, agent, "settings", "--hooks", hooksFile, "--hooks-sandbox", "read-only")
		if code != 0 || !strings.Contains(out, `'--hooks-sandbox' 'read-only'`) {
			t.Errorf("%s: exit %d\nstdout %s\nstderr %s", agent, code, out, errOut)
		}
		code, out, errOut = apMain(t, agent, "settings", "--hooks", hooksFile, "--hooks-sandbox", "none")
		if code != exitUsage || !strings.Contains(errOut, "--hooks-sandbox") || strings.Contains(out, "hooks") {
			t.Errorf("%s, mode none: exit %d\nstdout %s\nstderr %s", agent, code, out, errOut)
		}
	}
}

// The hook gives up on a server that does not answer, and denies, well
// before the agent's timeout for it, which would let the call run: they
// are apart by more than a hook's start and its policy take.
func TestHookDeniesBeforeTheAgentsTimeout(t *testing.T) {
	for _, wait := range []time.Duration{0, time.Second, 50 * time.Second, 10 * time.Minute} {
		if margin := time.Duration(agentTimeout(wait))*time.Second - hookDeadline(wait); margin < 10*time.Second {
			t.Errorf("--wait %s: the hook's deadline is %s, the agent's timeout %ds: a margin of %s", wait, hookDeadline(wait), agentTimeout(wait), margin)
		}
	}
}
