package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/tollgate-dev/tollgate/sandbox"
)

// binary is the tollgate command built once for the package's end-to-end
// tests (tollgateBinary), in binDir, removed by TestMain.
var binary struct {
	once sync.Once
	env  []string // go build's environment: the process's before any test changed it
	dir  string
	path string
	err  error
}

// parallelTests is how many parallel tests of this package run at once
// unless -parallel says otherwise: they mostly wait on the processes they
// start (tollgate, Claude Code, Codex, MCP servers, a browser), so running
// GOMAXPROCS of them at a time (go test's default) left the cores idle
// (113 s on two cores, 47 s of it CPU; 67 s at six).
const parallelTests = 6

// waitingParallel sets -test.parallel to parallelTests when the command
// line did not set it.
func waitingParallel() {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(max(parallelTests, runtime.GOMAXPROCS(0))))
	}
}

// The test binary is the sandbox helper of the commands that the in-process
// runs (Main) start: started as one, it runs sandbox.Main and never reaches
// the tests. Started as an MCP test server, it serves (mcpTestServer), after
// sandbox.Main, so that a sandboxed server is confined like any other.
func TestMain(m *testing.M) {
	sandbox.Main()
	mcpTestServer()
	// No test may touch the user's state directory: the default one is a
	// fresh directory, for this process and the binaries it starts.
	state, err := os.MkdirTemp("", "tollgate-state-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv(envStateDir, state)
	binary.env = os.Environ()
	// When every test runs, the end-to-end tests' binary builds while the
	// first tests run, rather than in the first test that needs it.
	flag.Parse()
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() == "" {
		go binary.once.Do(buildBinary)
	}
	waitingParallel()
	code := m.Run()
	binary.once.Do(func() {}) // waits for a build under way
	chrome.Close()
	os.RemoveAll(state)
	if binary.dir != "" {
		os.RemoveAll(binary.dir)
	}
	os.Exit(code)
}

// buildBinary builds the command into binary.dir, once (binary.once).
func buildBinary() {
	binary.dir, binary.err = os.MkdirTemp("", "tollgate-e2e-")
	if binary.err != nil {
		return
	}
	binary.path = filepath.Join(binary.dir, "tollgate")
	build := exec.Command("go", "build", "-o", binary.path, ".")
	build.Env = binary.env // a test's Setenv (HOME) must not move the build cache
	if out, err := build.CombinedOutput(); err != nil {
		binary.err = fmt.Errorf("go build: %v\n%s", err, out)
	}
}

// tollgateBinary returns the path of the command built once for the
// package, waiting for the build TestMain started.
func tollgateBinary(t testing.TB) string {
	t.Helper()
	binary.once.Do(buildBinary)
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}

// sandboxedHere reports whether bash runs sandboxed with namespaces here
// (`tollgate run` confines it by default).
func sandboxedHere(t *testing.T) bool {
	t.Helper()
	sb, err := sandbox.New(nil)
	return err == nil && sb.Status().Namespaces
}

// killedNote is what bash says it killed at a timeout under `tollgate run`'s
// default sandbox on this machine.
func killedNote(t *testing.T) string {
	if sandboxedHere(t) {
		return "the command and every process it started were killed"
	}
	return "the process group was killed"
}

// needSandbox skips, saying why, where the kernel offers no Landlock.
func needSandbox(t *testing.T) {
	t.Helper()
	sb, err := sandbox.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if st := sb.Status(); st.ABI == 0 || !st.Namespaces {
		t.Skipf("the sandbox is incomplete on this machine (%s)", st)
	}
}

// A sandboxed tool cannot approve its own gated call: an allowed bash call
// of a second run runs `tollgate approvals approve` and `tollgate resume` on
// the first run's pending request. The store's decision key is hidden from
// it (and the store read-only), so the request stays pending and the gated call never runs. Unsandboxed, the same call approves, but only as the
// OS user running it, never as a name it chose.
func TestToolCannotApproveItself(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	bin := tollgateBinary(t)
	ws := t.TempDir()
	state := t.TempDir()
	apWrite(t, ws, "gated.yaml", "turns:\n  - toolCalls:\n      - {name: bash, id: gated, args: {command: \"echo ran >> count.txt\"}}\n  - text: done\n")
	apWrite(t, ws, "policy.yaml", "rules:\n  - id: ask-count\n    tool: bash\n    args: {command: {regex: count}}\n    decision: ask\n    reason: needs a person\n")
	tg := func(args ...string) (int, string) {
		c := exec.Command(bin, args...)
		c.Dir = ws
		c.Env = append(os.Environ(), envStateDir+"="+state)
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		err := c.Run()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatal(err)
		}
		return c.ProcessState.ExitCode(), out.String()
	}
	code, out := tg("run", "--model", "script:gated.yaml", "--policy", "policy.yaml", "append")
	if code != exitPending {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	m := regexp.MustCompile(`approvals approve (req_[0-9a-f]+)`).FindStringSubmatch(out)
	r := regexp.MustCompile(`stored run (run_[0-9a-f]+)`).FindStringSubmatch(out)
	if m == nil || r == nil {
		t.Fatalf("no request or run in:\n%s", out)
	}
	// Commands get a scrubbed environment: the attack names the store.
	attack := fmt.Sprintf(`%s approvals approve --state-dir %s %s; echo "approve=$?"; %s resume --state-dir %s %s; echo "resume=$?"`, bin, state, m[1], bin, state, r[1])
	apWrite(t, ws, "attack.yaml", fmt.Sprintf("turns:\n  - toolCalls:\n      - {name: bash, id: attack, args: {command: %q}}\n  - text: done\n", attack))
	// The helper must be able to run the binary: allow reading it, so that
	// only the store stands in the way.
	code, out = tg("run", "--model", "script:attack.yaml", "--sandbox-read", filepath.Dir(bin), "--sandbox-read", state, "attack")
	if code != 0 || !strings.Contains(out, "approve=2") || !strings.Contains(out, "decision key") {
		t.Fatalf("sandboxed attack: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(ws, "count.txt")); err == nil {
		t.Fatalf("the gated call ran:\n%s", out)
	}
	code, out = tg("approvals", "list")
	if code != 0 || !regexp.MustCompile(m[1]+`\s+`+r[1]+`\s+pending`).MatchString(out) {
		t.Fatalf("the request is no longer pending: exit %d\n%s", code, out)
	}

	// Unsandboxed, the tool can approve, as the OS user only; --by is refused.
	forged := fmt.Sprintf(`%s approvals approve --state-dir %s --by security-team %s; echo "forged=$?"; %s approvals approve --state-dir %s %s; echo "approve=$?"`, bin, state, m[1], bin, state, m[1])
	apWrite(t, ws, "attack.yaml", fmt.Sprintf("turns:\n  - toolCalls:\n      - {name: bash, id: attack, args: {command: %q}}\n  - text: done\n", forged))
	code, out = tg("run", "--model", "script:attack.yaml", "--sandbox", "off", "attack")
	if code != 0 || !strings.Contains(out, "forged=2") {
		t.Fatalf("unsandboxed: exit %d\n%s", code, out)
	}
	code, out = tg("approvals", "show", "--json", m[1])
	if code != 0 || !strings.Contains(out, `"decidedBy": {
    "kind": "person",
    "name": "`+currentUser()+`"
  },`) || strings.Contains(out, `"actor"`) {
		t.Fatalf("approvals show: exit %d\n%s", code, out)
	}
}

// Self-approval: an allowed bash call starts a detached helper
// (setsid) that waits for the run's request, approves it and resumes the
// run. Sandboxed, the helper dies with the bash call (PID namespace): once
// the run has halted, no such process is left and the request is pending.
func TestSetsidHelperCannotApproveLater(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	bin := tollgateBinary(t)
	ws := t.TempDir()
	// The helper script (which the model would write with a first call).
	marker := fmt.Sprintf("tollgate-e2e-%d.sh", os.Getpid())
	apWrite(t, ws, marker, fmt.Sprintf(`until %s approvals list | grep -q pending; do sleep 0.05; done
id=$(%s approvals list | awk '/pending/{print $1}')
run=$(%s approvals list | awk '/pending/{print $2}')
%s approvals approve $id && %s resume $run
`, bin, bin, bin, bin, bin))
	start := "setsid sh " + marker + " </dev/null >/dev/null 2>&1 & echo started"
	apWrite(t, ws, "script.yaml", fmt.Sprintf(`turns:
  - toolCalls:
      - {name: bash, id: start, args: {command: %q}}
  - toolCalls:
      - {name: bash, id: gated, args: {command: "echo ran >> count.txt"}}
  - text: done
`, start))
	apWrite(t, ws, "policy.yaml", "rules:\n  - id: ask-count\n    tool: bash\n    args: {command: {regex: count}}\n    decision: ask\n    reason: needs a person\n")
	c := exec.Command(bin, "run", "--model", "script:script.yaml", "--policy", "policy.yaml", "--sandbox-read", filepath.Dir(bin), "go")
	c.Dir = ws
	out, _ := c.CombinedOutput()
	if c.ProcessState.ExitCode() != exitPending || !strings.Contains(string(out), "started") {
		t.Fatalf("run: exit %d\n%s", c.ProcessState.ExitCode(), out)
	}
	if pids := processesWith(t, marker); len(pids) > 0 {
		for _, p := range pids {
			_ = killProcess(p)
		}
		t.Fatalf("the setsid helper outlived the bash call (pids %v):\n%s", pids, out)
	}
	// Checked after the processes: a helper that has ended had approved first.
	list := exec.Command(bin, "approvals", "list", "--status", "all")
	list.Dir = ws
	lout, err := list.CombinedOutput()
	if err != nil || !regexp.MustCompile(`(?m)^req_[0-9a-f]+\s+run_[0-9a-f]+\s+pending\s+bash`).Match(lout) {
		t.Fatalf("the request is no longer pending: %v\n%s", err, lout)
	}
	if _, err := os.Stat(filepath.Join(ws, "count.txt")); err == nil {
		t.Fatal("the gated call ran")
	}
}

// A provider key in tollgate's environment does not reach bash, so it is not
// in the output, the stored run or the records.
func TestKeysDoNotReachTools(t *testing.T) {
	const key = "sk-e2e-secret-0123456789"
	t.Setenv("OPENAI_API_KEY", key)
	t.Setenv("TOLLGATE_SECRET_INTERNAL", key)
	ws := t.TempDir()
	script := apWrite(t, ws, "script.yaml", `turns:
  - toolCalls:
      - {name: bash, id: leak, args: {command: 'echo "k=$OPENAI_API_KEY t=$TOLLGATE_SECRET_INTERNAL"; env'}}
  - toolCalls:
      - {name: bash, id: gated, args: {command: "echo count"}}
  - text: done
`)
	policy := apWrite(t, ws, "policy.yaml", "rules:\n  - id: ask-count\n    tool: bash\n    args: {command: {regex: count}}\n    decision: ask\n    reason: needs a person\n")
	state := filepath.Join(t.TempDir(), "state")
	records := filepath.Join(ws, "records.jsonl")
	code, out, errOut := apMain(t, "run", "--model", "script:"+script, "--workdir", ws, "--policy", policy, "--state-dir", state, "--records", records, "x")
	if code != exitPending || !strings.Contains(out, "k= t=") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, f := range []string{filepath.Join(state, "tollgate.db"), records} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(key)) {
			t.Errorf("%s holds the key", f)
		}
	}
	if strings.Contains(out+errOut, key) {
		t.Errorf("the key was printed:\n%s", out)
	}
}

