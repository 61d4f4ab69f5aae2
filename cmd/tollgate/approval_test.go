package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

func apWrite(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func apMain(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestPolicyCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := apWrite(t, dir, "good.yaml", "autonomy: supervised\nrules:\n  - id: no-rm\n    tool: bash\n    args:\n      command: {regex: 'rm\\s+-rf'}\n    decision: deny\n    reason: no\n")
	bad := apWrite(t, dir, "bad.yaml", "autonomy: yolo\nrules:\n  - id: x\n    tool: bash\n    decision: maybe\n")
	code, out, _ := apMain(t, "policy", "check", good)
	if code != 0 || !strings.Contains(out, good+": ok: 1 rule(s), 0 risk declaration(s), autonomy supervised") {
		t.Errorf("good: exit %d\n%s", code, out)
	}
	code, out, _ = apMain(t, "policy", "check", bad)
	want := []string{bad + `:1:11: error: unknown autonomy level "yolo"`, bad + `:5:15: error: unknown decision "maybe"`}
	if code != exitError {
		t.Errorf("bad: exit %d, want %d", code, exitError)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("bad: output lacks %q:\n%s", w, out)
		}
	}
}

func TestTerminalWait(t *testing.T) {
	t.Parallel()
	req := tool.Request{ID: "req_1", Kind: tool.KindApproval, Prompt: "Allow bash?"}
	for _, tt := range []struct {
		in   string
		want tool.Answer
	}{
		{"a\n", tool.Answer{ID: "req_1", OK: true}},
		{"?\nd\ntoo risky\n", tool.Answer{ID: "req_1", OK: false, Reason: "too risky"}},
		{"e\nnot json\ne\n{\"command\":\"ls\"}\n", tool.Answer{ID: "req_1", OK: true, Data: json.RawMessage(`{"command":"ls"}`), Reason: "edited the arguments"}},
	} {
		var w bytes.Buffer
		got, err := terminalWait(strings.NewReader(tt.in), &w, nil)(context.Background(), req)
		if err != nil {
			t.Fatalf("%q: %v", tt.in, err)
		}
		if who := got.Who(); who.Kind != tool.PrincipalPerson || who.Name == "" {
			t.Errorf("%q: answered by %+v, want the OS user as a person", tt.in, who)
		}
		got.Principal = tool.Principal{}
		if got.ID != tt.want.ID || got.OK != tt.want.OK || got.Reason != tt.want.Reason || string(got.Data) != string(tt.want.Data) {
			t.Errorf("%q: answer %+v, want %+v", tt.in, got, tt.want)
		}
		if !strings.Contains(w.String(), "Allow bash?") {
			t.Errorf("the prompt was not shown: %q", w.String())
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := terminalWait(blockingReader{}, &bytes.Buffer{}, nil)(ctx, req); err == nil {
		t.Error("a cancelled wait returned an answer")
	}
}

type blockingReader struct{}

func (blockingReader) Read([]byte) (int, error) { select {} }

// The approve-later flow end to end, with real processes: `tollgate run`
// halts on a policy's ask and stores the run (exit 3); `tollgate resume
// --wait` waits on the store and is killed with SIGKILL while it waits;
// another process approves; `tollgate resume` runs the call; the bash call
// that appends a line to a file ran exactly once, and a second resume
// changes nothing.
func TestApproveLaterEndToEnd(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	tg, runOut, lines := e.tg, e.runOut, e.lines
	dir := e.dir
	code, out := runOut(tg("run", "--model", "script:script.yaml", "--workdir", "ws", "--policy", "policy.yaml", "--state-dir", "state", "--records", "records.jsonl", "append a line"))
	if code != exitPending {
		t.Fatalf("run: exit %d, want %d\n%s", code, exitPending, out)
	}
	m := regexp.MustCompile(`stored run (run_[0-9a-f]+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("run did not print the stored run's id:\n%s", out)
	}
	runID := m[1]
	if lines() != 0 {
		t.Fatal("the gated call ran before approval")
	}

	// A resume that waits for the decision, killed while it waits.
	waiter := tg("resume", "--state-dir", "state", "--wait", "--poll", "50ms", runID)
	waiterErr, err := waiter.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := waiter.Start(); err != nil {
		t.Fatal(err)
	}
	// It says when it has taken the run up and waits; until then, and if
	// it ends instead, its stderr is read to the end.
	var said strings.Builder
	for sc := bufio.NewScanner(waiterErr); !strings.Contains(said.String(), "waiting for answers to run "+runID) && sc.Scan(); {
		said.WriteString(sc.Text() + "\n")
	}
	if !strings.Contains(said.String(), "waiting for answers to run "+runID) {
		_ = waiter.Wait()
		t.Fatalf("resume --wait did not wait:\n%s", said.String())
	}
	if err := waiter.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = waiter.Wait()
	if lines() != 0 {
		t.Fatal("the gated call ran while nobody had approved")
	}

	code, out = runOut(tg("approvals", "list", "--state-dir", "state"))
	m = regexp.MustCompile(`(?m)^(req_[0-9a-f]+)\s+` + runID + `\s+pending\s+bash`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("approvals list: exit %d\n%s", code, out)
	}
	reqID := m[1]
	code, out = runOut(tg("approvals", "approve", "--state-dir", "state", "--by", "alice", "--admin", reqID))
	if code != 0 || !strings.Contains(out, "approved "+reqID) || !strings.Contains(out, "(by person:alice; recorded by person:"+currentUser()+" with --admin)") {
		t.Fatalf("approvals approve: exit %d\n%s", code, out)
	}
	// The same answer again (a retry) is answered as the first.
	code, out = runOut(tg("approvals", "approve", "--state-dir", "state", "--by", "alice", "--admin", reqID))
	if code != 0 || !strings.Contains(out, "approved "+reqID) {
		t.Fatalf("approvals approve again: exit %d\n%s", code, out)
	}
	code, out = runOut(tg("approvals", "deny", "--state-dir", "state", "--reason", "late", reqID))
	if code != exitError || !strings.Contains(out, "already decided") {
		t.Fatalf("deciding twice: exit %d\n%s", code, out)
	}

	code, out = runOut(tg("resume", "--state-dir", "state", runID))
	if code != 0 || !strings.Contains(out, "appended") {
		t.Fatalf("resume: exit %d\n%s", code, out)
	}
	if n := lines(); n != 1 {
		t.Fatalf("the approved call ran %d times, want 1", n)
	}
	code, out = runOut(tg("resume", "--state-dir", "state", runID))
	if code != exitError || !strings.Contains(out, "has ended") {
		t.Fatalf("second resume: exit %d\n%s", code, out)
	}
	if n := lines(); n != 1 {
		t.Fatalf("after a second resume the call ran %d times, want 1", n)
	}
	// show and list --json name who decided and the administrator who acted.
	alice := tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}
	admin := tool.Principal{Kind: tool.PrincipalPerson, Name: currentUser()}
	code, out = runOut(tg("approvals", "show", "--json", "--state-dir", "state", reqID))
	var shown store.Approval
	if code != 0 || json.Unmarshal([]byte(out), &shown) != nil || shown.Status != store.StatusUsed || shown.DecidedBy != alice || shown.Actor != admin {
		t.Fatalf("approvals show: exit %d, %+v\n%s", code, shown, out)
	}
	code, out = runOut(tg("approvals", "list", "--state-dir", "state", "--status", "all", "--json"))
	var listed []store.Approval
	if code != 0 || json.Unmarshal([]byte(out), &listed) != nil || len(listed) != 1 || listed[0].DecidedBy != alice || listed[0].Actor != admin {
		t.Fatalf("approvals list --json: exit %d, %+v\n%s", code, listed, out)
	}
	rec, err := os.ReadFile(filepath.Join(dir, "records.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rec), `"outcome":"approved","by":{"kind":"person","name":"alice"},"actor":{"kind":"person","name":"`+currentUser()+`"}`) || strings.Contains(string(rec), "echo ran") {
		t.Errorf("records.jsonl:\n%s", rec)
	}
}

// e2e is a built tollgate binary with a workspace, a script whose one call
// (bash, gated by a policy that asks) appends a line to count.txt, and helpers
// to run it as separate processes.
type e2e struct {
	t        *testing.T
	dir, bin string
	ws       string
}

func newE2E(t *testing.T) *e2e {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal("the bash builtin needs bash on PATH")
	}
	dir := t.TempDir()
	e := &e2e{t: t, dir: dir, bin: tollgateBinary(t), ws: filepath.Join(dir, "ws")}
	if err := os.Mkdir(e.ws, 0o700); err != nil {
		t.Fatal(err)
	}
	apWrite(t, dir, "script.yaml", `turns:
  - toolCalls:
      - name: bash
        id: append
        args: {command: "echo ran >> count.txt"}
  - text: "appended"
`)
	apWrite(t, dir, "policy.yaml", `rules:
  - id: ask-bash
    tool: bash
    decision: ask
    reason: shell commands need a person
`)
	return e
}

// tg is the command tollgate args..., in the test's directory, with no terminal.
func (e *e2e) tg(args ...string) *exec.Cmd {
	c := exec.Command(e.bin, args...)
	c.Dir = e.dir
	c.Stdin = nil // /dev/null: not a terminal
	return c
}

// runOut runs c and returns its exit code and combined output.
func (e *e2e) runOut(c *exec.Cmd) (int, string) {
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	return code, out.String()
}

// lines counts how often the gated call ran.
func (e *e2e) lines() int {
	b, err := os.ReadFile(filepath.Join(e.ws, "count.txt"))
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return strings.Count(string(b), "ran\n")
}

// pendingRequest returns the run and request IDs of the pending request of
// tool in the store, which the run has stored by now (it exited, or
// [e2e.startWaiting] saw it wait): one `approvals list`, no polling.
func (e *e2e) pendingRequest(tool string) (runID, reqID string) {
	re := regexp.MustCompile(`(?m)^(req_[0-9a-f]+)\s+(run_[0-9a-f]+)\s+pending\s+` + tool)
	code, out := e.runOut(e.tg("approvals", "list", "--state-dir", "state"))
	m := re.FindStringSubmatch(out)
	if code != 0 || m == nil {
		e.t.Fatalf("no pending request of %s in the store: exit %d\n%s", tool, code, out)
	}
	return m[2], m[1]
}

// startWaiting starts run, a `tollgate run --approve wait`, and returns once
// its output says it waits for answers: it has stored its requests then. It
// reads the output as it comes, so nothing polls; a run that ends without
// waiting fails the test. The returned output gives the run's whole output,
// once it has ended (call it after run.Wait).
func (e *e2e) startWaiting(run *exec.Cmd) (output func() string) {
	e.t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		e.t.Fatal(err)
	}
	run.Stdout, run.Stderr = pw, pw
	err = run.Start()
	pw.Close() // the run holds its own copy
	if err != nil {
		pr.Close()
		e.t.Fatal(err)
	}
	var buf bytes.Buffer
	waiting, done := make(chan bool, 1), make(chan struct{})
	go func() {
		defer close(done)
		defer pr.Close()
		r, seen := bufio.NewReader(pr), false
		for {
			line, err := r.ReadString('\n')
			buf.WriteString(line)
			if !seen && strings.HasPrefix(line, "tollgate: waiting for answers to run ") {
				seen = true
				waiting <- true
			}
			if err != nil {
				break
			}
		}
		if !seen {
			waiting <- false
		}
	}()
	if !<-waiting {
		<-done
		e.t.Fatalf("the run ended without waiting for answers:\n%s", buf.String())
	}
	return func() string {
		<-done
		return buf.String()
	}
}

// The durable-approval scenario: `tollgate run --approve wait` stores the halted run,
// then waits; it is killed with SIGKILL while it waits; another process
// approves; `tollgate resume` runs the call exactly once.
func TestRunWaitKilledThenResumedEndToEnd(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	run := e.tg("run", "--model", "script:script.yaml", "--workdir", "ws", "--policy", "policy.yaml", "--state-dir", "state", "--approve", "wait", "append a line")
	rout := e.startWaiting(run)
	runID, reqID := e.pendingRequest("bash")
	if err := run.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = run.Wait()
	if !strings.Contains(rout(), "waiting for answers to run "+runID) {
		t.Fatalf("run was not waiting when killed:\n%s", rout())
	}
	if e.lines() != 0 {
		t.Fatal("the gated call ran before approval")
	}
	if code, out := e.runOut(e.tg("approvals", "approve", "--state-dir", "state", reqID)); code != 0 {
		t.Fatalf("approve: exit %d\n%s", code, out)
	}
	code, out := e.runOut(e.tg("resume", "--state-dir", "state", runID))
	if code != 0 || !strings.Contains(out, "appended") {
		t.Fatalf("resume: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, `"echo ran >> count.txt"`) {
		t.Errorf("the stored arguments are not shown as written:\n%s", out)
	}
	if n := e.lines(); n != 1 {
		t.Fatalf("the approved call ran %d times, want 1", n)
	}
}

// Not interrupted, `tollgate run --approve wait` goes on by itself once
// another process answers, and exits 0 with the call run once.
func TestRunWaitGoesOnAfterApprovalEndToEnd(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	run := e.tg("run", "--model", "script:script.yaml", "--workdir", "ws", "--policy", "policy.yaml", "--state-dir", "state", "--approve", "wait", "append a line")
	rout := e.startWaiting(run)
	runID, reqID := e.pendingRequest("bash")
	code, out := e.runOut(e.tg("approvals", "approve", "--state-dir", "state", reqID))
	if code != 0 {
		t.Fatalf("approve: exit %d\n%s", code, out)
	}
	// The person is told that the waiting run goes on, not to resume it.
	if want := "; the 'tollgate run --approve wait' that waits for it goes on by itself once every request is answered (if it was stopped: tollgate resume --state-dir state " + runID + ")"; !strings.Contains(out, want) {
		t.Errorf("approve said\n%s\nwant\n%s", out, want)
	}
	err := run.Wait()
	if err != nil || !strings.Contains(rout(), "appended") {
		t.Fatalf("run: %v\n%s", err, rout())
	}
	if n := e.lines(); n != 1 {
		t.Fatalf("the approved call ran %d times, want 1", n)
	}
}

// `tollgate resume` started from another directory runs the run where it
// was started: the stored configuration holds the paths as resolved then
// (the workspace, the script, the policy), not the flags as typed.
func TestResumeFromAnotherDirectoryEndToEnd(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	state := filepath.Join(e.dir, "state")
	// A command hook writes where it runs: the recorded workspace.
	apWrite(t, e.dir, "hooks.yaml", "hooks:\n  - event: postToolUse\n    matcher: bash\n    action: {type: command, command: \"pwd >> hookdir.txt\"}\n")
	code, out := e.runOut(e.tg("run", "--model", "script:script.yaml", "--workdir", "ws", "--policy", "policy.yaml", "--hooks", "hooks.yaml", "--state-dir", state, "x"))
	if code != exitPending {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	runID, reqID := e.pendingRequest("bash")
	if code, out := e.runOut(e.tg("approvals", "approve", "--state-dir", state, reqID)); code != 0 {
		t.Fatalf("approve: exit %d\n%s", code, out)
	}
	// Elsewhere: a directory with its own ws, script.yaml and policy.yaml
	// that a re-resolved relative path would pick up.
	other := t.TempDir()
	os.Mkdir(filepath.Join(other, "ws"), 0o700)
	apWrite(t, other, "script.yaml", "turns:\n  - toolCalls: [{name: bash, args: {command: \"echo wrong >> count.txt\"}}]\n  - text: wrong script\n")
	apWrite(t, other, "policy.yaml", "rules: []\n")
	res := e.tg("resume", "--state-dir", state, runID)
	res.Dir = other
	code, out = e.runOut(res)
	if code != 0 || !strings.Contains(out, "appended") {
		t.Fatalf("resume from %s: exit %d\n%s", other, code, out)
	}
	if n := e.lines(); n != 1 {
		t.Fatalf("the approved call ran %d times in the recorded workspace, want 1", n)
	}
	for _, p := range []string{filepath.Join(other, "count.txt"), filepath.Join(other, "ws", "count.txt"), filepath.Join(other, "hookdir.txt"), filepath.Join(other, "ws", "hookdir.txt")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("the call or its hook wrote %s, outside the recorded workspace", p)
		}
	}
	b, err := os.ReadFile(filepath.Join(e.ws, "hookdir.txt"))
	if err != nil {
		t.Fatalf("the command hook did not run in the recorded workspace: %v", err)
	}
	if got := strings.TrimSpace(string(b)); got != e.ws {
		if real, _ := filepath.EvalSymlinks(e.ws); got != real {
			t.Errorf("the command hook ran in %q, want %q", got, e.ws)
		}
	}
}

// A resume killed with SIGKILL after one of two allowed calls of a turn
// finished (the other still running) is taken over by the next 'tollgate
// resume' once its lease expired, with no manual step: the finished call is
// not run again (counted by the call itself), the unfinished one is.
func TestTakeoverAfterKilledResumeEndToEnd(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	apWrite(t, e.dir, "script.yaml", `turns:
  - toolCalls:
      - {name: bash, id: gate, args: {command: "echo gate >> gate.txt"}}
  - toolCalls:
      - {name: bash, id: fast, args: {command: "echo fast >> fast.txt"}}
      - {name: bash, id: slow, args: {command: "if [ ! -f started.txt ]; then echo $$ >> started.txt; sleep 30; fi; echo slow >> slow.txt"}}
  - text: "finished"
`)
	apWrite(t, e.dir, "policy.yaml", `rules:
  - id: ask-gate
    tool: bash
    args: {command: {regex: gate}}
    decision: ask
`)
	count := func(name string) int {
		b, _ := os.ReadFile(filepath.Join(e.ws, name))
		return strings.Count(string(b), "\n")
	}
	code, out := e.runOut(e.tg("run", "--model", "script:script.yaml", "--workdir", "ws", "--policy", "policy.yaml", "--state-dir", "state", "x"))
	if code != exitPending {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	runID, reqID := e.pendingRequest("bash")
	if code, out := e.runOut(e.tg("approvals", "approve", "--state-dir", "state", reqID)); code != 0 {
		t.Fatalf("approve: exit %d\n%s", code, out)
	}
	res := e.tg("resume", "--state-dir", "state", runID)
	res.Env = append(os.Environ(), envLeaseTTL+"=2s")
	var rout bytes.Buffer
	res.Stdout, res.Stderr = &rout, &rout
	if err := res.Start(); err != nil {
		t.Fatal(err)
	}
	started := filepath.Join(e.ws, "started.txt")
	for deadline := time.Now().Add(60 * time.Second); count("fast.txt") == 0 || count("started.txt") == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			res.Process.Kill()
			t.Fatalf("the turn's calls never ran:\n%s", rout.String())
		}
	}
	// The fast call's result is checkpointed right after it finishes; give
	// the checkpoint its moment by waiting for the store to show it.
	waitFor(t, func() bool {
		code, out := e.runOut(e.tg("runs", "show", "--json", "--state-dir", "state", runID))
		return code == 0 && strings.Contains(out, `"fast"`)
	})
	res.Process.Signal(syscall.SIGKILL)
	res.Wait()
	// A process killed with SIGKILL cannot clean up: end the orphaned call's
	// process group (the bash builtin leads its own group) ourselves.
	// (Sandboxed, the call ran in a PID namespace that died with the resume,
	// and $$ is a PID of that namespace: there is nothing to kill.)
	if b, err := os.ReadFile(started); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 2 && !sandboxedHere(t) {
			syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
	if count("gate.txt") != 1 || count("fast.txt") != 1 || count("slow.txt") != 0 {
		t.Fatalf("before the takeover: gate %d, fast %d, slow %d; want 1, 1, 0", count("gate.txt"), count("fast.txt"), count("slow.txt"))
	}
	// While the dead resume's lease lasts, the run is refused; then taken over.
	var tookOver bool
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		c := e.tg("resume", "--state-dir", "state", runID)
		c.Env = append(os.Environ(), envLeaseTTL+"=2s")
		code, out = e.runOut(c)
		if code == exitError && strings.Contains(out, "another process is driving this run") {
			continue
		}
		if code != 0 || !strings.Contains(out, "finished") {
			t.Fatalf("takeover: exit %d\n%s", code, out)
		}
		tookOver = true
		break
	}
	if !tookOver {
		t.Fatal("the run was never taken over")
	}
	if g, f, s := count("gate.txt"), count("fast.txt"), count("slow.txt"); g != 1 || f != 1 || s != 1 {
		t.Fatalf("after the takeover: gate ran %d, fast %d, slow %d times; want 1, 1, 1", g, f, s)
	}
}

// Two resumes of one run started at once: one runs it, the other is refused
// (exit 1), and the approved call runs once.
func TestConcurrentResumesOneWinsEndToEnd(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	apWrite(t, e.dir, "script.yaml", `turns:
  - toolCalls:
      - {name: bash, id: append, args: {command: "echo ran >> count.txt; sleep 2"}}
  - text: "appended"
`)
	code, out := e.runOut(e.tg("run", "--model", "script:script.yaml", "--workdir", "ws", "--policy", "policy.yaml", "--state-dir", "state", "x"))
	if code != exitPending {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	runID, reqID := e.pendingRequest("bash")
	if code, out := e.runOut(e.tg("approvals", "approve", "--state-dir", "state", reqID)); code != 0 {
		t.Fatalf("approve: exit %d\n%s", code, out)
	}
	type result struct {
		code int
		out  string
	}
	results := make(chan result, 2)
	for range 2 {
		go func() {
			c := e.tg("resume", "--state-dir", "state", runID)
			var b bytes.Buffer
			c.Stdout, c.Stderr = &b, &b
			err := c.Run()
			results <- result{c.ProcessState.ExitCode(), b.String() + fmt.Sprint(err)}
		}()
	}
	r1, r2 := <-results, <-results
	if (r1.code == 0) == (r2.code == 0) || r1.code+r2.code != exitError {
		t.Fatalf("want one resume to win and the other to exit 1; got %d and %d\n%s\n%s", r1.code, r2.code, r1.out, r2.out)
	}
	if n := e.lines(); n != 1 {
		t.Fatalf("the approved call ran %d times, want 1", n)
	}
}

// waitFor polls cond (a store read by another process) until it holds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
	}
}

// --approve wait with --approval-ttl: when nobody answers in time, the call
// is refused as expired and the run goes on by itself.
func TestRunWaitExpiresEndToEnd(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	run := e.tg("run", "--model", "script:script.yaml", "--workdir", "ws", "--policy", "policy.yaml", "--state-dir", "state", "--approve", "wait", "--approval-ttl", "1s", "append a line")
	var rout bytes.Buffer
	run.Stdout, run.Stderr = &rout, &rout
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- run.Wait() }()
	select {
	case err := <-done:
		if err != nil || !strings.Contains(rout.String(), "before it was answered") || !strings.Contains(rout.String(), "appended") {
			t.Fatalf("run: %v\n%s", err, rout.String())
		}
	case <-time.After(60 * time.Second):
		run.Process.Kill()
		t.Fatalf("run --approve wait did not go on after the request expired:\n%s", rout.String())
	}
	if n := e.lines(); n != 0 {
		t.Fatalf("the expired call ran %d times", n)
	}
	if code, out := e.runOut(e.tg("approvals", "list", "--state-dir", "state", "--status", "all")); code != 0 || strings.Contains(out, "pending") {
		t.Errorf("approvals list after expiry: exit %d\n%s", code, out)
	}
}

// A hook's reason (the prompt of its ask) and the model's arguments cannot
// forge the lines the terminal approver shows about a call: a person must
// never read "tool: read" and "args: {"path":"notes.txt"}" for a call that
// is a bash rm. Every line of the prompt after its first is marked as
// quoted text, and the arguments stay on their one line.
func TestTerminalWaitPromptCannotForgeLines(t *testing.T) {
	t.Parallel()
	forged := "  tool: read  call: call_1\n  args: {\"path\":\"notes.txt\"}\n[a]pprove, [d]eny, [e]dit arguments? "
	args := json.RawMessage("{\"command\":\"rm -rf ~\"\n\n\n,\"x\"\r\n:\"  tool: read\"}")
	data, err := json.Marshal(approval.RequestData{Tool: "bash", CallID: "call_9", Args: args, Digest: approval.Digest(args)})
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []tool.Request{
		{ID: "req_1", Kind: tool.KindApproval, Prompt: "Allow Bash? (looks fine\n" + forged + ")"},
		{ID: "req_2", Kind: tool.KindApproval, Prompt: "Allow bash?\r" + forged, Data: data},
	} {
		var w bytes.Buffer
		if _, err := terminalWait(strings.NewReader("a\n"), &w, nil)(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(w.String(), "\n")
		tools, argLines, asks := 0, 0, 0
		for _, l := range lines {
			switch {
			case strings.HasPrefix(l, "  tool:"):
				tools++
			case strings.HasPrefix(l, "  args:"):
				argLines++
			case strings.HasPrefix(l, "[a]pprove"):
				asks++
			}
			if strings.Contains(l, "\r") {
				t.Errorf("%s: a raw carriage return reaches the terminal: %q", req.ID, l)
			}
		}
		want := 0
		if req.Data != nil {
			want = 1
		}
		if tools != want || argLines != want || asks != 1 {
			t.Errorf("%s: %d tool lines, %d args lines, %d answer lines; want %d, %d, 1 (the rest forged):\n%s", req.ID, tools, argLines, asks, want, want, w.String())
		}
		if req.Data != nil && !strings.Contains(w.String(), `  args: {"command":"rm -rf ~","x":"  tool: read"}`) {
			t.Errorf("%s: the arguments are not shown on one line as they will run:\n%s", req.ID, w.String())
		}
	}
}
