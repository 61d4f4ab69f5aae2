package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tollgate-dev/tollgate/internal/pgtest"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/postgres"
	"github.com/tollgate-dev/tollgate/store/storetest"
	"github.com/tollgate-dev/tollgate/tool"
)

func open(t *testing.T, url string, opts *store.Options) store.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), url, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSuite(t *testing.T) {
	storetest.Run(t, func(t *testing.T, opts *store.Options) store.Store {
		return open(t, pgtest.Database(t), opts)
	})
}

// Two Stores on one database, each with its own pool, stand for two
// processes.
func TestSuiteShared(t *testing.T) {
	storetest.RunShared(t, func(t *testing.T, opts *store.Options) (store.Store, store.Store) {
		url := pgtest.Database(t)
		return open(t, url, opts), open(t, url, opts)
	})
}

var ctx = context.Background()

// rawConn connects to url directly, for the tests that reach under the
// store.
func rawConn(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// Processes that start at once on a new database migrate it once: the
// advisory lock makes the others wait and then find the schema current.
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	url := pgtest.Database(t)
	const n = 6
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			s, err := postgres.Open(ctx, url, nil)
			if err != nil {
				errs <- err
				return
			}
			s.Close()
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Open: %v", err)
	}
	var versions []int
	rows, err := rawConn(t, url).Query(ctx, `SELECT version FROM schema_version`)
	if err != nil {
		t.Fatal(err)
	}
	versions, err = pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	if len(versions) != 1 || versions[0] != postgres.SchemaVersion {
		t.Fatalf("schema_version holds %v, want [%d]", versions, postgres.SchemaVersion)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	url := pgtest.Database(t)
	open(t, url, nil).Close()
	if _, err := rawConn(t, url).Exec(ctx, `UPDATE schema_version SET version = $1`, postgres.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	_, err := postgres.Open(ctx, url, nil)
	if err == nil || !strings.Contains(err.Error(), "newer than this program's") {
		t.Fatalf("Open of a newer schema: %v", err)
	}
}

func TestOpenErrorHidesPassword(t *testing.T) {
	u, err := url.Parse(pgtest.AdminURL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("nobody", "s3cret-pw")
	u.Path = "/no_such_database"
	_, err = postgres.Open(ctx, u.String(), nil)
	if err == nil {
		t.Fatal("Open of a missing database succeeded")
	}
	if strings.Contains(err.Error(), "s3cret-pw") {
		t.Fatalf("the error repeats the password: %v", err)
	}
	if !strings.Contains(err.Error(), "no_such_database") {
		t.Errorf("the error does not name the database: %v", err)
	}
}

// waitStarted starts WaitEvents(f) on s and returns the channel of its
// result.
func waitStarted(s store.Store, f store.EventFilter) (<-chan error, context.CancelFunc) {
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	out := make(chan error, 1)
	go func() { out <- s.WaitEvents(wctx, f) }()
	return out, cancel
}

// A waiter wakes on the NOTIFY of an append, not by reading the table again:
// an event inserted under the store without a NOTIFY does not wake it (it
// would if WaitEvents polled), and the NOTIFY alone then does.
func TestWaitEventsWakesOnNotify(t *testing.T) {
	url := pgtest.Database(t)
	a, b := open(t, url, nil), open(t, url, nil)
	defer a.Close()
	defer b.Close()
	if _, err := a.CreateRun(ctx, store.CreateRunRequest{Run: store.Run{ID: "run_1", Status: store.RunRunning}}); err != nil {
		t.Fatal(err)
	}
	// A first wake-up through the other Store, once b listens, drains the
	// one NOTIFY there will be before the test proper.
	got, stop := waitStarted(b, store.EventFilter{RunID: "run_1"})
	defer stop()
	for deadline := time.Now().Add(time.Minute); !postgres.Listening(b); {
		if time.Now().After(deadline) {
			t.Fatal("b's listener never started")
		}
		time.Sleep(time.Millisecond)
	}
	seqs, err := a.AppendEvents(ctx, store.Event{Type: "run.started", RunID: "run_1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("WaitEvents: %v", err)
	}
	// The waiter may have found the event before b's listener got its
	// NOTIFY (sent after LISTEN, so it comes); wait for it, so that it
	// cannot wake the next waiter.
	for deadline := time.Now().Add(time.Minute); postgres.Notified(b) < 1; {
		if time.Now().After(deadline) {
			t.Fatal("b never got the NOTIFY of the append")
		}
		time.Sleep(time.Millisecond)
	}

	got, stop2 := waitStarted(b, store.EventFilter{RunID: "run_1", AfterSeq: seqs[0]})
	defer stop2()
	raw := rawConn(t, url)
	if _, err := raw.Exec(ctx, `INSERT INTO events (seq, tenant, run_id, type, time) VALUES ($1, '', 'run_1', 'sneaked', now())`, seqs[0]+1); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		t.Fatalf("WaitEvents returned %v without a NOTIFY: it polls", err)
	case <-time.After(postgres.FallbackPoll + 200*time.Millisecond): // longer than any poll
	}
	if _, err := raw.Exec(ctx, `SELECT pg_notify($1, 'x')`, postgres.Channel); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("WaitEvents after the NOTIFY: %v", err)
	}
}

// A waiter whose context ends while it reads the log keeps the pool's
// connection: pgx closes a connection whose query is cancelled, and
// waiters end all the time (a stream closed, a durable run's part over).
// Its read is held on a lock of the events table while the context ends.
func TestWaitEventsEndedWhileReadingKeepsItsConnection(t *testing.T) {
	url := pgtest.Database(t)
	s := open(t, url, nil)
	defer s.Close()
	if _, err := s.ListEvents(ctx, store.EventFilter{AllTenants: true}); err != nil {
		t.Fatal(err)
	}
	opened := postgres.NewConns(s)
	tx, err := rawConn(t, url).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `LOCK TABLE events IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	got, cancel := waitStarted(s, store.EventFilter{AllTenants: true})
	// Looked at from a session of its own: a transaction sees
	// pg_stat_activity as it was when it first looked.
	watch := rawConn(t, url)
	for deadline := time.Now().Add(time.Minute); ; {
		var n int
		if err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'SELECT seq FROM events%LIMIT 1'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the waiter's read never waited for the lock")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitEvents: %v, want the context's end", err)
	}
	if _, err := s.ListEvents(ctx, store.EventFilter{AllTenants: true}); err != nil {
		t.Fatal(err)
	}
	if n := postgres.NewConns(s) - opened; n != 0 {
		t.Errorf("the pool opened %d connections after a waiter ended while it read", n)
	}
}

// A waiter survives the loss of the listening connection: the store
// reconnects (polling meanwhile), and an append after the loss wakes it.
func TestWaitEventsAfterListenerLoss(t *testing.T) {
	url := pgtest.Database(t)
	a, b := open(t, url, nil), open(t, url, nil)
	defer a.Close()
	defer b.Close()
	if _, err := a.CreateRun(ctx, store.CreateRunRequest{Run: store.Run{ID: "run_1", Status: store.RunRunning}}); err != nil {
		t.Fatal(err)
	}
	got, stop := waitStarted(b, store.EventFilter{RunID: "run_1"})
	defer stop()
	raw := rawConn(t, url)
	// Kill every listening connection of this database, as a failover would.
	var killed int
	for killed == 0 {
		err := raw.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = $1`, postgres.ListenerName).Scan(&killed)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-got:
			t.Fatalf("WaitEvents returned %v with no event", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if _, err := a.AppendEvents(ctx, store.Event{Type: "run.started", RunID: "run_1"}); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("WaitEvents after the listener was killed: %v", err)
	}
}

