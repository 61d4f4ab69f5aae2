package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/dbosengine"
	"github.com/tollgate-dev/tollgate/internal/pgtest"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/postgres"
	"github.com/tollgate-dev/tollgate/store/sqlite"
	"github.com/tollgate-dev/tollgate/tool"
)

// tollgate worker takes a run enqueued by another process, builds its agent
// from the stored configuration (a script model reading a workspace file),
// drives it to the end, and stops cleanly on SIGTERM: on SQLite files, and
// with DBOS and the store in one PostgreSQL database named by a variable.
func TestWorkerDrivesAnEnqueuedRun(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		dir := t.TempDir()
		workerDrives(t, dir, "database: sqlite:dbos.db\nstateDir: state\nconcurrency: 4\nexecutorId: worker-a\n", nil,
			"sqlite:"+filepath.Join(dir, "dbos.db"), func(ctx context.Context) (store.Store, error) {
				return sqlite.Open(ctx, filepath.Join(dir, "state", storeFile), nil)
			})
	})
	t.Run("postgres", func(t *testing.T) {
		db := pgtest.Database(t)
		workerDrives(t, t.TempDir(), "databaseEnv: TOLLGATE_TEST_WORKER_DB\nstoreEnv: TOLLGATE_TEST_WORKER_DB\nexecutorId: worker-a\n",
			[]string{"TOLLGATE_TEST_WORKER_DB=" + db}, db, func(ctx context.Context) (store.Store, error) { return postgres.Open(ctx, db, nil) })
	})
}

func workerDrives(t *testing.T, dir, config string, env []string, dbURL string, open func(context.Context) (store.Store, error)) {
	bin := tollgateBinary(t)
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("the answer is 42\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(script, []byte("turns:\n  - toolCalls:\n      - name: read\n        args: {path: a.txt}\n  - text: all read\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "worker.yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "worker", "--config", cfg)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// stderr is read by this goroutine until the worker exits (done).
	ready, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		s := bufio.NewScanner(pr)
		for s.Scan() {
			stderr.WriteString(s.Text() + "\n")
			if strings.Contains(s.Text(), "taking runs") {
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-done:
		t.Fatalf("the worker exited: %s", stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatal("the worker did not start")
	}

	ctx := context.Background()
	st, err := open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	client, err := dbosengine.New(ctx, dbosengine.Options{DatabaseURL: dbURL, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close(time.Second)
	runCfg, err := runs.RunConfig{AgentConfig: runs.AgentConfig{Model: runs.ModelRef{Provider: "script", Name: script}, Workdir: ws}}.Resolve(dir)
	if err != nil {
		t.Fatal(err)
	}
	id, err := client.Start(ctx, runcore.DurableRun{Config: runCfg, Prompt: "read a.txt", Owner: tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	r, err := client.Wait(wctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != store.RunDone || !strings.Contains(string(r.Result), "the answer is 42") || !strings.Contains(string(r.Result), "all read") {
		t.Fatalf("run %s: %s %s", id, r.Status, r.Result)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	<-done
	if err != nil {
		t.Fatalf("worker after SIGTERM: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "worker worker-a: stopping") {
		t.Errorf("stderr: %s", stderr.String())
	}
}

// A configuration that cannot work is a usage error naming the file and
// where the problem is.
func TestWorkerConfigErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, tc := range map[string]struct{ doc, want string }{
		"unknown key":  {"database: sqlite:x.db\nconcurency: 4\n", "worker.yaml:2:1"},
		"no database":  {"concurrency: 4\n", "database: required"},
		"bad duration": {"database: sqlite:x.db\ndeadAfter: soon\n", `deadAfter: "soon" is not a positive duration`},
		"both urls":    {"database: sqlite:x.db\ndatabaseEnv: X\n", "database and databaseEnv are both set"},
		"sqlite store": {"database: sqlite:x.db\nstore: sqlite:y.db\n", "store: want a PostgreSQL URL"},
		"unset env":    {"databaseEnv: TOLLGATE_TEST_UNSET_VARIABLE\n", "the variable TOLLGATE_TEST_UNSET_VARIABLE is not set"},
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, "worker.yaml")
			if err := os.WriteFile(p, []byte(tc.doc), 0o600); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			code := Main(context.Background(), []string{"worker", "--config", p}, strings.NewReader(""), &out, &errb)
			if code != exitUsage || !strings.Contains(errb.String(), tc.want) || !strings.Contains(errb.String(), p) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errb.String(), exitUsage, tc.want)
			}
		})
	}
	var out, errb bytes.Buffer
	if code := Main(context.Background(), []string{"worker"}, strings.NewReader(""), &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "--config FILE is required") {
		t.Errorf("no --config: exit %d, %q", code, errb.String())
	}
}
