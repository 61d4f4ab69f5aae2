package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/pgtest"
	"github.com/tollgate-dev/tollgate/internal/serveconfig"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
)

// startWorker starts `tollgate worker --config cfg` with env added, and
// waits until it takes runs.
func startWorker(t *testing.T, cfg string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(tollgateBinary(t), "worker", "--config", cfg)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var (
		mu   sync.Mutex
		logs bytes.Buffer
	)
	ready, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			logs.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if strings.Contains(sc.Text(), "taking runs") {
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-done:
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("the worker exited: %s", logs.String())
	case <-time.After(60 * time.Second):
		t.Fatal("the worker did not start")
	}
	return cmd
}

// One `tollgate serve` that drives nothing itself (durable: with zero
// concurrency) and `tollgate worker` processes on one PostgreSQL database:
// a run started over the API is enqueued, taken by the worker, halts on an
// approval; the approval given over the API wakes it, the command runs
// once, and the server's SSE stream shows the run halt and finish. Then a
// worker is killed with SIGKILL while a run waits for its approval; a
// second worker takes the run over, and once approved its command runs
// exactly once too.
func TestServeWithDurableWorkers(t *testing.T) {
	t.Parallel()
	db := pgtest.Database(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "script.yaml"), "turns:\n  - toolCalls: [{name: bash, args: {command: \"echo ran >> count.txt\"}}]\n  - text: counted\n")
	writeTestFile(t, filepath.Join(dir, "policy.yaml"), "rules:\n  - id: review-bash\n    tool: bash\n    decision: ask\n")
	token, hash, err := serveconfig.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "tokens.yaml"), "tokens:\n  - name: alice\n    roles: [operator, approver]\n    sha256: "+hash+"\n")
	config := filepath.Join(dir, "server.yaml")
	// The server and the workers seal and check decisions with one key.
	keyFile := filepath.Join(dir, "decision.key")
	writeTestFile(t, config, fmt.Sprintf(`stateDir: %s
storeKeyFile: %s
store: postgres
tokens: tokens.yaml
agents:
  counter:
    model: script:script.yaml
    workdir: ws
    policy: policy.yaml
durable:
  databaseEnv: TOLLGATE_TEST_DBOS_URL
`, filepath.Join(dir, "state"), keyFile))
	env := []string{envStoreURL + "=" + db, "TOLLGATE_TEST_DBOS_URL=" + db}
	workerCfg := func(name string) string {
		p := filepath.Join(dir, name+".yaml")
		writeTestFile(t, p, "databaseEnv: TOLLGATE_TEST_DBOS_URL\nstoreEnv: "+envStoreURL+"\nstoreKeyFile: "+keyFile+"\nexecutorId: "+name+"\nheartbeat: 500ms\ndeadAfter: 3s\n")
		return p
	}
	cmd := exec.Command(tollgateBinary(t), "serve", "--config", config, "--addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), env...)
	srv := startServeCmd(t, cmd)
	if !strings.Contains(srv.logs.String(), "durable runs: enqueued for workers") {
		t.Fatalf("the server does not say it enqueues: %s", srv.logs)
	}
	workerA := startWorker(t, workerCfg("worker-a"), env...)

	count := func() string {
		b, _ := os.ReadFile(filepath.Join(ws, "count.txt"))
		return string(b)
	}
	startHalted := func() (serverapi.RunView, serverapi.ApprovalView) {
		t.Helper()
		var run serverapi.RunView
		if code := srv.do(t, "POST", "/v1/runs", token, serverapi.StartRunRequest{Agent: "counter", Prompt: "count"}, &run); code != http.StatusCreated {
			t.Fatalf("start: %d %+v", code, run)
		}
		srv.waitEvent(t, token, run.ID, "run.halted")
		var page serverapi.ApprovalPage
		if code := srv.do(t, "GET", "/v1/approvals?status=pending&run="+run.ID, token, nil, &page); code != http.StatusOK || len(page.Approvals) != 1 {
			t.Fatalf("pending approvals: %d %+v", code, page)
		}
		return run, page.Approvals[0]
	}
	approveAndFinish := func(run serverapi.RunView, a serverapi.ApprovalView) {
		t.Helper()
		if code := srv.do(t, "POST", "/v1/approvals/"+a.ID+"/decision", token, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, nil); code != http.StatusOK {
			t.Fatalf("approve: %d", code)
		}
		srv.waitEvent(t, token, run.ID, "approval.decided")
		srv.waitEvent(t, token, run.ID, "run.finished")
		if code := srv.do(t, "GET", "/v1/runs/"+run.ID, token, nil, &run); code != http.StatusOK || run.Status != "done" {
			t.Fatalf("run after the approval: %d %s %s", code, run.Status, run.Reason)
		}
	}

	run, a := startHalted()
	approveAndFinish(run, a)
	if got := count(); got != "ran\n" {
		t.Fatalf("count.txt = %q after the first run, want one line", got)
	}

	run, a = startHalted()
	if err := workerA.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = workerA.Wait()
	startWorker(t, workerCfg("worker-b"), env...)
	approveAndFinish(run, a)
	if got := count(); got != "ran\nran\n" {
		t.Fatalf("count.txt = %q after the run taken over, want two lines: each approved command once", got)
	}
}
