package declarative

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestLogAction(t *testing.T) {
	lg, h := newRecLogger()
	r := Of([]Config{{Event: PostToolUse, Matcher: "file_*", Action: Log("${tool} took ${latencyMs} ms, success=${success}")}}, &Options{Logger: lg})
	u := use("file_read")
	u.Latency, u.Success = 42*time.Millisecond, true
	r.Listener().PostToolUse(context.Background(), u)
	r.Listener().PostToolUse(context.Background(), use("bash"))
	recs := h.records()
	if len(recs) != 1 || recs[0].Level != slog.LevelInfo || recs[0].Msg != "[HOOK] file_read took 42 ms, success=true" || recs[0].Attrs["logger"] != executorLoggerName {
		t.Errorf("records = %+v", recs)
	}
}

// run fires one ON_ERROR hook with the action through the standard executor
// and returns what was logged.
func runAction(t *testing.T, ctx context.Context, a Action, hctx map[string]any) []logRec {
	t.Helper()
	lg, h := newRecLogger()
	r := Of([]Config{{Event: OnStop, Action: a}}, &Options{Logger: lg})
	if len(r.Hooks()) != 1 {
		t.Fatalf("action %v not loaded: %v", a, r.Diagnostics())
	}
	r.FireEvent(ctx, OnStop, hctx)
	return h.records()
}

func evilContext(dir string) map[string]any {
	pwned := filepath.Join(dir, "pwned")
	return map[string]any{
		"tool":   "x; touch " + pwned + " $(touch " + pwned + ") `touch " + pwned + "` ${HOME}",
		"args":   json.RawMessage(`{"path":"'; touch ` + pwned + `; '"}`),
		"error":  "boom\"; touch " + pwned + "; echo \"",
		"callId": "c1$(touch " + pwned + ")",
		"turn":   3, "success": false, "latencyMs": int64(7), "outputSize": 0,
		"agent": "ag", "runId": "r1", "status": "done",
	}
}

// Values reach a command as environment variables, as JSON on stdin and as
// argv elements, and never as shell syntax (the seed's warning, closed).
func TestCommandSafeChannels(t *testing.T) {
	dir := t.TempDir()
	hctx := evilContext(dir)
	out := func(name string) string { return filepath.Join(dir, name) }

	recs := runAction(t, context.Background(), Command(`env | grep '^TOLLGATE_' | sort > `+out("env")+`; cat > `+out("stdin")), hctx)
	if w := warnings(recs); len(w) != 0 {
		t.Fatalf("warnings: %+v", w)
	}
	env := strings.Split(strings.TrimSpace(readFile(t, out("env"))), "\n")
	want := []string{
		"TOLLGATE_AGENT=ag",
		`TOLLGATE_ARGS={"path":"'; touch ` + out("pwned") + `; '"}`,
		"TOLLGATE_CALL_ID=c1$(touch " + out("pwned") + ")",
		`TOLLGATE_ERROR=boom"; touch ` + out("pwned") + `; echo "`,
		"TOLLGATE_EVENT=ON_STOP",
		"TOLLGATE_LATENCY_MS=7",
		"TOLLGATE_OUTPUT_SIZE=0",
		"TOLLGATE_RUN_ID=r1",
		"TOLLGATE_STATUS=done",
		"TOLLGATE_SUCCESS=false",
		"TOLLGATE_TOOL=" + hctx["tool"].(string),
		"TOLLGATE_TURN=3",
	}
	if d := cmp.Diff(want, env); d != "" {
		t.Errorf("environment (-want +got):\n%s", d)
	}
	var stdin map[string]any
	if err := json.Unmarshal([]byte(readFile(t, out("stdin"))), &stdin); err != nil {
		t.Fatal(err)
	}
	if stdin["tool"] != hctx["tool"] || stdin["args"].(map[string]any)["path"] != "'; touch "+out("pwned")+"; '" || stdin["turn"] != 3.0 || stdin["success"] != false || stdin["event"] != "ON_STOP" {
		t.Errorf("stdin = %v", stdin)
	}

	// Quoted environment variables in a shell command stay data.
	runAction(t, context.Background(), Command(`printf '%s|%s|%s' "$TOLLGATE_TOOL" "$TOLLGATE_ERROR" "$TOLLGATE_ARGS" > `+out("quoted")), hctx)
	if got, want := readFile(t, out("quoted")), hctx["tool"].(string)+"|"+hctx["error"].(string)+"|"+string(hctx["args"].(json.RawMessage)); got != want {
		t.Errorf("quoted env = %q, want %q", got, want)
	}
	// argv: each element expanded on its own, no shell.
	runAction(t, context.Background(), Argv("sh", "-c", `printf '%s|%s' "$1" "$2" > "$3"`, "sh", "${tool}", "${error}", out("argv")), hctx)
	if got, want := readFile(t, out("argv")), hctx["tool"].(string)+"|"+hctx["error"].(string); got != want {
		t.Errorf("argv = %q, want %q", got, want)
	}
	if _, err := os.Stat(out("pwned")); err == nil {
		t.Fatal("a value from the context ran as shell syntax")
	}
}

