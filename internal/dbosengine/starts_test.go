package dbosengine_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/dbosengine"
	"github.com/tollgate-dev/tollgate/internal/pgtest"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/sqlite"
	"github.com/tollgate-dev/tollgate/tool"
)

// A worker that polls once an hour still starts each run as it is stored:
// PostgreSQL's NOTIFY wakes it. Polling alone would leave the second run
// (the first may be found when the worker starts) waiting for an hour.
func TestWorkerWokenByNotify(t *testing.T) {
	c := newClusterOf(t, pgtest.Database(t), workerOptions{queuePoll: time.Hour})
	for i := range 5 {
		c.finished(c.start(fmt.Sprintf("freewoken%d", i)))
	}
}

// On a SQLite system database nothing notifies across processes; a server
// that is its own worker is woken by its own Start.
func TestWorkerWokenInProcessSQLite(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "store.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e, err := dbosengine.New(ctx, dbosengine.Options{
		DatabaseURL: "sqlite:" + filepath.Join(dir, "dbos.db"), Store: st, Builder: testBuilder(dir), Worker: true,
		QueuePoll: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(5 * time.Second)
	c := &cluster{t: t, dir: dir}
	for i := range 5 {
		id, err := e.Start(ctx, c.run(fmt.Sprintf("freeinproc%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		r, err := e.Wait(wctx, id)
		cancel()
		if err != nil || r.Status != store.RunDone {
			t.Fatalf("run %s: %v %v", id, r.Status, err)
		}
	}
}

func TestClaimsOfDeadWorkerSQLite(t *testing.T) {
	claimsOfDeadWorker(t, "sqlite:"+filepath.Join(t.TempDir(), "dbos.db"))
}

func TestClaimsOfDeadWorkerPostgres(t *testing.T) { claimsOfDeadWorker(t, pgtest.Database(t)) }

// A worker killed after claiming a run leaves its claim: on a run it had
// not started yet, and on one it had started (here: finished) without
// removing its start. The worker that reaps it frees both: the first runs,
// once; the second is not run again; no start is left.
func claimsOfDeadWorker(t *testing.T, db string) {
	ctx := context.Background()
	c := newCluster(t, db, 0)
	c.finished(c.start("freestarted"))
	c.kill("w0")
	if err := dbosengine.PutStart(ctx, db, "w0", c.run("freestarted")); err != nil {
		t.Fatal(err)
	}
	c.start("freeclaimed")
	if ok, err := dbosengine.ClaimStart(ctx, db, "w0", "run_freeclaimed"); err != nil || !ok {
		t.Fatalf("claiming the start of run_freeclaimed for w0: %v %v", ok, err)
	}
	c.startWorker("w1")
	c.reaped("w0")
	c.finished("run_freeclaimed")
	c.waitFor("every start to be removed", 60*time.Second, func() bool {
		ids, err := dbosengine.Starts(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		return len(ids) == 0
	})
	for _, key := range []string{"freestarted", "freeclaimed"} {
		got, where := c.counts(key)
		for _, what := range []string{"turn 1", "turn 2", "tool"} {
			if got[what] != 1 {
				t.Errorf("%s: %s ran %d times, want once (%v)", key, what, got[what], where)
			}
		}
	}
}

// A run cancelled before any worker started it is not started: its start
// is removed, and Cancel does not fail for want of a workflow.
func TestCancelBeforeStart(t *testing.T) {
	ctx := context.Background()
	db := "sqlite:" + filepath.Join(t.TempDir(), "dbos.db")
	c := newCluster(t, db, 0)
	c.kill("w0")
	id := c.start("early")
	if err := c.client.Cancel(ctx, id, tool.PrincipalOf("person:alice")); err != nil {
		t.Fatalf("cancelling a run not started: %v", err)
	}
	ids, err := dbosengine.Starts(ctx, db)
	if err != nil || len(ids) != 0 {
		t.Fatalf("starts left: %v %v", ids, err)
	}
	r, err := c.store.GetRun(ctx, id)
	if err != nil || r.Status != store.RunCancelled {
		t.Fatalf("stored run: %v %v", r.Status, err)
	}
}

// BenchmarkWorkersAtConcurrency: runs per second with one and two worker
// processes on one PostgreSQL, each driving at most 2 runs at once, the
// mock model taking 100 ms a turn: the workers' places, not the CPU, are
// the limit, so two workers should finish nearly twice as many (and a
// worker that noticed a free place late would finish fewer).
func BenchmarkWorkersAtConcurrency(b *testing.B) {
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			c := newClusterOf(b, pgtest.Database(b), workerOptions{concurrency: 2, modelDelay: 100 * time.Millisecond})
			for i := 1; i < workers; i++ {
				c.startWorker(fmt.Sprintf("w%d", i))
			}
			b.ResetTimer()
			start := time.Now()
			ids := make([]string, b.N)
			for i := range ids {
				ids[i] = c.start(fmt.Sprintf("free%d-%d", workers, i))
			}
			for _, id := range ids {
				c.finished(id)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "runs/s")
		})
	}
}
