package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

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
		got, err := terminalWait(strings.NewReader(tt.in), &w)(context.Background(), req)
		if err != nil {
			t.Fatalf("%q: %v", tt.in, err)
		}
		got.By = ""
		if got.ID != tt.want.ID || got.OK != tt.want.OK || got.Reason != tt.want.Reason || string(got.Data) != string(tt.want.Data) {
			t.Errorf("%q: answer %+v, want %+v", tt.in, got, tt.want)
		}
		if !strings.Contains(w.String(), "Allow bash?") {
			t.Errorf("the prompt was not shown: %q", w.String())
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := terminalWait(blockingReader{}, &bytes.Buffer{})(ctx, req); err == nil {
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
	var wout bytes.Buffer
	waiter.Stdout, waiter.Stderr = &wout, &wout
	if err := waiter.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(700 * time.Millisecond)
	if waiter.ProcessState != nil {
		t.Fatalf("resume --wait did not wait:\n%s", wout.String())
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
	if code != 0 || !strings.Contains(out, "approved "+reqID) {
		t.Fatalf("approvals approve: exit %d\n%s", code, out)
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
	if code != exitError || !strings.Contains(out, "not pending") {
		t.Fatalf("second resume: exit %d\n%s", code, out)
	}
	if n := lines(); n != 1 {
		t.Fatalf("after a second resume the call ran %d times, want 1", n)
	}
	code, out = runOut(tg("approvals", "show", "--state-dir", "state", reqID))
	if code != 0 || !strings.Contains(out, `"status": "used"`) || !strings.Contains(out, `"decidedBy": "alice (by `+currentUser()+` with --admin)"`) {
		t.Fatalf("approvals show: exit %d\n%s", code, out)
	}
	rec, err := os.ReadFile(filepath.Join(dir, "records.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rec), `"outcome":"approved","by":"person:alice (by `) || strings.Contains(string(rec), "echo ran") {
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

// pendingRequest polls the store until a pending request of tool exists and
// returns its run and request IDs.
func (e *e2e) pendingRequest(tool string) (runID, reqID string) {
	re := regexp.MustCompile(`(?m)^(req_[0-9a-f]+)\s+(run_[0-9a-f]+)\s+pending\s+` + tool)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		code, out := e.runOut(e.tg("approvals", "list", "--state-dir", "state"))
		if m := re.FindStringSubmatch(out); code == 0 && m != nil {
			return m[2], m[1]
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.t.Fatal("no pending request appeared in the store")
	return "", ""
}

// The durable-approval scenario: `tollgate run --approve wait` stores the halted run,
// then waits; it is killed with SIGKILL while it waits; another process
// approves; `tollgate resume` runs the call exactly once.
func TestRunWaitKilledThenResumedEndToEnd(t *testing.T) {
	e := newE2E(t)
	run := e.tg("run", "--model", "script:script.yaml", "--workdir", "ws", "--policy", "policy.yaml", "--state-dir", "state", "--approve", "wait", "append a line")
	var rout bytes.Buffer
	run.Stdout, run.Stderr = &rout, &rout
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	runID, reqID := e.pendingRequest("bash")
	if err := run.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = run.Wait()
	if !strings.Contains(rout.String(), "waiting for answers to run "+runID) {
		t.Fatalf("run was not waiting when killed:\n%s", rout.String())
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
	e := newE2E(t)
	run := e.tg("run", "--model", "script:script.yaml", "--workdir", "ws", "--policy", "policy.yaml", "--state-dir", "state", "--approve", "wait", "append a line")
	var rout bytes.Buffer
	run.Stdout, run.Stderr = &rout, &rout
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	_, reqID := e.pendingRequest("bash")
	if code, out := e.runOut(e.tg("approvals", "approve", "--state-dir", "state", reqID)); code != 0 {
		t.Fatalf("approve: exit %d\n%s", code, out)
	}
	err := run.Wait()
	if err != nil || !strings.Contains(rout.String(), "appended") {
		t.Fatalf("run: %v\n%s", err, rout.String())
	}
	if n := e.lines(); n != 1 {
		t.Fatalf("the approved call ran %d times, want 1", n)
	}
}

// A resume killed while the approved call runs leaves the run "resuming";
// a plain resume refuses it and names --reclaim; --reclaim takes it up and
// the call whose approval was used is not run a second time.
func TestReclaimAfterKilledResumeEndToEnd(t *testing.T) {
	e := newE2E(t)
	apWrite(t, e.dir, "script.yaml", `turns:
  - toolCalls:
      - name: bash
        id: append
        args: {command: "echo $$ >> started.txt; sleep 30; echo ran >> count.txt"}
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
	res := e.tg("resume", "--state-dir", "state", runID)
	if err := res.Start(); err != nil {
		t.Fatal(err)
	}
	started := filepath.Join(e.ws, "started.txt")
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the approved call never started")
		}
	}
	res.Process.Signal(syscall.SIGKILL)
	res.Wait()
	// A process killed with SIGKILL cannot clean up: end the orphaned call's
	// process group (the bash builtin leads its own group) ourselves.
	// (Sandboxed, the call ran in a PID namespace that died with the resume,
	// and $$ is a PID of that namespace: there is nothing to kill, and the
	// number must not be used here.)
	if b, err := os.ReadFile(started); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 2 && !sandboxedHere(t) {
			syscall.Kill(-pid, syscall.SIGKILL)
		}
	}

	code, out = e.runOut(e.tg("resume", "--state-dir", "state", runID))
	if code != exitError || !strings.Contains(out, "--reclaim") {
		t.Fatalf("resume of a run left resuming: exit %d\n%s", code, out)
	}
	code, out = e.runOut(e.tg("resume", "--state-dir", "state", "--reclaim", runID))
	if code != 0 || !strings.Contains(out, "not run again") || !strings.Contains(out, "appended") {
		t.Fatalf("resume --reclaim: exit %d\n%s", code, out)
	}
	if b, _ := os.ReadFile(started); len(strings.Fields(string(b))) != 1 {
		t.Fatalf("the approved call started %d times, want 1", len(strings.Fields(string(b))))
	}
}

// --approve wait with --approval-ttl: when nobody answers in time, the call
// is refused as expired and the run goes on by itself.
func TestRunWaitExpiresEndToEnd(t *testing.T) {
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
