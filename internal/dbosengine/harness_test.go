package dbosengine_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/internal/dbosengine"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/internal/storeimpl"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/postgres"
	"github.com/tollgate-dev/tollgate/store/sqlite"
	"github.com/tollgate-dev/tollgate/tool"
)

// The test binary is also the worker: started with envWorker set, TestMain
// runs a worker (the mock model and the counting tool below) until it is
// killed, instead of the tests. The binary is built once, by go test.
const (
	envWorker   = "TOLLGATE_DBOS_TEST_WORKER"
	envDB       = "TOLLGATE_DBOS_TEST_DB"
	envStore    = "TOLLGATE_DBOS_TEST_STORE"
	envCounts   = "TOLLGATE_DBOS_TEST_COUNTS"
	envExecutor = "TOLLGATE_DBOS_TEST_EXECUTOR"
	// envKeyFile names the file of the store's decision key, which the
	// workers and the client share (the key itself is never in the
	// environment).
	envKeyFile = "TOLLGATE_DBOS_TEST_KEY_FILE"
	// envConcurrency is the worker's Concurrency (0: the default).
	envConcurrency = "TOLLGATE_DBOS_TEST_CONCURRENCY"
	// envQueuePoll is the worker's QueuePoll (empty: the default).
	envQueuePoll = "TOLLGATE_DBOS_TEST_QUEUE_POLL"
	// envModelDelay is how long the mock model takes to answer (empty:
	// at once).
	envModelDelay = "TOLLGATE_DBOS_TEST_MODEL_DELAY"
)

// testDeadAfter is the test workers' DeadAfter: longer than any pause of a
// live worker, however loaded the machine, so that no live worker is ever
// taken for dead (its runs would then be driven by two workers at once).
// A killed worker is made dead by [cluster.reaped], which ages its
// heartbeat by testDeadAfter instead of waiting for that long.
const testDeadAfter = 10 * time.Minute

func TestMain(m *testing.M) {
	if os.Getenv(envWorker) == "1" {
		os.Exit(workerMain())
	}
	os.Exit(m.Run())
}