// A command hook that starts a daemon and outlives its timeout: the whole
// tree is killed and the warning says so.
func TestHookTimeoutKillsTheWholeTree(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	ws := t.TempDir()
	marker := fmt.Sprintf("%d.%d", 700+os.Getpid()%100, os.Getpid())
	hooks := apWrite(t, ws, "hooks.yaml", fmt.Sprintf(`hooks:
  - event: onStop
    action:
      type: command
      command: 'setsid sleep %s </dev/null >/dev/null 2>&1 & sleep 30'
      timeout: 1s
`, marker))
	script := apWrite(t, ws, "script.yaml", "turns:\n  - text: hi\n")
	code, out, errOut := apMain(t, "run", "--model", "script:"+script, "--workdir", ws, "--hooks", hooks, "x")
	if code != 0 || !strings.Contains(errOut, "timed out after 1s; it and every process it started were killed") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if pids := processesWith(t, "sleep\x00"+marker); len(pids) > 0 {
		for _, p := range pids {
			_ = killProcess(p)
		}
		t.Fatalf("the hook's daemon outlived its timeout: pids %v", pids)
	}
}

func TestDoctor(t *testing.T) {
	t.Parallel()
	code, out, _ := apMain(t, "doctor")
	abi := 0
	if sb, err := sandbox.New(nil); err == nil {
		abi = sb.Status().ABI
	}
	want := fmt.Sprintf("sandbox: landlock ABI %d", abi)
	if abi == 0 {
		want = "sandbox: landlock unavailable"
	}
	if !strings.Contains(out, want) || (code != 0) != (abi == 0 || !sandboxedHere(t)) {
		t.Fatalf("doctor: exit %d\n%s", code, out)
	}
}

func TestApproveByNeedsAdmin(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"approvals", "approve", "--by", "security-team", "req_1"},
		{"approvals", "deny", "--by", "security-team", "req_1"},
		{"approvals", "answer", "--by", "security-team", "req_1", "1"},
	} {
		code, _, errOut := apMain(t, append(args, "--state-dir", t.TempDir())...)
		if code != exitUsage || !strings.Contains(errOut, "needs --admin") {
			t.Errorf("%q: exit %d\n%s", args, code, errOut)
		}
	}
	// --by names a person: an administrator cannot record a rule or a flag
	// as having decided.
	for _, by := range []string{"rule:allow-all", "flag:--approve=yes", "runtime"} {
		code, _, errOut := apMain(t, "approvals", "approve", "--state-dir", t.TempDir(), "--admin", "--by", by, "req_1")
		if code != exitUsage || !strings.Contains(errOut, "names a person") {
			t.Errorf("--by %s: exit %d\n%s", by, code, errOut)
		}
	}
}

// processesWith returns the PIDs whose command line contains needle
// (arguments separated by NUL).
func processesWith(t *testing.T, needle string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(needle)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func killProcess(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
