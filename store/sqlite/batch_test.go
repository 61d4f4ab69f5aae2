package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/tollgate-dev/tollgate/store"
)

// queued returns how many writes wait for the next batch.
func (s *sqliteStore) queued() int {
	s.writes.mu.Lock()
	defer s.writes.mu.Unlock()
	return len(s.writes.queue)
}

// Writes that queue while a batch commits are committed together, in one
// transaction; one that fails, panics or whose context ended changes
// nothing, and the others of its batch are stored.
func TestWritesQueuedCommitTogether(t *testing.T) {
	ctx := context.Background()
	s := openWithRun(t)
	release := holdLead(s) // until the others have queued
	before := s.writes.commits.Load()
	const n = 20
	cancelled, cancel := context.WithCancel(ctx)
	errs := make([]error, n+3)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = s.AppendEvents(ctx, store.Event{RunID: "run_1", Type: "test.queued"})
		})
	}
	wg.Go(func() { _, errs[n] = s.AppendEvents(ctx, store.Event{RunID: "run_nope", Type: "test.queued"}) })
	wg.Go(func() {
		errs[n+1] = s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO events (tenant, run_id, type, time) VALUES ('', 'run_1', 'test.panicked', '')`); err != nil {
				return err
			}
			panic("a write's bug")
		})
	})
	wg.Go(func() { _, errs[n+2] = s.AppendEvents(cancelled, store.Event{RunID: "run_1", Type: "test.cancelled"}) })
	for s.queued() < n+3 {
		runtime.Gosched()
	}
	cancel()
	release()
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("write %d: %v", i, errs[i])
		}
	}
	if !errors.Is(errs[n], store.ErrNotFound) || errs[n+1] == nil || !errors.Is(errs[n+2], context.Canceled) {
		t.Fatalf("the failing writes returned %v, %v, %v; want not found, the panic, cancelled", errs[n], errs[n+1], errs[n+2])
	}
	if got := s.writes.commits.Load() - before; got != 2 {
		t.Fatalf("%d transactions committed the lead and %d queued writes, want 2", got, n+3)
	}
	evs, err := s.ListEvents(ctx, store.EventFilter{AllTenants: true, RunID: "run_1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != n {
		t.Fatalf("%d events stored, want the %d of the writes that succeeded", len(evs), n)
	}
	for i, e := range evs {
		if e.Type != "test.queued" || (i > 0 && e.Seq != evs[i-1].Seq+1) {
			t.Fatalf("event %d: %s at %d", i, e.Type, e.Seq)
		}
	}
}

// openWithRun opens a store in a temporary directory with one run, run_1,
// to append events to.
func openWithRun(t *testing.T) *sqliteStore {
	t.Helper()
	s := openInternal(t)
	if _, err := s.CreateRun(context.Background(), store.CreateRunRequest{Run: store.Run{ID: "run_1", Status: store.RunPending, State: json.RawMessage(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	return s
}

// openInternal opens a store in a temporary directory, closed when the
// test ends.
func openInternal(t *testing.T) *sqliteStore {
	t.Helper()
	st, err := Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st.(*sqliteStore)
}

// holdLead starts a write that holds the lead until release is called, so
// that the writes made meanwhile queue for the batches after it.
func holdLead(s *sqliteStore) (release func()) {
	hold, leading := make(chan struct{}), make(chan struct{})
	go s.tx(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		close(leading)
		<-hold
		return nil
	})
	<-leading
	return func() { close(hold) }
}

// waitQueued waits until n writes wait for the next batch.
func waitQueued(s *sqliteStore, n int) {
	for s.queued() < n {
		runtime.Gosched()
	}
}

// events returns run_1's events, oldest first.
func events(t *testing.T, s *sqliteStore) []store.Event {
	t.Helper()
	evs, err := s.ListEvents(context.Background(), store.EventFilter{AllTenants: true, RunID: "run_1", Limit: store.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// More writes than a batch holds are committed in as many batches as
// they fill, none lost, and each caller gets its own outcome: its own
// event's seq, or its own error.
func TestWritesBeyondOneBatch(t *testing.T) {
	ctx := context.Background()
	s := openWithRun(t)
	release := holdLead(s)
	before := s.writes.commits.Load()
	const n = 100 // a batch of 64 and one of 36
	seqs, errs := make([]int64, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		run := "run_1"
		if i%10 == 9 {
			run = "run_nope" // fails: no such run
		}
		wg.Go(func() {
			got, err := s.AppendEvents(ctx, store.Event{RunID: run, Type: "test.queued", Data: json.RawMessage(strconv.Itoa(i))})
			if len(got) == 1 {
				seqs[i] = got[0]
			}
			errs[i] = err
		})
	}
	waitQueued(s, n)
	release()
	wg.Wait()
	if got := s.writes.commits.Load() - before; got != 3 {
		t.Fatalf("%d transactions committed the lead and %d queued writes, want 3", got, n)
	}
	stored := map[int64]string{}
	for _, e := range events(t, s) {
		stored[e.Seq] = string(e.Data)
	}
	for i := range n {
		switch {
		case i%10 == 9 && !errors.Is(errs[i], store.ErrNotFound):
			t.Errorf("write %d (no such run): %v, want not found", i, errs[i])
		case i%10 != 9 && (errs[i] != nil || stored[seqs[i]] != strconv.Itoa(i)):
			t.Errorf("write %d: seq %d holding %q, error %v; want its own event", i, seqs[i], stored[seqs[i]], errs[i])
		}
	}
	if want := n - n/10; len(stored) != want {
		t.Fatalf("%d events stored, want %d", len(stored), want)
	}
}

// A batch whose commit fails stores nothing, and each of its callers is
// told so; the writes after it are stored. The commit fails on a
// foreign key whose check one write deferred to the commit (an approval
// of no run).
func TestWritesOfAFailedCommit(t *testing.T) {
	ctx := context.Background()
	s := openWithRun(t)
	release := holdLead(s)
	const n = 5
	errs := make([]error, n+1)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { _, errs[i] = s.AppendEvents(ctx, store.Event{RunID: "run_1", Type: "test.queued"}) })
	}
	wg.Go(func() {
		errs[n] = s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `PRAGMA defer_foreign_keys = ON`); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO approvals (run_id, id, call_id, tool, digest, kind, prompt, request, status, created_at, updated_at)
				VALUES ('run_nope', 'ap_1', 'call_1', 'bash', '', 'tool', '', '{}', 'pending', '', '')`)
			return err
		})
	})
	waitQueued(s, n+1)
	release()
	wg.Wait()
	for i, err := range errs {
		if err == nil {
			t.Errorf("write %d of the batch that did not commit: no error", i)
		}
	}
	if evs := events(t, s); len(evs) != 0 {
		t.Fatalf("%d events stored by a batch that did not commit", len(evs))
	}
	if _, err := s.AppendEvents(ctx, store.Event{RunID: "run_1", Type: "test.after"}); err != nil {
		t.Fatalf("a write after the failed batch: %v", err)
	}
}