func workerMain() int {
	ctx := context.Background()
	st, err := openStore(ctx, os.Getenv(envStore), os.Getenv(envKeyFile))
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker: store:", err)
		return 1
	}
	conc, _ := strconv.Atoi(os.Getenv(envConcurrency))
	poll, _ := time.ParseDuration(os.Getenv(envQueuePoll))
	e, err := dbosengine.New(ctx, dbosengine.Options{
		DatabaseURL: os.Getenv(envDB), Store: st, Builder: testBuilder(os.Getenv(envCounts)), Worker: true,
		ExecutorID: os.Getenv(envExecutor), Concurrency: conc, QueuePoll: poll,
		Heartbeat: 200 * time.Millisecond, DeadAfter: testDeadAfter, AnswerPoll: 2 * time.Second,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	fmt.Println("ready")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	_ = e.Close(5 * time.Second)
	_ = st.Close()
	return 0
}

// openStore opens the tollgate store of the test: PostgreSQL for a
// postgres:// URL, else the SQLite file at spec, with the decision key of
// keyFile.
func openStore(ctx context.Context, spec, keyFile string) (store.Store, error) {
	key, err := storeimpl.LoadDecisionKey(keyFile)
	if err != nil {
		return nil, err
	}
	opts := &store.Options{DecisionKey: key}
	if strings.HasPrefix(spec, "postgres://") {
		return postgres.Open(ctx, spec, opts)
	}
	return sqlite.Open(ctx, spec, opts)
}

// count appends one line to the counts file of key: what ran, once per line.
func count(dir, key, what string) {
	f, err := os.OpenFile(filepath.Join(dir, key+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintln(f, what+" @"+os.Getenv(envExecutor)); err != nil {
		panic(err)
	}
}

// blockIf blocks until ctx ends when the file dir/name exists, after
// writing the marker dir/name.started; it writes dir/name.cancelled when
// ctx ends (in a worker that is not killed).
func blockIf(ctx context.Context, dir, name string) error {
	if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
		return nil
	}
	if err := os.WriteFile(filepath.Join(dir, name+".started"), nil, 0o600); err != nil {
		return err
	}
	<-ctx.Done()
	_ = os.WriteFile(filepath.Join(dir, name+".cancelled"), nil, 0o600)
	return ctx.Err()
}

// testBuilder builds the agent of every test run: a mock model that, for
// the prompt "key:K", asks for the tool count in turn 1 and answers "done K"
// in turn 2, and the tool count, which needs an approval unless K starts
// with "free". The model counts each turn it answers ("turn N"), the tool
// each time it starts ("tool"), with the executor that ran them.
func testBuilder(dir string) runs.Builder {
	return runs.BuilderFunc(func(ctx context.Context, cfg runs.RunConfig) (*runs.Built, error) {
		keyOf := func(req *model.Request) string {
			for _, m := range req.Messages {
				if k, ok := strings.CutPrefix(m.Content, "key:"); ok && m.Role == model.RoleUser {
					return k
				}
			}
			return "nokey"
		}
		m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
			key := keyOf(req)
			turn := 1
			for _, msg := range req.Messages {
				if msg.Role == model.RoleAssistant {
					turn++
				}
			}
			if err := blockIf(ctx, dir, fmt.Sprintf("block-model-%s-%d", key, turn)); err != nil {
				return model.Reply{}, err
			}
			if d, _ := time.ParseDuration(os.Getenv(envModelDelay)); d > 0 {
				select {
				case <-time.After(d):
				case <-ctx.Done():
					return model.Reply{}, ctx.Err()
				}
			}
			count(dir, key, fmt.Sprintf("turn %d", turn))
			if turn == 1 && strings.HasPrefix(key, "freepar") {
				var calls []model.FuncCall
				for n := 1; n <= 3; n++ {
					calls = append(calls, model.FuncCall{ID: fmt.Sprintf("call_%s_%d", key, n), Name: "meet", Arguments: map[string]any{"key": key, "n": n}})
				}
				return model.Reply{ToolCalls: calls}, nil
			}
			if turn == 1 {
				return model.Reply{ToolCalls: []model.FuncCall{{ID: "call_" + key, Name: "count", Arguments: map[string]any{"key": key}}}}, nil
			}
			var results []string
			for _, msg := range req.Messages {
				if msg.Role == model.RoleTool {
					results = append(results, msg.Content)
				}
			}
			return model.Reply{Content: fmt.Sprintf("done %s: %s", key, strings.Join(results, ", "))}, nil
		})
		type in struct {
			Key string `json:"key"`
		}
		countTool := tool.Must("count", "counts its runs", func(ctx context.Context, a in) (string, error) {
			count(dir, a.Key, "tool")
			if err := blockIf(ctx, dir, "block-tool-"+a.Key); err != nil {
				return "", err
			}
			return "counted " + a.Key, nil
		}, nil)
		type meetIn struct {
			Key string `json:"key"`
			N   int    `json:"n"`
		}
		// meet: three calls that each wait (up to 20 s) until all three
		// have started, which only calls running in parallel do.
		meetTool := tool.Must("meet", "waits for the others", func(ctx context.Context, a meetIn) (string, error) {
			count(dir, a.Key, fmt.Sprintf("meet %d", a.N))
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-meet-%d", a.Key, a.N)), nil, 0o600); err != nil {
				return "", err
			}
			deadline := time.Now().Add(20 * time.Second)
			for n := 1; n <= 3; n++ {
				for {
					if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("%s-meet-%d", a.Key, n))); err == nil {
						break
					}
					if time.Now().After(deadline) {
						return "alone", nil
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
			return fmt.Sprintf("met %d", a.N), nil
		}, nil)
		ask := approval.AuthorizerFunc(func(ctx context.Context, c approval.Call) (approval.Verdict, error) {
			if strings.HasPrefix(c.RunID, "run_free") {
				return approval.Verdict{Decision: approval.Allow, By: tool.Principal{Kind: tool.PrincipalRule, Name: "free"}}, nil
			}
			return approval.Verdict{Decision: approval.Ask, Reason: "counting needs a person", By: tool.Principal{Kind: tool.PrincipalRule, Name: "ask-count"}}, nil
		})
		return &runs.Built{Options: agent.Options{Model: m, ModelName: "mock", Tools: agent.ToolList{countTool, meetTool}, Authorizers: []approval.Authorizer{ask}}}, nil
	})
}