// The shell form keeps the seed's documented behaviour: values are not quoted.
func TestCommandTemplateIsNotQuoted(t *testing.T) {
	dir := t.TempDir()
	runAction(t, context.Background(), Command("echo ${tool}"), map[string]any{"tool": "x; touch " + filepath.Join(dir, "ran")})
	if _, err := os.Stat(filepath.Join(dir, "ran")); err != nil {
		t.Errorf("the unquoted ${tool} was not run by the shell: %v", err)
	}
}

// C19: ${HOME} is not a context key, so it stays and the shell expands it;
// $f is untouched.
func TestC19ShellVariables(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", "/home/hooktest")
	runAction(t, context.Background(), Command(`for f in one two; do echo "$f ${HOME} ${tool}"; done > `+filepath.Join(dir, "out")), map[string]any{"tool": "t"})
	if got, want := readFile(t, filepath.Join(dir, "out")), "one /home/hooktest t\ntwo /home/hooktest t\n"; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}

func TestCommandRunsInWorkingDirectory(t *testing.T) {
	dir := t.TempDir()
	runAction(t, context.Background(), Command("pwd > "+filepath.Join(dir, "pwd")), nil)
	wd, _ := os.Getwd()
	if got := strings.TrimSpace(readFile(t, filepath.Join(dir, "pwd"))); got != wd {
		t.Errorf("pwd = %q, want %q", got, wd)
	}
}

// With Options.Dir a command runs there, not in the process working
// directory: a host resuming a run elsewhere runs its hooks in its workspace.
func TestCommandRunsInOptionsDir(t *testing.T) {
	dir, ws := t.TempDir(), t.TempDir()
	r := FromYAML(strings.NewReader("hooks:\n  - event: onStart\n    action: {type: command, command: \"pwd > "+filepath.Join(dir, "pwd")+"\"}\n"), &Options{Dir: ws})
	if n := len(r.Hooks()); n != 1 {
		t.Fatalf("%d hooks loaded, want 1: %v", n, r.Diagnostics())
	}
	r.FireEvent(context.Background(), OnStart, nil)
	want, _ := filepath.EvalSymlinks(ws)
	if got := strings.TrimSpace(readFile(t, filepath.Join(dir, "pwd"))); got != want && got != ws {
		t.Errorf("pwd = %q, want %q", got, ws)
	}
}

// A non-zero exit is logged at WARN with up to 50 lines of output.
func TestCommandFailureIsLogged(t *testing.T) {
	recs := runAction(t, context.Background(), Command("for i in $(seq 1 60); do echo line $i; done; echo oops >&2; exit 3"), nil)
	w := warnings(recs)
	if len(w) != 1 || w[0].Msg != "hook command exited with status 3" || w[0].Attrs["logger"] != executorLoggerName {
		t.Fatalf("warnings = %+v", w)
	}
	lines := strings.Split(w[0].Attrs["output"], "\n")
	if len(lines) != 51 || lines[0] != "line 1" || lines[49] != "line 50" || lines[50] != "… 11 more lines" {
		t.Errorf("output has %d lines: first %q, last %q", len(lines), lines[0], lines[len(lines)-1])
	}
	if !strings.HasPrefix(w[0].Attrs["hook"], "command ") {
		t.Errorf("hook attribute %q does not name the hook", w[0].Attrs["hook"])
	}
	recs = runAction(t, context.Background(), Argv("/nonexistent/program"), nil)
	if w := warnings(recs); len(w) != 1 || w[0].Msg != "hook command failed to run" {
		t.Errorf("warnings = %+v", w)
	}
}

