package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/pgtest"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/store/postgres"
	"github.com/tollgate-dev/tollgate/store/sqlite"
	"github.com/tollgate-dev/tollgate/tool"
)

// benchStores returns the three stores to compare, each new and empty.
func benchStores(b *testing.B) []struct {
	name string
	open func(b *testing.B) store.Store
} {
	return []struct {
		name string
		open func(b *testing.B) store.Store
	}{
		{"memory", func(b *testing.B) store.Store { return memory.New(nil) }},
		{"sqlite", func(b *testing.B) store.Store {
			s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "tollgate.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
		{"postgres", func(b *testing.B) store.Store {
			s, err := postgres.Open(context.Background(), pgtest.Database(b), nil)
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
	}
}

// pendingApprovals stores n pending approvals, in runs of up to 500, and
// returns their (run, request) IDs.
func pendingApprovals(b *testing.B, s store.Store, n int) [][2]string {
	var out [][2]string
	for r := 0; len(out) < n; r++ {
		run := fmt.Sprintf("run_%d", r)
		var as []store.Approval
		for i := 0; i < 500 && len(out) < n; i++ {
			id := fmt.Sprintf("req_%d", i)
			as = append(as, store.Approval{ID: id, CallID: "call_" + id, Tool: "transfer_funds", Digest: "sha256:" + id})
			out = append(out, [2]string{run, id})
		}
		if _, err := s.CreateRun(context.Background(), store.CreateRunRequest{Run: store.Run{ID: run, Status: store.RunPending}, Approvals: as}); err != nil {
			b.Fatal(err)
		}
	}
	return out
}

// BenchmarkDecide measures Decide (a transaction that locks the approval,
// writes the decision and appends its event), one caller at a time and
// from GOMAXPROCS callers at once (-parallel).
func BenchmarkDecide(b *testing.B) {
	ctx := context.Background()
	for _, st := range benchStores(b) {
		for _, parallel := range []bool{false, true} {
			name := st.name
			if parallel {
				name += "/parallel"
			}
			b.Run(name, func(b *testing.B) {
				s := st.open(b)
				defer s.Close()
				todo := pendingApprovals(b, s, b.N)
				var next atomic.Int64
				decide := func() {
					k := todo[next.Add(1)-1]
					if _, err := s.Decide(ctx, k[0], k[1], store.Answer{Approve: true, By: tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}}); err != nil {
						b.Error(err)
					}
				}
				b.ResetTimer()
				if parallel {
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							decide()
						}
					})
					return
				}
				for range b.N {
					decide()
				}
			})
		}
	}
}

// BenchmarkAppendEvents measures AppendEvents of one event of a run, one
// caller at a time and from GOMAXPROCS callers at once (-parallel).
func BenchmarkAppendEvents(b *testing.B) {
	ctx := context.Background()
	data := json.RawMessage(`{"tool":"bash","callId":"call_1","ms":12}`)
	for _, st := range benchStores(b) {
		for _, parallel := range []bool{false, true} {
			name := st.name
			if parallel {
				name += "/parallel"
			}
			b.Run(name, func(b *testing.B) {
				s := st.open(b)
				defer s.Close()
				if _, err := s.CreateRun(ctx, store.CreateRunRequest{Run: store.Run{ID: "run_1", Status: store.RunRunning}}); err != nil {
					b.Fatal(err)
				}
				appendOne := func() {
					if _, err := s.AppendEvents(ctx, store.Event{Type: "tool.result", RunID: "run_1", Data: data}); err != nil {
						b.Error(err)
					}
				}
				b.ResetTimer()
				if parallel {
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							appendOne()
						}
					})
					return
				}
				for range b.N {
					appendOne()
				}
			})
		}
	}
}