// A write that loses its batch's transaction (as SQLite rolls back the
// whole transaction when it interrupts a statement that writes; here the
// write rolls it back itself) fails its whole batch: the writes before it
// are not stored, those after it are not run, and each caller is told.
func TestWritesOfALostTransaction(t *testing.T) {
	ctx := context.Background()
	s := openWithRun(t)
	release := holdLead(s)
	const n = 5
	errs := make([]error, 2*n+1)
	var wg sync.WaitGroup
	appendTo := func(from int) {
		for i := from; i < from+n; i++ {
			wg.Go(func() { _, errs[i] = s.AppendEvents(ctx, store.Event{RunID: "run_1", Type: "test.queued"}) })
		}
		waitQueued(s, from+n)
	}
	appendTo(0)
	wg.Go(func() {
		errs[n] = s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `ROLLBACK`)
			return err
		})
	})
	waitQueued(s, n+1)
	appendTo(n + 1)
	release()
	wg.Wait()
	for i, err := range errs {
		if err == nil {
			t.Errorf("write %d of the batch whose transaction was lost: no error", i)
		}
	}
	if evs := events(t, s); len(evs) != 0 {
		t.Fatalf("%d events stored by a batch whose transaction was lost", len(evs))
	}
	if _, err := s.AppendEvents(ctx, store.Event{RunID: "run_1", Type: "test.after"}); err != nil {
		t.Fatalf("a write after the lost batch: %v", err)
	}
}