// JSON read back is bounded before it is parsed or returned: a row changed
// under the store to hold a document nested too deep is refused with an
// error naming the run and the column.
func TestStoredJSONIsBounded(t *testing.T) {
	url := pgtest.Database(t)
	s := open(t, url, nil)
	defer s.Close()
	if _, err := s.CreateRun(ctx, store.CreateRunRequest{Run: store.Run{ID: "run_1", Status: store.RunPending}}); err != nil {
		t.Fatal(err)
	}
	deep := strings.Repeat("[", postgres.MaxJSONDepth+1) + strings.Repeat("]", postgres.MaxJSONDepth+1)
	if _, err := rawConn(t, url).Exec(ctx, `UPDATE runs SET state = $1 WHERE id = 'run_1'`, deep); err != nil {
		t.Fatal(err)
	}
	_, err := s.GetRun(ctx, "run_1")
	if err == nil || !strings.Contains(err.Error(), "run run_1 state") || !strings.Contains(err.Error(), "nested deeper") {
		t.Fatalf("GetRun of a too deep state: %v", err)
	}
	if _, err := s.ListRuns(ctx, store.RunFilter{}); err == nil {
		t.Fatal("ListRuns returned a too deep state")
	}
}

// Text PostgreSQL cannot hold is the caller's error, and nothing is stored.
func TestUnstorableTextIsInvalid(t *testing.T) {
	s := open(t, pgtest.Database(t), nil)
	defer s.Close()
	_, err := s.CreateRun(ctx, store.CreateRunRequest{Run: store.Run{ID: "run_1", Owner: "person:a\x00b", Status: store.RunPending}})
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("CreateRun with a NUL byte: %v, want ErrInvalid", err)
	}
	if _, err := s.GetRun(ctx, "run_1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the refused run was stored: %v", err)
	}
	_, err = s.AppendEvents(ctx, store.Event{Type: "x", Data: json.RawMessage("\"\xff\"")})
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("AppendEvents with invalid UTF-8: %v, want ErrInvalid", err)
	}
}

