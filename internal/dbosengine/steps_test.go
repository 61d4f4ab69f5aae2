package dbosengine_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tollgate-dev/tollgate/internal/dbosengine"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/sqlite"
)

// inProcessWorker is a server that is its own worker, on a SQLite system
// database and store in dir, and the cluster whose runs it starts.
func inProcessWorker(t *testing.T, dir string) (*dbosengine.Engine, *cluster) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "store.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e, err := dbosengine.New(ctx, dbosengine.Options{
		DatabaseURL: "sqlite:" + filepath.Join(dir, "dbos.db"), Store: st, Builder: testBuilder(dir), Worker: true,
		QueuePoll: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(5 * time.Second) })
	return e, &cluster{t: t, dir: dir}
}

// A durable run records a step per model turn and per tool call, and no
// other: a run of two turns and one call that nothing asks about records
// three. Its store record, written when it was started, is not looked for
// again in a step; its end is stored before the workflow's, which DBOS
// records anyway.
func TestStepsOfARun(t *testing.T) {
	ctx := context.Background()
	e, c := inProcessWorker(t, t.TempDir())
	id, err := e.Start(ctx, c.run("freesteps"))
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if r, err := e.Wait(wctx, id); err != nil || r.Status != store.RunDone {
		t.Fatalf("run %s: %v %v", id, r.Status, err)
	}
	names, err := dbosengine.StepNames(e, id)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"turn 1", "decide call_freesteps", "turn 2"}, names); d != "" {
		t.Errorf("steps of a run (-want +got):\n%s", d)
	}
}

// A server that is its own worker starts a run's workflow at once when it
// has a free place, without a row in tollgate_starts (its insert, claim and
// removal, and the NOTIFY that wakes the workers): a trigger counts the
// rows inserted there.
func TestStartOnAFreePlaceStoresNoStart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e, c := inProcessWorker(t, dir)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "dbos.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`CREATE TABLE starts_seen (run_id TEXT)`,
		`CREATE TRIGGER count_starts AFTER INSERT ON tollgate_starts BEGIN INSERT INTO starts_seen VALUES (NEW.run_id); END`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		id, err := e.Start(ctx, c.run(fmt.Sprintf("freehere%d", i)))
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
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM starts_seen`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d starts stored for 3 runs started on a worker with free places", n)
	}
}