// cluster is one system database, one store and the workers on them.
type cluster struct {
	t     testing.TB
	db    string
	dir   string
	store store.Store
	// storeSpec is the store's URL or file, for the workers.
	storeSpec string
	client    *dbosengine.Engine
	mu        sync.Mutex
	procs     map[string]*exec.Cmd
	// concurrency, queuePoll and modelDelay are the Concurrency, the
	// QueuePoll and the mock model's delay of the workers started next
	// (zero: the defaults, at once).
	concurrency int
	queuePoll   time.Duration
	modelDelay  time.Duration
}

// newCluster starts worker w0 (with Concurrency conc, 0 for the default) on
// the system database dbURL and a client. On PostgreSQL the tollgate store
// is in the same database; with SQLite it is a file of its own.
func newCluster(t testing.TB, dbURL string, conc int) *cluster {
	t.Helper()
	return newClusterOf(t, dbURL, workerOptions{concurrency: conc})
}

// workerOptions are what the cluster's workers are started with.
type workerOptions struct {
	concurrency int
	queuePoll   time.Duration
	modelDelay  time.Duration
}

// newClusterOf is newCluster with the workers' options w.
func newClusterOf(t testing.TB, dbURL string, w workerOptions) *cluster {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	spec := filepath.Join(dir, "store.db")
	if strings.HasPrefix(dbURL, "postgres://") {
		spec = dbURL
	}
	st, err := openStore(ctx, spec, filepath.Join(dir, "decision.key"))
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, db: dbURL, dir: dir, store: st, storeSpec: spec, procs: map[string]*exec.Cmd{}, concurrency: w.concurrency, queuePoll: w.queuePoll, modelDelay: w.modelDelay}
	t.Cleanup(func() {
		c.mu.Lock()
		for _, p := range c.procs {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
		c.mu.Unlock()
		if c.client != nil {
			_ = c.client.Close(time.Second)
		}
		_ = st.Close()
	})
	// The first worker creates DBOS's tables; the client needs them.
	c.startWorker("w0")
	cl, err := dbosengine.New(ctx, dbosengine.Options{DatabaseURL: dbURL, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	c.client = cl
	return c
}

// startWorker starts a worker process and waits until it is ready.
func (c *cluster) startWorker(id string) {
	c.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envWorker+"=1", envDB+"="+c.db, envStore+"="+c.storeSpec,
		envCounts+"="+c.dir, envExecutor+"="+id, envKeyFile+"="+filepath.Join(c.dir, "decision.key"), envConcurrency+"="+strconv.Itoa(c.concurrency))
	if c.queuePoll > 0 {
		cmd.Env = append(cmd.Env, envQueuePoll+"="+c.queuePoll.String())
	}
	if c.modelDelay > 0 {
		cmd.Env = append(cmd.Env, envModelDelay+"="+c.modelDelay.String())
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	cmd.Stderr = &prefixWriter{t: c.t, prefix: id + ": "}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	ready := make(chan error, 1)
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			if s.Text() == "ready" {
				ready <- nil
			}
		}
		ready <- errors.New("worker exited before it was ready")
	}()
	select {
	case err := <-ready:
		if err != nil {
			c.t.Fatalf("worker %s: %v", id, err)
		}
	case <-time.After(60 * time.Second):
		c.t.Fatalf("worker %s: not ready after 60s", id)
	}
	c.mu.Lock()
	c.procs[id] = cmd
	c.mu.Unlock()
}

// kill SIGKILLs a worker.
func (c *cluster) kill(id string) {
	c.t.Helper()
	c.mu.Lock()
	p := c.procs[id]
	delete(c.procs, id)
	c.mu.Unlock()
	if p == nil {
		c.t.Fatalf("no worker %s", id)
	}
	if err := p.Process.Signal(syscall.SIGKILL); err != nil {
		c.t.Fatal(err)
	}
	_ = p.Wait()
}

