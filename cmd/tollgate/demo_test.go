package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyDir copies the regular files and directories under src to dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDemo runs the README's demo (examples/demo/run.sh's flags) on a copy of
// the workspace and checks every governed outcome it is there to show.
func TestDemo(t *testing.T) {
	t.Parallel()
	demo, err := filepath.Abs("../../examples/demo")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	ws := filepath.Join(tmp, "workspace")
	copyDir(t, filepath.Join(demo, "workspace"), ws)
	logFile := filepath.Join(tmp, "tollgate.log")
	var out, errb bytes.Buffer
	code := mainEnv(context.Background(), []string{"run", "--log-file", logFile,
		"--model", "script:" + filepath.Join(demo, "script.yaml"),
		"--workdir", ws, "--deny", "write",
		"--hooks", filepath.Join(demo, "hooks.yaml"),
		"--policy", filepath.Join(demo, "policy.yaml"),
		"--approve", "yes", "--state-dir", filepath.Join(tmp, ".tollgate"),
		"Tidy up the release notes"}, &cliEnv{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, dir: tmp})
	if code != exitDone {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	for _, want := range []string{
		`[edit call_5_1] <- error (55 bytes): refused: path "../outside.txt" is outside the workspace`,
		`[bash call_6_1] denied by rule:no-rm: deleting files with rm is not allowed here`,
		`[write call_7_1] denied by hook:deny: the deny list has "write"`,
		`[edit call_8_1] approved by flag:--approve=yes`,
		`[bash call_4_1] <- ok`,
		`[todowrite call_1_2] <- ok (108 bytes): 2 todos: 0 completed, 1 in progress, 1 pending`,
		`[question call_2_2] approved by flag:--approve=yes, without an answer`,
		`changed: 1 in_progress -> completed, 2 pending -> completed`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
	logs, _ := os.ReadFile(logFile)
	for _, want := range []string{"[HOOK] read starting", "ended: done"} {
		if !strings.Contains(string(logs), want) {
			t.Errorf("hook log lacks %q:\n%s", want, logs)
		}
	}
	// The question tool starts, asks, and runs again with the answer: the
	// hooks see it start once and end once, as every other call.
	for _, line := range []string{"[HOOK] question starting (call call_2_2", "[HOOK] question took"} {
		if n := strings.Count(string(logs), line); n != 1 {
			t.Errorf("hook log has %q %d times, want 1:\n%s", line, n, logs)
		}
	}
	todo, _ := os.ReadFile(filepath.Join(ws, "todo.md"))
	notes, _ := os.ReadFile(filepath.Join(ws, "notes.txt"))
	if !strings.Contains(string(todo), "- [x] write the release notes") || !strings.HasPrefix(string(notes), "Release notes\n") {
		t.Errorf("workspace after the demo:\ntodo.md:\n%s\nnotes.txt:\n%s", todo, notes)
	}
	if _, err := os.Stat(filepath.Join(tmp, "outside.txt")); err == nil {
		t.Error("the edit outside the workspace happened")
	}
	// The onError command runs in the run's workspace.
	if log, err := os.ReadFile(filepath.Join(ws, "tollgate-errors.log")); err != nil || !strings.Contains(string(log), "edit failed: refused") {
		t.Errorf("onError hook log: %q, %v", log, err)
	}
	// The shipped workspace is untouched.
	shipped, _ := os.ReadFile(filepath.Join(demo, "workspace", "todo.md"))
	if !strings.Contains(string(shipped), "- [ ] write the release notes") {
		t.Errorf("the shipped workspace changed:\n%s", shipped)
	}
}

// --timeout stops the whole run: the running tool's process group is killed
// and the run fails with exit 1 naming the limit.
func TestRunTimeout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "slow.yaml")
	os.WriteFile(script, []byte("turns:\n  - toolCalls:\n      - name: bash\n        args: {command: \"sleep 30 & wait\"}\n  - text: done\n"), 0o644)
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"run", "--model", "script:" + script, "--workdir", dir, "--timeout", "300ms", "x"}, strings.NewReader(""), &out, &errb)
	if code != exitError || !strings.Contains(errb.String(), "longer than its timeout 300ms") || !strings.Contains(out.String(), killedNote(t)) {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	if code := Main(context.Background(), []string{"run", "--model", "script:" + script, "--timeout", "-1s", "x"}, strings.NewReader(""), &out, &errb); code != exitUsage {
		t.Errorf("negative --timeout: exit %d, want %d", code, exitUsage)
	}
}

// TestDemoWithMCP runs the MCP part of the demo (run.sh --with-mcp): the
// filesystem server's read runs, its write waits for approval and then runs,
// and the policy denies overwriting the notes, so no tools/call reaches it.
func TestDemoWithMCP(t *testing.T) {
	t.Parallel()
	demo, _ := filepath.Abs("../../examples/demo")
	server := filepath.Join(demo, "../../mcptool/testdata/npm/node_modules/.bin/mcp-server-filesystem")
	if _, err := os.Stat(server); err != nil {
		if testing.Short() {
			t.Skip("-short: the MCP filesystem server is not installed")
		}
		t.Fatalf("the MCP filesystem server is missing (%v): run npm ci --prefix mcptool/testdata/npm (scripts/test.sh does)", err)
	}
	tmp := t.TempDir()
	ws := filepath.Join(tmp, "workspace")
	copyDir(t, filepath.Join(demo, "workspace"), ws)
	src, _ := os.ReadFile(filepath.Join(demo, "mcp-script.yaml"))
	script := filepath.Join(tmp, "mcp-script.yaml")
	os.WriteFile(script, []byte(strings.ReplaceAll(string(src), "${WORKSPACE}", ws)), 0o644)
	var out, errb bytes.Buffer
	code := mainEnv(context.Background(), []string{"run", "--model", "script:" + script, "--workdir", ws,
		"--mcp", filepath.Join(demo, "mcp.json"), "--policy", filepath.Join(demo, "policy.yaml"),
		"--approve", "yes", "--state-dir", filepath.Join(tmp, ".tollgate"), "Summarise"},
		&cliEnv{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, dir: tmp, getenv: testEnv(map[string]string{"TOLLGATE_DEMO_WORKSPACE": ws})})
	if code != exitDone {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	for _, want := range []string{
		"[mcp__fs__read_text_file call_1_1] <- ok",
		"[mcp__fs__write_file call_2_1] approved by flag:--approve=yes",
		"[mcp__fs__write_file call_3_1] denied by rule:mcp-notes-protected",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "summary.txt")); string(b) != "2 TODOs left in the notes.\n" {
		t.Errorf("summary.txt = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "notes.txt")); !strings.HasPrefix(string(b), "Release notes, draft") {
		t.Errorf("the notes were overwritten: %q", b)
	}
}
