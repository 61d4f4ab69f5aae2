package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/sqlite"
	"github.com/tollgate-dev/tollgate/store/storetest"
	"github.com/tollgate-dev/tollgate/tool"
)

func TestSuite(t *testing.T) {
	storetest.Run(t, func(t *testing.T, opts *store.Options) store.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "state", "tollgate.db"), opts)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// Two handles on one file stand for two processes: data written by one is
// seen by the other, and a race between them on one approval has one winner.
func TestTwoHandlesOneFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tollgate.db")
	a, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := a.CreateRun(ctx, store.CreateRunRequest{Run: store.Run{ID: "run_1", Status: store.RunPending}, Approvals: []store.Approval{{ID: "req_1", Digest: "d"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Decide(ctx, "run_1", "req_1", store.Answer{Approve: true, By: tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins, losses := 0, 0
	for i := 0; i < 20; i++ {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Consume(ctx, "run_1", "req_1", "d")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, store.ErrUsed):
				losses++
			default:
				t.Errorf("Consume: %v", err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 || losses != 19 {
		t.Fatalf("wins %d, losses %d; want 1 and 19", wins, losses)
	}
}

func TestOpenRefusesQuestionMark(t *testing.T) {
	if _, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "a?b.db"), nil); err == nil {
		t.Fatal("Open accepted a path with '?'")
	}
}

func TestSuiteShared(t *testing.T) {
	storetest.RunShared(t, func(t *testing.T, opts *store.Options) (store.Store, store.Store) {
		path := filepath.Join(t.TempDir(), "tollgate.db")
		a, err := sqlite.Open(context.Background(), path, opts)
		if err != nil {
			t.Fatal(err)
		}
		b, err := sqlite.Open(context.Background(), path, opts)
		if err != nil {
			a.Close()
			t.Fatal(err)
		}
		return a, b
	})
}
