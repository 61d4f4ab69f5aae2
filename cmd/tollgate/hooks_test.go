package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runMain(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestHooksCheckDemoFile(t *testing.T) {
	t.Parallel()
	code, out, errOut := runMain(t, "hooks", "check", "../../examples/demo/hooks.yaml")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"../../examples/demo/hooks.yaml: 4 hook(s) loaded",
		`PRE_TOOL_USE * log "${tool} starting`,
		"ON_ERROR command ",
		"ON_STOP log ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "warning") {
		t.Errorf("the demo file has warnings:\n%s", out)
	}
}

func TestHooksCheckReportsProblems(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.yaml", `hooks:
  - event: preToolUse
    action: {type: log, message: ok}
  - event: onError
    action:
      type: command
      command: echo a #b
  - event: onError
    action: {type: command, command: "echo ${tool}", timeout: soon}
  - event: beforeToolUse
    action: {type: log, message: x}
`)
	code, out, _ := runMain(t, "hooks", "check", bad)
	if code != 1 {
		t.Errorf("exit %d, want 1 (entries were skipped)", code)
	}
	for _, want := range []string{
		bad + `:7:16: warning: hook 2: command is "echo a": the rest of the line, "#b", is a YAML comment`,
		bad + `:9:63: warning: skipped hook 3: action: timeout "soon" is not a Go duration`,
		bad + `:10:12: warning: skipped hook 4: unknown event "beforeToolUse"`,
		bad + ": 2 hook(s) loaded",
		bad + `:2:5 PRE_TOOL_USE log "ok"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// Warnings alone do not fail the check...
	warn := writeFile(t, dir, "warn.yaml", "hooks:\n  - event: onError\n    matcher: x\n    action: {type: log, message: m}\n")
	if code, out, _ := runMain(t, "hooks", "check", warn); code != 0 || !strings.Contains(out, warn+":3:14: warning: hook 1: matcher is ignored") {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
	// ...but a shell command that pastes model-controlled text does, and run refuses it.
	unsafe := writeFile(t, dir, "unsafe.yaml", "hooks:\n  - event: onError\n    action:\n      type: command\n      command: echo ${error}\n")
	if code, out, _ := runMain(t, "hooks", "check", unsafe); code != 1 || !strings.Contains(out, unsafe+":5:16: warning: skipped hook 1: command uses ${error}") {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
	// So does an argv whose program the model would choose.
	prog := writeFile(t, dir, "prog.yaml", "hooks:\n  - event: onError\n    action: {type: command, argv: [\"${callId}\"]}\n")
	if code, out, _ := runMain(t, "hooks", "check", prog); code != 1 || !strings.Contains(out, prog+":3:35: warning: skipped hook 1: argv[0] uses ${callId}") {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
	script := writeFile(t, dir, "s.yaml", "turns:\n  - text: hi\n")
	if code, _, errOut := runMain(t, "run", "--model", "script:"+script, "--workdir", dir, "--hooks", unsafe, "x"); code != exitUsage || !strings.Contains(errOut, "paste model-controlled text into the shell") {
		t.Errorf("run --hooks unsafe: exit %d\n%s", code, errOut)
	}
	// A file that does not parse, or has no hooks, is refused by run too.
	for _, src := range []string{"hooks:\n  - event: [\n", "hook:\n  - event: onError\n    action: {type: log, message: m}\n"} {
		f := writeFile(t, dir, "refused.yaml", src)
		if code, _, errOut := runMain(t, "run", "--model", "script:"+script, "--workdir", dir, "--hooks", f, "x"); code != exitUsage {
			t.Errorf("run --hooks %q: exit %d, want %d\n%s", src, code, exitUsage, errOut)
		}
		if code, _, _ := runMain(t, "hooks", "check", f); code != 1 {
			t.Errorf("hooks check %q: exit %d, want 1", src, code)
		}
	}
	// A document that does not parse, and a missing file, fail it.
	broken := writeFile(t, dir, "broken.yaml", "hooks:\n  - event: [\n")
	if code, out, _ := runMain(t, "hooks", "check", broken); code != 1 || !strings.Contains(out, broken+":") || !strings.Contains(out, "error: the document does not parse") {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
	if code, out, _ := runMain(t, "hooks", "check", filepath.Join(dir, "missing.yaml")); code != 1 || !strings.Contains(out, "no such file") {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
	if code, _, _ := runMain(t, "hooks", "check"); code != 2 {
		t.Errorf("no file: exit %d, want 2", code)
	}
}

// tollgate run --hooks applies the hooks, logs to stderr, runs a command on a
// failing call, and fires ON_STOP once with the run's status.
func TestRunWithHooks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	errLog := filepath.Join(work, "errors.log") // sandboxed hooks write in the workspace and the working directory
	hooksFile := writeFile(t, dir, "hooks.yaml", `hooks:
  - event: onStart
    action: {type: log, message: "start ${agent}"}
  - event: postToolUse
    matcher: "*"
    action: {type: log, message: "post ${tool} success=${success}"}
  - event: onError
    action: {type: command, command: 'printf "%s\n" "$TOLLGATE_TOOL" >> `+errLog+`'}
  - event: onStop
    action: {type: log, message: "stop ${status}"}
  - event: bogus
`)
	script := writeFile(t, dir, "script.yaml", `turns:
  - toolCalls:
      - name: read
        args: {path: missing.txt}
  - text: "done"
`)
	code, out, errOut := runMain(t, "run", "-v", "--model", "script:"+script, "--workdir", work, "--hooks", hooksFile, "--hooks", hooksFile, "read it")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"tollgate: hooks: " + hooksFile + ":11:12: warning: skipped hook 5: unknown event",
		"is given more than once; it is loaded once",
		`msg="[HOOK] start agent"`,
		`msg="[HOOK] post read success=false"`,
		`msg="[HOOK] stop done"`,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	for _, once := range []string{"[HOOK] start", "[HOOK] post", "[HOOK] stop"} {
		if n := strings.Count(errOut, once); n != 1 {
			t.Errorf("%q appears %d times, want 1:\n%s", once, n, errOut)
		}
	}
	if b, err := os.ReadFile(errLog); err != nil || string(b) != "read\n" {
		t.Errorf("onError command wrote %q (%v), want \"read\\n\"", b, err)
	}
	if code, _, errOut := runMain(t, "run", "--model", "script:"+script, "--hooks", filepath.Join(dir, "nope.yaml"), "x"); code != 2 || !strings.Contains(errOut, "--hooks") {
		t.Errorf("missing hooks file: exit %d, stderr %s", code, errOut)
	}
}

// Log lines (decisions, hook log actions) reach stderr only with -v; with
// --log-file they go to the file, warnings too, and stderr gets none.
func TestLogLinesOnlyWithVerboseOrLogFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	hooksFile := writeFile(t, dir, "hooks.yaml", `hooks:
  - event: postToolUse
    action: {type: log, message: "post ${tool}"}
  - event: onStop
    action: {type: command, command: "exit 3"}
`)
	script := writeFile(t, dir, "script.yaml", "turns:\n  - toolCalls: [{name: read, args: {path: missing.txt}}]\n  - text: done\n")
	run := func(extra ...string) (string, string) {
		t.Helper()
		args := append([]string{"run", "--model", "script:" + script, "--workdir", work, "--hooks", hooksFile}, extra...)
		code, out, errOut := runMain(t, append(args, "read it")...)
		if code != 0 {
			t.Fatalf("%v: exit %d\nstdout:\n%s\nstderr:\n%s", extra, code, out, errOut)
		}
		return out, errOut
	}
	out, errOut := run()
	if strings.Contains(errOut, "[HOOK]") || strings.Contains(errOut, "msg=\"tool call\"") {
		t.Errorf("log lines on stderr without -v:\n%s", errOut)
	}
	if !strings.Contains(errOut, "level=WARN") {
		t.Errorf("the failed hook command's warning is missing from stderr without -v:\n%s", errOut)
	}
	if !strings.Contains(out, "done") {
		t.Errorf("stdout lacks the answer:\n%s", out)
	}
	_, errOut = run("-v")
	if !strings.Contains(errOut, `msg="[HOOK] post read"`) || !strings.Contains(errOut, `msg="tool call"`) {
		t.Errorf("stderr with -v lacks the log lines:\n%s", errOut)
	}
	logFile := filepath.Join(dir, "tollgate.log")
	_, errOut = run("--log-file", logFile)
	if strings.Contains(errOut, "level=") {
		t.Errorf("log lines on stderr with --log-file:\n%s", errOut)
	}
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`msg="[HOOK] post read"`, `msg="tool call"`, "level=WARN"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the log file lacks %s:\n%s", want, b)
		}
	}
	if fi, err := os.Stat(logFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("log file mode %v (%v), want 0600", fi.Mode(), err)
	}
	// A log file in the workspace is not the agent's to write.
	inside := filepath.Join(work, "run.log")
	forge := writeFile(t, dir, "forge.yaml", "turns:\n  - toolCalls: [{name: write, args: {path: run.log, content: forged}}]\n  - text: done\n")
	code, out, errOut := runMain(t, "run", "--model", "script:"+forge, "--workdir", work, "--log-file", inside, "x")
	if b, _ := os.ReadFile(inside); code != 0 || strings.Contains(string(b), "forged") || !strings.Contains(out, "<- error") {
		t.Errorf("write to the log file: exit %d, log %q\nstdout:\n%s\nstderr:\n%s", code, b, out, errOut)
	}
	if code, _, errOut := runMain(t, "run", "--model", "script:"+script, "--workdir", work, "--log-file", filepath.Join(dir, "no", "such", "dir", "x.log"), "x"); code != 2 || !strings.Contains(errOut, "--log-file") {
		t.Errorf("unwritable --log-file: exit %d, stderr %s", code, errOut)
	}
}
