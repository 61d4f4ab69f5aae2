package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/sqlite"
)

// ExpireApprovals finds the due approvals in SQL: an approval that is not
// due is not even read (here, one whose stored request no longer decodes
// does not stop the expiry of another), and the boundary is exact to the
// nanosecond, below the milliseconds SQLite's date functions keep.
func TestExpireReadsOnlyDueApprovals(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tollgate.db")
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	now := t0
	s, err := sqlite.Open(ctx, path, &store.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := func(d time.Duration) *time.Time { t := t0.Add(d); return &t }
	if _, err := s.CreateRun(ctx, store.CreateRunRequest{Run: store.Run{ID: "run_1", Status: store.RunPending}, Approvals: []store.Approval{
		{ID: "req_due", Digest: "d", ExpiresAt: at(time.Minute)},
		{ID: "req_nearly", Digest: "d", ExpiresAt: at(time.Minute + time.Nanosecond)},
		{ID: "req_later", Digest: "d", ExpiresAt: at(time.Hour)},
	}}); err != nil {
		t.Fatal(err)
	}
	exec(t, rawDB(t, path), `UPDATE approvals SET request = 'not json' WHERE id = 'req_later'`)
	now = t0.Add(time.Minute)
	got, err := s.ExpireApprovals(ctx)
	if err != nil || len(got) != 1 || got[0].ID != "req_due" || got[0].Status != store.StatusExpired {
		t.Fatalf("ExpireApprovals at the first expiry: %+v, %v; want req_due alone, without reading req_later", got, err)
	}
	now = now.Add(time.Nanosecond)
	if got, err := s.ExpireApprovals(ctx); err != nil || len(got) != 1 || got[0].ID != "req_nearly" {
		t.Fatalf("ExpireApprovals a nanosecond later: %+v, %v; want req_nearly", got, err)
	}
}

// BenchmarkExpireApprovals is one expiry tick over 2,000 pending approvals
// none of which is due.
func BenchmarkExpireApprovals(b *testing.B) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "tollgate.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	later := time.Now().Add(time.Hour)
	for i := range 100 {
		var as []store.Approval
		for j := range 20 {
			as = append(as, store.Approval{ID: fmt.Sprintf("req_%d", j), Digest: "d", ExpiresAt: &later})
		}
		if _, err := s.CreateRun(ctx, store.CreateRunRequest{Run: store.Run{ID: fmt.Sprintf("run_%d", i), Status: store.RunPending}, Approvals: as}); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if got, err := s.ExpireApprovals(ctx); err != nil || len(got) != 0 {
			b.Fatal(got, err)
		}
	}
}