// A timeout kills the whole process group, including a background grandchild.
func TestCommandTimeoutKillsGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	// The timeout must come after the shell has started its grandchild and
	// written its PID, which on a loaded machine can take longer than
	// 300 ms: a timeout that came first is tried again ten times longer.
	for _, timeout := range []time.Duration{300 * time.Millisecond, 3 * time.Second, 30 * time.Second} {
		_ = os.Remove(pidFile)
		start := time.Now()
		recs := runAction(t, context.Background(), Command("sleep 60 & echo $! > "+pidFile+"; wait").withTimeout(timeout), nil)
		if el := time.Since(start); el > timeout+20*time.Second {
			t.Fatalf("Execute returned after %s", el)
		}
		w := warnings(recs)
		if len(w) != 1 || !strings.Contains(w[0].Msg, fmt.Sprintf("timed out after %s; its process group was killed", timeout)) {
			t.Fatalf("warnings = %+v", w)
		}
		if b, err := os.ReadFile(pidFile); err != nil || !strings.HasSuffix(string(b), "\n") {
			continue // killed before it had written the grandchild's PID
		}
		waitGone(t, pidFile)
		return
	}
	t.Fatal("the hook never wrote its grandchild's PID before its timeout")
}

// Cancelling the run's context kills a running hook process.
func TestCommandCanceled(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	start := time.Now()
	recs := runAction(t, ctx, Command("sleep 60 & echo $! > "+pidFile+"; wait"), nil)
	if el := time.Since(start); el > 20*time.Second {
		t.Fatalf("Execute returned after %s", el)
	}
	w := warnings(recs)
	if len(w) != 1 || !strings.Contains(w[0].Msg, "canceled with the run") {
		t.Fatalf("warnings = %+v", w)
	}
	waitGone(t, pidFile)
	// An already canceled context starts nothing.
	recs = runAction(t, ctx, Command("touch "+filepath.Join(dir, "late")), nil)
	if _, err := os.Stat(filepath.Join(dir, "late")); err == nil || len(warnings(recs)) != 1 {
		t.Errorf("a command started after cancellation; warnings %+v", warnings(recs))
	}
}

// Megabytes of output, and a hook that never reads a large stdin, finish.
func TestCommandLargeOutputAndUnreadStdin(t *testing.T) {
	big := map[string]any{"args": json.RawMessage(`{"data":"` + strings.Repeat("x", 4<<20) + `"}`)}
	recs := runAction(t, context.Background(), Command("head -c 8000000 /dev/zero | tr '\\0' 'y'; exit 1"), big)
	w := warnings(recs)
	if len(w) != 1 || w[0].Msg != "hook command exited with status 1" {
		t.Fatalf("warnings = %+v", w)
	}
	if o := w[0].Attrs["output"]; len(o) > outputLimit+200 || !strings.Contains(o, "more bytes not kept") {
		t.Errorf("output is %d bytes, want at most about %d with a note", len(o), outputLimit)
	}
	recs = runAction(t, context.Background(), Command("exit 0"), big)
	if w := warnings(recs); len(w) != 0 {
		t.Errorf("a command that ignores stdin: %+v", w)
	}
	recs = runAction(t, context.Background(), Command("true"), map[string]any{"error": "a\x00b", "args": strings.Repeat("z", envValueLimit+10)})
	if w := warnings(recs); len(w) != 0 {
		t.Errorf("NUL and long values: %+v", w)
	}
}

func TestEnviron(t *testing.T) {
	got := environ(map[string]any{"callId": "c", "latencyMs": int64(5), "runID": "r", "exit-code": 2, "a.b": true, "bad key": 1, "": 1, "x\x00": 1, "long": strings.Repeat("v", envValueLimit+1)})
	want := []string{"TOLLGATE_A_B=true", "TOLLGATE_CALL_ID=c", "TOLLGATE_EXIT_CODE=2", "TOLLGATE_LATENCY_MS=5", "TOLLGATE_LONG=" + strings.Repeat("v", envValueLimit), "TOLLGATE_RUN_ID=r"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("environ (-want +got):\n%s", d)
	}
}