// What a write returns is what a read gives back, to the microsecond,
// whatever the precision of the clock.
func TestTimesRoundTrip(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 123456789, time.FixedZone("X", 3600))
	s := open(t, pgtest.Database(t), &store.Options{Now: func() time.Time { return now }})
	defer s.Close()
	exp := now.Add(time.Hour + time.Nanosecond)
	created, err := s.CreateRun(ctx, store.CreateRunRequest{Run: store.Run{ID: "run_1", Status: store.RunPending},
		Approvals: []store.Approval{{ID: "req_1", Digest: "d", ExpiresAt: &exp}}, Holder: "w", LeaseTTL: time.Minute + time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.GetRun(ctx, "run_1")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(created, got); d != "" {
		t.Fatalf("CreateRun returned and GetRun read (-returned +read):\n%s", d)
	}
	if got.CreatedAt.Location() != time.UTC || got.CreatedAt.Nanosecond() != 123456000 {
		t.Errorf("CreatedAt = %v, want UTC to the microsecond", got.CreatedAt)
	}
	a, err := s.GetApproval(ctx, "run_1", "req_1")
	if err != nil {
		t.Fatal(err)
	}
	if want := exp.Truncate(time.Microsecond); !a.ExpiresAt.Equal(want) || a.ExpiresAt.Location() != time.UTC {
		t.Errorf("ExpiresAt = %v, want %v in UTC", a.ExpiresAt, want)
	}
}

// Every kind of write on the same runs at once, from two Stores: the lock
// order keeps them free of deadlocks (PostgreSQL would abort one with
// SQLSTATE 40P01), and every failure is one the interface names.
func TestMixedWritesDoNotDeadlock(t *testing.T) {
	url := pgtest.Database(t)
	var clock atomic.Int64
	base := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	opts := &store.Options{Now: func() time.Time { return base.Add(time.Duration(clock.Load())) }}
	a, b := open(t, url, opts), open(t, url, opts)
	defer a.Close()
	defer b.Close()
	const runs = 6
	exp := base.Add(time.Second)
	for i := range runs {
		var as []store.Approval
		for j := range 4 {
			as = append(as, store.Approval{ID: fmt.Sprintf("req_%d", j), Digest: "d", ExpiresAt: &exp})
		}
		if _, err := a.CreateRun(ctx, store.CreateRunRequest{Run: store.Run{ID: fmt.Sprintf("run_%d", i), Status: store.RunDone}, Approvals: as}); err != nil {
			t.Fatal(err)
		}
	}
	allowed := []error{store.ErrNotFound, store.ErrDecided, store.ErrExpired, store.ErrNotApproved, store.ErrUsed, store.ErrConflict, store.ErrLeased, store.ErrExists}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 8 {
		s := a
		if w%2 == 1 {
			s = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				run := fmt.Sprintf("run_%d", (w+i)%runs)
				req := fmt.Sprintf("req_%d", i%4)
				var err error
				switch (w + i) % 7 {
				case 0:
					_, err = s.Decide(ctx, run, req, store.Answer{Approve: true, By: tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}})
				case 1:
					_, err = s.Consume(ctx, run, req, "d")
				case 2:
					_, err = s.ExpireApprovals(ctx)
				case 3:
					_, err = s.UpdateRun(ctx, run, store.RunUpdate{Events: []store.Event{{Type: "tick"}}, Approvals: []store.Approval{{ID: fmt.Sprintf("new_%d_%d", w, i), Digest: "d"}}})
				case 4:
					_, err = s.AppendEvents(ctx, store.Event{Type: "tick", RunID: run}, store.Event{Type: "tock", RunID: fmt.Sprintf("run_%d", (w+i+1)%runs)})
				case 5:
					_, _, err = s.ClaimRun(ctx, run, store.Claim{Holder: fmt.Sprintf("w%d", w), TTL: time.Millisecond, From: []store.RunStatus{store.RunDone}})
				case 6:
					if i%3 == 0 {
						_, err = s.DeleteRuns(ctx, store.PruneFilter{})
					} else {
						_, err = s.CreateRun(ctx, store.CreateRunRequest{Run: store.Run{ID: run, Status: store.RunDone}, Approvals: []store.Approval{{ID: "req_0", Digest: "d"}}})
					}
				}
				clock.Add(int64(50 * time.Millisecond))
				if err != nil && !slices.ContainsFunc(allowed, func(e error) bool { return errors.Is(err, e) }) {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("unexpected error: %v", err)
	}
	t.Logf("transactions run again after a deadlock: %d and %d", postgres.Deadlocks(a), postgres.Deadlocks(b))
	// The log is still gapless as far as the readers can tell: strictly
	// increasing.
	evs, err := a.ListEvents(ctx, store.EventFilter{AllTenants: true, Limit: store.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].Seq <= evs[i-1].Seq {
			t.Fatalf("events out of order: %d after %d", evs[i].Seq, evs[i-1].Seq)
		}
	}
}

// Decide holds its run against deletion even when the run it waited for
// was deleted and created again under its ID meanwhile (PostgreSQL skips a
// row deleted while a lock waited): otherwise a DeleteRuns could take the
// new run and cascade into the approval Decide holds while Decide's event
// waits for the run, a deadlock. A trigger on events stops Decide just
// before its event is written, and a session checks that the run cannot be
// locked for deletion then.
func TestDecideLocksARunCreatedAgain(t *testing.T) {
	db := pgtest.Database(t)
	s := open(t, db, nil)
	defer s.Close()
	if _, err := s.CreateRun(ctx, store.CreateRunRequest{Run: store.Run{ID: "run_1", Status: store.RunRunning},
		Approvals: []store.Approval{{ID: "req_1", Digest: "d"}}}); err != nil {
		t.Fatal(err)
	}
	const gate = 4242
	admin := rawConn(t, db)
	if _, err := admin.Exec(ctx, `CREATE FUNCTION gate() RETURNS trigger LANGUAGE plpgsql AS
		$$ BEGIN PERFORM pg_advisory_xact_lock_shared(`+fmt.Sprint(gate)+`); RETURN NEW; END $$;
		CREATE TRIGGER gate BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION gate();
		SELECT pg_advisory_lock(`+fmt.Sprint(gate)+`)`); err != nil {
		t.Fatal(err)
	}
	waiting := func(what, cond string) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); ; {
			var n int
			if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND wait_event_type = 'Lock' AND `+cond).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("Decide never waited for %s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}
	del := rawConn(t, db)
	tx, err := del.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT id FROM runs WHERE id = 'run_1' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Decide(ctx, "run_1", "req_1", store.Answer{Approve: true, By: tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}})
		done <- err
	}()
	waiting("the run", `query LIKE '%FOR KEY SHARE%'`)
	// The run and its approval, deleted and created again in one step.
	if _, err := tx.Exec(ctx, `CREATE TEMP TABLE r AS SELECT * FROM runs WHERE id = 'run_1';
		CREATE TEMP TABLE a AS SELECT * FROM approvals WHERE run_id = 'run_1';
		DELETE FROM runs WHERE id = 'run_1';
		INSERT INTO runs SELECT * FROM r;
		INSERT INTO approvals SELECT * FROM a`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	waiting("the gate", `wait_event = 'advisory'`)
	probe, err := del.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = probe.Exec(ctx, `SELECT id FROM runs WHERE id = 'run_1' FOR UPDATE NOWAIT`)
	probe.Rollback(ctx)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "55P03" {
		t.Errorf("run_1 could be locked for deletion while Decide wrote its approval (err %v), want lock_not_available", err)
	}
	if _, err := admin.Exec(ctx, `SELECT pg_advisory_unlock(`+fmt.Sprint(gate)+`)`); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Decide: %v", err)
	}
	a, err := s.GetApproval(ctx, "run_1", "req_1")
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != store.StatusApproved {
		t.Errorf("req_1 is %s, want approved", a.Status)
	}
}

// A write that PostgreSQL ends as a deadlock's victim is run again from the
// start and succeeds. The cycle is built by hand: a session holds the
// approvals counter; UpdateRun locks its run and waits for the counter; the
// session then asks for the run. PostgreSQL looks for a cycle once per
// wait, when the waiter's deadlock_timeout has passed: the store's (500ms)
// passes long after the session has closed the cycle, and the session's
// (10min) never does, so UpdateRun is the victim.
func TestDeadlockVictimIsRunAgain(t *testing.T) {
	db := pgtest.Database(t)
	s := open(t, db+"&deadlock_timeout=500ms", nil)
	defer s.Close()
	if _, err := s.CreateRun(ctx, store.CreateRunRequest{Run: store.Run{ID: "run_1", Status: store.RunRunning}}); err != nil {
		t.Fatal(err)
	}
	raw := rawConn(t, db)
	var pid int
	if err := raw.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(ctx, `SET deadlock_timeout = '10min'`); err != nil {
		t.Fatal(err)
	}
	tx, err := raw.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `UPDATE counters SET last = last WHERE name = 'approvals'`); err != nil {
		t.Fatal(err)
	}
	type result struct {
		run store.Run
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := s.UpdateRun(ctx, "run_1", store.RunUpdate{Approvals: []store.Approval{{ID: "req_1", Digest: "d"}}})
		done <- result{r, err}
	}()
	// Until UpdateRun holds the run and waits for the counter.
	admin := rawConn(t, db)
	for deadline := time.Now().Add(time.Minute); ; {
		var n int
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> $1 AND wait_event_type = 'Lock' AND query LIKE 'UPDATE counters%'`, pid).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("UpdateRun never waited for the counter")
		}
		time.Sleep(time.Millisecond)
	}
	// Blocks until the server ends UpdateRun's transaction, which then waits
	// for this one when it is run again.
	if _, err := tx.Exec(ctx, `SELECT id FROM runs WHERE id = 'run_1' FOR UPDATE`); err != nil {
		t.Fatalf("the session was the victim, not the store: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("UpdateRun: %v", r.err)
	}
	if r.run.Version != 2 {
		t.Errorf("run version %d, want 2 (one update)", r.run.Version)
	}
	if n := postgres.Deadlocks(s); n != 1 {
		t.Errorf("%d transactions run again, want 1", n)
	}
	p, err := s.ListApprovals(ctx, store.ApprovalFilter{RunID: "run_1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Approvals) != 1 || p.Approvals[0].ID != "req_1" {
		t.Errorf("approvals %+v, want req_1 once", p.Approvals)
	}
}

// A notification wakes only the waiters whose filter its events can match,
// so that many waiters do not all read the log again for every append; one
// with a payload that is not a notice wakes all of them.
func TestNoticesWakeOnlyConcernedWaiters(t *testing.T) {
	url := pgtest.Database(t)
	a, b := open(t, url, nil), open(t, url, nil)
	defer a.Close()
	defer b.Close()
	for _, r := range []store.Run{{ID: "run_1", Status: store.RunRunning}, {ID: "run_2", Tenant: "acme", Status: store.RunRunning}} {
		if _, err := a.CreateRun(ctx, store.CreateRunRequest{Run: r}); err != nil {
			t.Fatal(err)
		}
	}
	filters := map[string]store.EventFilter{
		"run_1":   {RunID: "run_1"},
		"acme":    {Tenant: "acme"},
		"all":     {AllTenants: true},
		"default": {},
	}
	chans := map[string]<-chan struct{}{}
	for name, f := range filters {
		ch, unregister := postgres.Register(b, f)
		defer unregister()
		chans[name] = ch
	}
	for deadline := time.Now().Add(time.Minute); !postgres.Listening(b); {
		if time.Now().After(deadline) {
			t.Fatal("b's listener never started")
		}
		time.Sleep(time.Millisecond)
	}
	woken := func() []string {
		var out []string
		for name, ch := range chans {
			select {
			case <-ch:
				out = append(out, name)
			default:
			}
		}
		slices.Sort(out)
		return out
	}
	woken() // the start of listening wakes everyone
	notify := func(what string, send func() error, want ...string) {
		t.Helper()
		n := postgres.Notified(b)
		if err := send(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(time.Minute); postgres.Notified(b) <= n; {
			if time.Now().After(deadline) {
				t.Fatalf("%s: no notification reached b", what)
			}
			time.Sleep(time.Millisecond)
		}
		if got := woken(); !slices.Equal(got, want) {
			t.Errorf("%s woke %v, want %v", what, got, want)
		}
	}
	appendOne := func(ev store.Event) func() error {
		return func() error { _, err := a.AppendEvents(ctx, ev); return err }
	}
	notify("an event of run_2 (acme)", appendOne(store.Event{Type: "x", RunID: "run_2"}), "acme", "all")
	notify("an event of the store, default tenant", appendOne(store.Event{Type: "x"}), "all", "default")
	notify("an event of run_1", appendOne(store.Event{Type: "x", RunID: "run_1"}), "all", "default", "run_1")
	raw := rawConn(t, url)
	notify("a NOTIFY that is not a notice", func() error {
		_, err := raw.Exec(ctx, `SELECT pg_notify($1, 'not json')`, postgres.Channel)
		return err
	}, "acme", "all", "default", "run_1")
}

// The store's sessions end a transaction left idle, unless the URL says
// otherwise.
func TestIdleInTransactionTimeout(t *testing.T) {
	db := pgtest.Database(t)
	for _, tc := range []struct{ url, want string }{
		{db, "1min"},
		{db + "&idle_in_transaction_session_timeout=5000", "5s"},
	} {
		s := open(t, tc.url, nil)
		got := postgres.Setting(t, s, "idle_in_transaction_session_timeout")
		s.Close()
		if got != tc.want {
			t.Errorf("%s: idle_in_transaction_session_timeout = %q, want %q", tc.url, got, tc.want)
		}
	}
}

// A database of version 1 kept who decided as text; migrated, it reads
// those as principals, and an administrator's answer kept then as one name
// ("alice (by root with --admin)") gets its actor back.
func TestDecidedByTextStillReads(t *testing.T) {
	url := pgtest.Database(t)
	s := open(t, url, nil)
	var approvals []store.Approval
	olds := []string{"alice", "alice (by root with --admin)", "flag:--approve=yes", "person:bob"}
	for i := range olds {
		approvals = append(approvals, store.Approval{ID: fmt.Sprintf("req_%d", i), CallID: "call_1", Tool: "transfer_funds", Digest: "sha256:x", Kind: tool.KindApproval, Prompt: "Allow?"})
	}
	if _, err := s.CreateRun(ctx, store.CreateRunRequest{Run: store.Run{ID: "run_1", Status: store.RunPending}, Approvals: approvals}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// Back to version 1: no actor column, no MAC, who decided as text.
	c := rawConn(t, url)
	for _, q := range []string{`DROP TABLE layer_rules, layer_changes`, `ALTER TABLE approvals DROP COLUMN actor`, `ALTER TABLE approvals DROP COLUMN mac`, `UPDATE schema_version SET version = 1`} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for i, by := range olds {
		if _, err := c.Exec(ctx, `UPDATE approvals SET status = 'approved', decided_by = $1 WHERE id = $2`, by, fmt.Sprintf("req_%d", i)); err != nil {
			t.Fatal(err)
		}
	}

	s = open(t, url, nil)
	defer s.Close()
	type who struct{ By, Actor tool.Principal }
	var got []who
	for a, err := range store.AllApprovals(ctx, s, store.ApprovalFilter{RunID: "run_1"}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, who{a.DecidedBy, a.Actor})
		// Decided before decisions were sealed: declined, never run.
		if ans, _ := a.Answer(); !a.Unverified || ans.OK {
			t.Errorf("%s, decided before the upgrade: unverified %v, answer %+v", a.ID, a.Unverified, ans)
		}
	}
	person := func(n string) tool.Principal { return tool.Principal{Kind: tool.PrincipalPerson, Name: n} }
	want := []who{
		{By: person("alice")},
		{By: person("alice"), Actor: person("root")},
		{By: tool.Principal{Kind: tool.PrincipalFlag, Name: "--approve=yes"}},
		{By: person("bob")},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("principals read from text (-want +got):\n%s", d)
	}
	var v int
	if err := c.QueryRow(ctx, `SELECT version FROM schema_version`).Scan(&v); err != nil || v != postgres.SchemaVersion {
		t.Fatalf("schema version %d, %v; want %d", v, err, postgres.SchemaVersion)
	}
}

// A waiter that read every event notified waits for the next notice
// before reading the log (the log's follower waits right after each read,
// and that first read found nothing every time), and a notice of an event
// it selects ends its wait without a read; one behind reads at once;
// after the listener was lost and came back, a waiter reads before it
// waits, since notices may have been missed meanwhile.
func TestWaitAfterTheLastNoticeWaitsBeforeReading(t *testing.T) {
	url := pgtest.Database(t)
	a, b := open(t, url, nil), open(t, url, nil)
	defer a.Close()
	defer b.Close()
	appendOne := func() int64 {
		t.Helper()
		n := postgres.Notified(b)
		seqs, err := a.AppendEvents(ctx, store.Event{Type: "x"})
		if err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "b never got the notice of the append", func() bool { return postgres.Notified(b) > n })
		return seqs[0]
	}
	waitListening := func() {
		t.Helper()
		waitUntil(t, "b's listener never started", func() bool { return postgres.Listening(b) })
	}
	_, unregister := postgres.Register(b, store.EventFilter{AllTenants: true}) // starts b's listener
	defer unregister()
	waitListening()
	seq := appendOne()
	reads := func(f store.EventFilter) (int64, error) {
		q := postgres.WaitQueries(b)
		wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		err := b.WaitEvents(wctx, f)
		return postgres.WaitQueries(b) - q, err
	}
	if n, err := reads(store.EventFilter{AllTenants: true, AfterSeq: seq}); n != 0 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a waiter after the last notice: %d reads, %v; want none, and to wait", n, err)
	}
	if n, err := reads(store.EventFilter{AllTenants: true, AfterSeq: seq - 1}); n != 1 || err != nil {
		t.Fatalf("a waiter behind the last notice: %d reads, %v; want one that finds it", n, err)
	}
	q := postgres.WaitQueries(b)
	got, stop := waitStarted(b, store.EventFilter{AllTenants: true, AfterSeq: seq})
	defer stop()
	for deadline := time.Now().Add(time.Minute); postgres.Waiters(b) < 2; { // registered, beside the test's own
		if time.Now().After(deadline) {
			t.Fatal("the waiter never registered")
		}
		time.Sleep(time.Millisecond)
	}
	next := appendOne()
	if err := <-got; err != nil {
		t.Fatalf("the waiter after the last notice, at the next: %v", err)
	}
	if n := postgres.WaitQueries(b) - q; n != 0 {
		t.Fatalf("the waiter woken by a notice of an event it selects read the log %d times, want none", n)
	}
	// The listener lost: an event appended with no one listening sends a
	// notice no one gets; once listening again, a waiter reads first.
	raw := rawConn(t, url)
	for postgres.Listening(b) {
		if _, err := raw.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = $1`, postgres.ListenerName); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := a.AppendEvents(ctx, store.Event{Type: "missed"}); err != nil {
		t.Fatal(err)
	}
	waitListening()
	if n, err := reads(store.EventFilter{AllTenants: true, AfterSeq: next}); n != 1 || err != nil {
		t.Fatalf("a waiter once the listener came back: %d reads, %v; want one that finds the event appended meanwhile", n, err)
	}
}

// Stores of two schemas share a database's channel: a notice of the other
// log neither stands for this log's Seqs (a waiter behind this log reads
// it) nor ends a wait (this log has no event).
func TestNoticesOfAnotherSchemaAreNotThisLogs(t *testing.T) {
	url := pgtest.Database(t)
	if _, err := rawConn(t, url).Exec(ctx, `CREATE SCHEMA sa; CREATE SCHEMA sb`); err != nil {
		t.Fatal(err)
	}
	inSchema := func(schema string) string {
		if strings.Contains(url, "?") {
			return url + "&search_path=" + schema
		}
		return url + "?search_path=" + schema
	}
	a, b := open(t, inSchema("sa"), nil), open(t, inSchema("sb"), nil)
	defer a.Close()
	defer b.Close()
	for range 20 { // a's log: Seqs 1 to 20, past all of b's
		if _, err := a.AppendEvents(ctx, store.Event{Type: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	for range 10 { // b's log: Seqs 1 to 10
		if _, err := b.AppendEvents(ctx, store.Event{Type: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	_, unregister := postgres.Register(b, store.EventFilter{AllTenants: true})
	defer unregister()
	waitUntil(t, "b's listener never started", func() bool { return postgres.Listening(b) })
	n := postgres.Notified(b)
	if _, err := a.AppendEvents(ctx, store.Event{Type: "other"}); err != nil { // a's Seq 21
		t.Fatal(err)
	}
	waitUntil(t, "b never got a's notice", func() bool { return postgres.Notified(b) > n })
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := b.WaitEvents(wctx, store.EventFilter{AllTenants: true, AfterSeq: 5}); err != nil {
		t.Fatalf("b's events 6 to 10 are there: WaitEvents %v, want nil at once", err)
	}
	got, stop := waitStarted(b, store.EventFilter{AllTenants: true, AfterSeq: 10})
	defer stop()
	waitUntil(t, "the waiter never registered", func() bool { return postgres.Waiters(b) >= 2 })
	n = postgres.Notified(b)
	if _, err := a.AppendEvents(ctx, store.Event{Type: "other"}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "b never got a's notice", func() bool { return postgres.Notified(b) > n })
	select {
	case err := <-got:
		t.Fatalf("b has no event after 10, yet WaitEvents returned %v on a's notice", err)
	case <-time.After(200 * time.Millisecond):
	}
}

// A NOTIFY any user of the database may send, naming the log with Seqs
// below its last, does not make a waiter behind the log wait unread: the
// listener knows the log's last Seq from its counter, and notices only
// raise it; after a notice without Seqs (an older build's), it knows it no
// longer.
func TestForgedNoticeDoesNotHideEvents(t *testing.T) {
	url := pgtest.Database(t)
	a, b := open(t, url, nil), open(t, url, nil)
	defer a.Close()
	defer b.Close()
	for range 10 { // before b listens: Seqs 1 to 10
		if _, err := a.AppendEvents(ctx, store.Event{Type: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	_, unregister := postgres.Register(b, store.EventFilter{AllTenants: true})
	defer unregister()
	waitUntil(t, "b's listener never started", func() bool { return postgres.Listening(b) })
	n := postgres.Notified(b)
	var schema string
	raw := rawConn(t, url)
	if err := raw.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(ctx, `SELECT pg_notify($1, $2)`, postgres.Channel, `{"tenants":[""],"runs":[],"log":"`+schema+`","first":1,"last":1}`); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "b never got the forged notice", func() bool { return postgres.Notified(b) > n })
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := b.WaitEvents(wctx, store.EventFilter{AllTenants: true, AfterSeq: 5}); err != nil {
		t.Fatalf("events 6 to 10 are there: WaitEvents %v, want nil at once", err)
	}
	// An append of an older build, whose notice says no Seqs: the
	// listener no longer knows the log's last Seq, and a waiter reads.
	n = postgres.Notified(b)
	if _, err := raw.Exec(ctx, `BEGIN;
		UPDATE counters SET last = last + 1 WHERE name = 'events';
		INSERT INTO events (seq, tenant, type, time) SELECT last, '', 'older', now() FROM counters WHERE name = 'events';
		SELECT pg_notify('`+postgres.Channel+`', '{"tenants":[""],"runs":[]}');
		COMMIT`); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "b never got the older build's notice", func() bool { return postgres.Notified(b) > n })
	if err := b.WaitEvents(wctx, store.EventFilter{AllTenants: true, AfterSeq: 10}); err != nil {
		t.Fatalf("event 11 is there, noticed without Seqs: WaitEvents %v, want nil at once", err)
	}
	// The listener read the counter after that notice: a waiter past
	// event 11 waits without reading again.
	waitUntil(t, "the listener never read the log's last Seq after a notice without Seqs", func() bool { return postgres.CaughtUp(b, 11) })
	q := postgres.WaitQueries(b)
	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelShort()
	if err := b.WaitEvents(short, store.EventFilter{AllTenants: true, AfterSeq: 11}); !errors.Is(err, context.DeadlineExceeded) || postgres.WaitQueries(b) != q {
		t.Fatalf("a waiter past the last event: %v after %d reads; want to wait, unread", err, postgres.WaitQueries(b)-q)
	}
}

// appendWhileWaiting starts a waiter of f on s, appends with app once it is
// registered, and returns what WaitEvents returned (within 10 s).
func appendWhileWaiting(t *testing.T, s store.Store, f store.EventFilter, app func()) error {
	t.Helper()
	_, unregister := postgres.Register(s, store.EventFilter{AllTenants: true})
	defer unregister()
	waitUntil(t, "the listener never started", func() bool { return postgres.Listening(s) })
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.WaitEvents(wctx, f) }()
	waitUntil(t, "the waiter never registered", func() bool { return postgres.Waiters(s) >= 2 })
	app()
	return <-done
}

// A schema created after a store opened, where the default search_path
// ("$user", public) puts the tables of a store opened later: both stores'
// statements then name the same tables, while the first's notices name
// "public". A waiter of the second is woken by the first's appends.
func TestNoticesOfTheSameTablesUnderAnotherName(t *testing.T) {
	url := pgtest.Database(t)
	raw := rawConn(t, url)
	var user string
	if err := raw.QueryRow(ctx, `SELECT current_user`).Scan(&user); err != nil {
		t.Fatal(err)
	}
	a := open(t, url, nil)
	defer a.Close()
	if _, err := a.AppendEvents(ctx, store.Event{Type: "before"}); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{user}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	b := open(t, url, nil)
	defer b.Close()
	err := appendWhileWaiting(t, b, store.EventFilter{AllTenants: true}, func() {
		if _, err := a.AppendEvents(ctx, store.Event{Type: "x"}); err != nil {
			t.Fatal(err)
		}
	})
	if err != nil {
		t.Fatalf("an append through the first store: WaitEvents of the second %v, want nil", err)
	}
}

// A schema whose name is not UTF-8 (a SQL_ASCII database): its notices'
// JSON names it otherwise, and the store's own appends still wake it.
func TestNoticesOfASchemaNamedInAnotherEncoding(t *testing.T) {
	admin, err := pgx.Connect(ctx, pgtest.AdminURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	const name = "tollgate_ascii"
	_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name+" ENCODING 'SQL_ASCII' TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C'"); err != nil {
		t.Fatal(err)
	}
	defer admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	u, err := url.Parse(pgtest.AdminURL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	if _, err := rawConn(t, u.String()).Exec(ctx, "CREATE SCHEMA \"s\xe9\"; ALTER DATABASE "+name+" SET search_path = \"s\xe9\""); err != nil {
		t.Fatal(err)
	}
	s := open(t, u.String(), nil)
	defer s.Close()
	err = appendWhileWaiting(t, s, store.EventFilter{AllTenants: true}, func() {
		if _, err := s.AppendEvents(ctx, store.Event{Type: "x"}); err != nil {
			t.Fatal(err)
		}
	})
	if err != nil {
		t.Fatalf("WaitEvents %v, want nil: the store's own append", err)
	}
}

// A waiter's read of a long log walks the Seq index from its place, in the
// generic plan a prepared statement takes after a few runs too (a SELECT
// EXISTS was a scan of the whole table there: 50 ms for 85,000 events).
func TestWaitReadUsesTheIndex(t *testing.T) {
	url := pgtest.Database(t)
	s := open(t, url, nil)
	defer s.Close()
	raw := rawConn(t, url)
	if _, err := raw.Exec(ctx, `INSERT INTO events (seq, tenant, type, time) SELECT g, '', 'x', now() FROM generate_series(1, 20000) g;
		UPDATE counters SET last = 20000 WHERE name = 'events'; ANALYZE events`); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	for i, f := range []store.EventFilter{{AllTenants: true, AfterSeq: 20000}, {Tenant: "", AfterSeq: 20000}, {AllTenants: true, RunID: "run_1", AfterSeq: 20000}} {
		q, args := postgres.WaitQuery(f)
		ps, err := raw.Prepare(ctx, fmt.Sprint("wait", i), q)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := raw.Query(ctx, "EXPLAIN EXECUTE "+pgx.Identifier{ps.Name}.Sanitize()+"("+literals(args)+")")
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		rows.Close()
		if text := strings.Join(plan, "\n"); strings.Contains(text, "Seq Scan") || !strings.Contains(text, "Index") {
			t.Errorf("filter %+v: the generic plan of %q is\n%s\nwant an index scan", f, q, text)
		}
	}
}

// literals returns args as SQL literals, separated by commas (strings
// without quotes in them, and integers).
func literals(args []any) string {
	var out []string
	for _, a := range args {
		switch v := a.(type) {
		case string:
			out = append(out, "'"+v+"'")
		default:
			out = append(out, fmt.Sprint(v))
		}
	}
	return strings.Join(out, ", ")
}

// waitUntil polls done until it holds, and fails the test with msg if it
// has not within a minute.
func waitUntil(t *testing.T, msg string, done func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !done(); {
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
		time.Sleep(time.Millisecond)
	}
}
