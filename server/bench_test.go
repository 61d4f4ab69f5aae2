package server_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/server"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/sqlite"
)

// benchRuns is how many runs each benchmark starts at once.
// benchRuns is how many runs the benchmarks start at once (the tenant's
// cap of running runs is raised to it: a start past the cap was 429, and
// the benchmark waited for a run that never started).
const benchRuns = 1000

// BenchmarkConcurrentRuns starts benchRuns runs at once over the HTTP API
// against a mock model (one allowed tool call, then an answer) and waits
// until every one is done: ms/run is the wall time of the batch divided by
// the runs; p50-ms and max-ms are single runs' latencies from POST to the
// stored end.
func BenchmarkConcurrentRuns(b *testing.B) {
	m := testkit.Script([]model.FuncCall{testkit.Call("c1", "lookup", nil)})
	f := newFixture(b, nil, m, &server.Options{MaxRunsPerTenant: benchRuns})
	var lat []time.Duration
	b.ResetTimer()
	for range b.N {
		w := watch(b, f.store, runcore.EventRunFinished, benchRuns)
		start := time.Now()
		started := make(map[string]time.Time, benchRuns)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range benchRuns {
			wg.Go(func() {
				t0 := time.Now()
				id := benchStart(f)
				mu.Lock()
				started[id] = t0
				mu.Unlock()
			})
		}
		wg.Wait()
		<-w.done
		b.ReportMetric(float64(time.Since(start).Microseconds())/1000/benchRuns, "ms/run")
		for id, t0 := range started {
			lat = append(lat, w.at[id].Sub(t0))
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
}

// BenchmarkIdlePendingRun starts benchRuns runs that halt on an approval and
// measures what they hold once idle: the heap (the in-memory store keeps
// each run's state and approval; the server keeps nothing), B/pending-run,
// and goroutines.
func BenchmarkIdlePendingRun(b *testing.B) {
	for range b.N {
		f := newFixture(b, nil, nil, &server.Options{MaxRunsPerTenant: benchRuns})
		w := watch(b, f.store, runcore.EventRunHalted, benchRuns)
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		g0 := runtime.NumGoroutine()
		var wg sync.WaitGroup
		for range benchRuns {
			wg.Go(func() { benchStart(f) })
		}
		wg.Wait()
		<-w.done
		http.DefaultClient.CloseIdleConnections()
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/benchRuns, "B/pending-run")
		b.ReportMetric(float64(runtime.NumGoroutine()-g0), "goroutines-held")
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = f.srv.Shutdown(sctx)
		cancel()
	}
}

func benchStart(f *fixture) string {
	var v serverapi.RunView
	if code := f.do("POST", "/v1/runs", aliceToken, serverapi.StartRunRequest{Agent: "payer", Prompt: "go"}, &v); code != http.StatusCreated {
		panic(fmt.Sprintf("start: %d", code))
	}
	return v.ID
}

// logEnds holds, for each store watched, the last event watch found
// there, so that the next watch reads on from it rather than the whole log
// again (a benchmark's setup grew with each iteration).
var logEnds sync.Map

// watcher follows the event log and notes when each run's event of a type
// arrives; done closes after want of them.
type watcher struct {
	at   map[string]time.Time
	done chan struct{}
}

func watch(tb testing.TB, s store.Store, typ string, want int) *watcher {
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	var from int64 // the last event stored so far
	if v, ok := logEnds.Load(s); ok {
		from = v.(int64)
	}
	for {
		evs, _ := s.ListEvents(ctx, store.EventFilter{AllTenants: true, AfterSeq: from, Limit: store.MaxLimit})
		if len(evs) == 0 {
			break
		}
		from = evs[len(evs)-1].Seq
	}
	logEnds.Store(s, from)
	w := &watcher{at: map[string]time.Time{}, done: make(chan struct{})}
	go func() {
		after := from
		for {
			evs, err := s.ListEvents(ctx, store.EventFilter{AllTenants: true, AfterSeq: after, Limit: store.MaxLimit})
			if err != nil {
				return
			}
			for _, e := range evs {
				after = e.Seq
				if e.Type == typ {
					w.at[e.RunID] = time.Now()
					if len(w.at) == want {
						close(w.done)
						return
					}
				}
			}
			if len(evs) == 0 {
				if s.WaitEvents(ctx, store.EventFilter{AllTenants: true, AfterSeq: after}) != nil {
					return
				}
			}
		}
	}()
	return w
}

// BenchmarkDecision measures, on a SQLite store (tollgate serve's
// default), the time from a decision's POST to its run's end (the stored
// run.finished): one decision at a time (inflight=1), and 20 sent at once
// to 20 halted runs (inflight=20). Each run halts on the approval of one
// transfer, and ends after it with one more model turn. p50-ms, p99-ms;
// cpu-ms, the CPU time of this process (server, store and the benchmark's
// clients) from the decisions' POSTs to their runs' ends, per decision.
func BenchmarkDecision(b *testing.B) {
	for _, inflight := range []int{1, 20} {
		b.Run(fmt.Sprintf("inflight=%d", inflight), func(b *testing.B) {
			st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "runs.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = st.Close() })
			f := newFixture(b, st, nil, nil)
			var lat []time.Duration
			var cpu time.Duration
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				ids := make([]string, inflight)
				aps := make([]serverapi.ApprovalView, inflight)
				for i := range ids {
					ids[i] = benchStart(f)
				}
				for i, id := range ids {
					aps[i] = f.pending(id)
				}
				w := watch(b, f.store, runcore.EventRunFinished, inflight)
				t0 := make([]time.Time, inflight)
				c0 := cpuTime()
				b.StartTimer()
				var wg sync.WaitGroup
				for i := range ids {
					wg.Go(func() {
						t0[i] = time.Now()
						var got serverapi.ApprovalView
						if code := f.do("POST", "/v1/approvals/"+aps[i].ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: aps[i].ArgsDigest}, &got); code != http.StatusOK {
							panic(fmt.Sprintf("decision: %d", code))
						}
					})
				}
				wg.Wait()
				<-w.done
				cpu += cpuTime() - c0
				for i, id := range ids {
					lat = append(lat, w.at[id].Sub(t0[i]))
				}
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N*inflight), "cpu-ms")
		})
	}
}

// cpuTime is the CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