func warnings(recs []logRec) []logRec {
	var out []logRec
	for _, r := range recs {
		if r.Level >= slog.LevelWarn {
			out = append(out, r)
		}
	}
	return out
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// waitGone waits until the process whose pid is in pidFile is gone (or a
// zombie waiting for a reaper), failing after 10 s.
func waitGone(t *testing.T, pidFile string) {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(readFile(t, pidFile)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			if f := strings.Fields(string(st)); len(f) > 2 && f[2] == "Z" {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	t.Fatalf("grandchild %d still runs", pid)
}

// A command gets the process's environment scrubbed to the allowlist, plus
// its context variables and what PassEnv names, and runs in a session of its
// own.
func TestCommandEnvironmentAndSession(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "ak-secret")
	t.Setenv("TOLLGATE_INTERNAL", "internal")
	t.Setenv("EXTRA_NAMED", "named")
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	script := `echo "key=$ANTHROPIC_API_KEY internal=$TOLLGATE_INTERNAL extra=$EXTRA_NAMED tool=$TOLLGATE_TOOL" > ` + out +
		`; echo "sid=$(cut -d' ' -f6 /proc/$$/stat) pid=$$" >> ` + out
	for _, tt := range []struct {
		pass []string
		want string
	}{
		{nil, "key= internal= extra= tool=bash"},
		{[]string{"EXTRA_NAMED", "ANTHROPIC_API_KEY"}, "key=ak-secret internal= extra=named tool=bash"},
	} {
		lg, _ := newRecLogger()
		r := Of([]Config{{Event: OnStop, Action: Command(script)}}, &Options{Logger: lg, PassEnv: tt.pass})
		r.FireEvent(context.Background(), OnStop, map[string]any{"tool": "bash"})
		lines := strings.Split(strings.TrimSpace(readFile(t, out)), "\n")
		if len(lines) != 2 || lines[0] != tt.want {
			t.Fatalf("PassEnv %q: got %q, want first line %q", tt.pass, lines, tt.want)
		}
		var sid, pid int
		if _, err := fmt.Sscanf(lines[1], "sid=%d pid=%d", &sid, &pid); err != nil || sid != pid {
			t.Errorf("the command does not lead its own session: %q", lines[1])
		}
	}
}

// With Options.Sandbox the command is handed over before it starts; the
// warning says what was killed as the sandbox reports it, and a sandbox error
// keeps the command from starting.
func TestCommandSandboxSeam(t *testing.T) {
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	for _, tt := range []struct {
		tree bool
		err  error
		want string
	}{
		{true, nil, "timed out after 3s; it and every process it started were killed"},
		{false, nil, "timed out after 3s; its process group was killed (processes that left it with setsid are not reached)"},
		{false, fmt.Errorf("no helper"), "hook command not started: sandbox"},
	} {
		os.Remove(ran)
		lg, h := newRecLogger()
		var wrapped int
		// 3 s: on a loaded machine the shell may need well over 200 ms to
		// run touch before the timeout ends it.
		r := Of([]Config{{Event: OnStop, Action: Command("touch " + ran + "; sleep 30").withTimeout(3 * time.Second)}}, &Options{Logger: lg,
			Sandbox: func(*exec.Cmd) (bool, error) { wrapped++; return tt.tree, tt.err }})
		r.FireEvent(context.Background(), OnStop, nil)
		w := warnings(h.records())
		if wrapped != 1 || len(w) != 1 || !strings.Contains(w[0].Msg, tt.want) {
			t.Errorf("wrapped %d times; warnings %+v, want %q", wrapped, w, tt.want)
		}
		if _, err := os.Stat(ran); (err == nil) != (tt.err == nil) {
			t.Errorf("sandbox error %v: the command ran = %v", tt.err, err == nil)
		}
	}
}

// A command killed by a signal is logged with the signal's name, not as
// "exited with status -1"; a shell's 128+N status names it too.
func TestCommandKilledBySignalIsNamed(t *testing.T) {
	for _, tc := range []struct{ cmd, want string }{
		{"kill -KILL $$", "hook command was killed by signal SIGKILL"},
		{"kill -TERM $$", "hook command was killed by signal SIGTERM"},
		{"sh -c 'kill -SEGV $$'", "hook command exited with status 139 (128+11: signal SIGSEGV)"},
	} {
		w := warnings(runAction(t, context.Background(), Command(tc.cmd), nil))
		if len(w) != 1 || w[0].Msg != tc.want {
			t.Errorf("%s: warnings = %+v, want %q", tc.cmd, w, tc.want)
		}
	}
}

// A command that failed in the sandbox with a refusal in its output gets
// the sandbox's note in its warning; one that ran unconfined does not.
func TestCommandRefusedInSandboxIsNamed(t *testing.T) {
	refused := Command("echo 'cannot create /x: Permission denied' >&2; exit 2")
	for _, sandboxed := range []bool{true, false} {
		lg, h := newRecLogger()
		opts := &Options{Logger: lg, SandboxNote: "the hooks sandbox (workspace) may have refused it"}
		if sandboxed {
			opts.Sandbox = func(*exec.Cmd) (bool, error) { return false, nil }
		}
		r := Of([]Config{{Event: OnStop, Action: refused}}, opts)
		r.FireEvent(context.Background(), OnStop, nil)
		w := warnings(h.records())
		want := "hook command exited with status 2"
		if sandboxed {
			want += " (the hooks sandbox (workspace) may have refused it)"
		}
		if len(w) != 1 || w[0].Msg != want {
			t.Errorf("sandboxed %v: warnings %+v, want %q", sandboxed, w, want)
		}
	}
}