// freeze stops worker id (SIGSTOP) without ending it: what it has not
// done yet it does not do until [cluster.kill] ends it.
func (c *cluster) freeze(id string) {
	c.t.Helper()
	c.mu.Lock()
	p := c.procs[id]
	c.mu.Unlock()
	if p == nil {
		c.t.Fatalf("no worker %s", id)
	}
	if err := p.Process.Signal(syscall.SIGSTOP); err != nil {
		c.t.Fatal(err)
	}
}

// reaped waits until a live worker has taken over the runs of the killed
// worker id: it ages id's heartbeat by testDeadAfter, as that long without
// a beat would, until a reaper has deleted its row. It ages again on each
// poll, since a beat the worker sent just before it was killed may still
// land after an ageing.
func (c *cluster) reaped(id string) {
	c.t.Helper()
	c.mu.Lock()
	_, alive := c.procs[id]
	c.mu.Unlock()
	if alive {
		c.t.Fatalf("worker %s was not killed", id)
	}
	c.waitFor("a live worker to take over the runs of "+id, 60*time.Second, func() bool {
		row, err := dbosengine.AgeHeartbeat(context.Background(), c.db, id, testDeadAfter)
		if err != nil {
			c.t.Fatalf("ageing the heartbeat of %s: %v", id, err)
		}
		return !row
	})
}

// start starts a run with the prompt key:K.
func (c *cluster) start(key string) string {
	c.t.Helper()
	id, err := c.client.Start(context.Background(), c.run(key))
	if err != nil {
		c.t.Fatal(err)
	}
	return id
}

// run is the input of the run with the prompt key:K.
func (c *cluster) run(key string) runcore.DurableRun {
	return runcore.DurableRun{
		RunID:  "run_" + key,
		Config: runs.RunConfig{Version: runcore.ConfigVersion, AgentConfig: runs.AgentConfig{Model: runs.ModelRef{Provider: "mock", Name: "mock"}, Workdir: c.dir}},
		Prompt: "key:" + key,
	}
}

// waitFor polls cond (a file or the store, written by another process)
// until it holds.
func (c *cluster) waitFor(what string, within time.Duration, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("waited %s for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pending waits for the run's approval request and returns its ID.
func (c *cluster) pending(runID string) string {
	c.t.Helper()
	var id string
	c.waitFor("the approval request of "+runID, 60*time.Second, func() bool {
		page, err := c.store.ListApprovals(context.Background(), store.ApprovalFilter{AllTenants: true, RunID: runID, Status: store.StatusPending})
		if err != nil || len(page.Approvals) == 0 {
			return false
		}
		id = page.Approvals[0].ID
		return true
	})
	return id
}

func (c *cluster) exists(name string) func() bool {
	return func() bool { _, err := os.Stat(filepath.Join(c.dir, name)); return err == nil }
}

// counts returns how often each thing of key's counts file ran, and on
// which executors.
func (c *cluster) counts(key string) (map[string]int, map[string][]string) {
	b, _ := os.ReadFile(filepath.Join(c.dir, key+".log"))
	out, where := map[string]int{}, map[string][]string{}
	for l := range strings.Lines(string(b)) {
		what, ex, _ := strings.Cut(strings.TrimSpace(l), " @")
		out[what]++
		where[what] = append(where[what], ex)
	}
	return out, where
}

// finished waits for the run to end and returns its stored record.
func (c *cluster) finished(runID string) store.Run {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	r, err := c.client.Wait(ctx, runID)
	if err != nil {
		c.t.Fatalf("run %s: %v", runID, err)
	}
	if r.Status != store.RunDone {
		c.t.Fatalf("run %s ended %s: %s", runID, r.Status, r.Result)
	}
	return r
}

type prefixWriter struct {
	t      testing.TB
	prefix string
}

func (w *prefixWriter) Write(b []byte) (int, error) {
	if s := strings.TrimSpace(string(b)); s != "" && testing.Verbose() {
		fmt.Fprintln(os.Stderr, w.prefix+s)
	}
	return len(b), nil
}
