package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"runtime"
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
	st, err := Open(ctx, filepath.Join(t.TempDir(), "runs.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := st.(*sqliteStore)
	if _, err := s.CreateRun(ctx, store.CreateRunRequest{Run: store.Run{ID: "run_1", Status: store.RunPending, State: json.RawMessage(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	// A write that holds the lead until the others have queued.
	release, leading := make(chan struct{}), make(chan struct{})
	go s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		close(leading)
		<-release
		return nil
	})
	<-leading
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
	close(release)
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
