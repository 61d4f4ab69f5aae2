package dbosengine_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/internal/pgtest"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/sqlite"
	"github.com/tollgate-dev/tollgate/tool"
)

// Two workers on one PostgreSQL take 200 runs, each of which waits for an
// approval. Once every run waits, one worker is SIGKILLed with its runs in
// flight; every answer is given (a second answer to each is refused), the
// live worker takes the dead one's runs over once its heartbeat is old
// enough, and every run finishes, those of the dead worker on the other
// one, with each turn and each tool call run once.
func TestTwoWorkersTakeOver(t *testing.T) {
	const n = 200
	c := newCluster(t, pgtest.Database(t), 160) // 2 × 160 ≥ 200 runs waiting at once
	c.startWorker("w1")
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%03d", i)
		c.start(keys[i])
	}
	reqs := make([]string, n)
	for i, k := range keys {
		reqs[i] = c.pending("run_" + k)
	}
	byWorker := map[string]int{}
	for _, k := range keys {
		_, where := c.counts(k)
		byWorker[where["turn 1"][0]]++
	}
	if byWorker["w0"] == 0 || byWorker["w1"] == 0 {
		t.Fatalf("the runs were not spread over both workers: %v", byWorker)
	}
	t.Logf("first turns: %v", byWorker)
	c.kill("w0")

	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	sem := make(chan struct{}, 16)
	for i, k := range keys {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			ctx := context.Background()
			if _, err := c.client.Answer(ctx, "run_"+k, reqs[i], store.Answer{Approve: true, By: tool.PrincipalOf("person:alice")}); err != nil {
				errs <- fmt.Errorf("%s: %w", k, err)
			}
			if _, err := c.client.Answer(ctx, "run_"+k, reqs[i], store.Answer{Approve: false, By: tool.PrincipalOf("person:mallory")}); !errors.Is(err, store.ErrDecided) {
				errs <- fmt.Errorf("%s: second answer: %v, want ErrDecided", k, err)
			}
		})
	}
	wg.Wait()
	// The answers to the dead worker's runs wait in the database for the
	// worker that takes them over.
	c.reaped("w0")
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, k := range keys {
		c.finished("run_" + k)
	}
	for i, k := range keys {
		got, where := c.counts(k)
		for _, what := range []string{"turn 1", "turn 2", "tool"} {
			if got[what] != 1 {
				t.Errorf("run %d: %s ran %d times, want once (%v)", i, what, got[what], where)
			}
		}
		if slices.Contains(where["turn 2"], "w0") || slices.Contains(where["tool"], "w0") {
			t.Errorf("run %d went on on the dead worker: %v", i, where)
		}
	}
}

// BenchmarkDurableThroughput: runs per second with 1, 2 and 4 worker
// processes on one PostgreSQL, against the mock model (two turns and one
// tool call per run, no approval).
func BenchmarkDurableThroughput(b *testing.B) {
	for _, workers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			c := newCluster(b, pgtest.Database(b), 64)
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

// BenchmarkRunLatency: the time of one run (two model turns, one tool
// call, no approval), one at a time: in process (runs.Host on the SQLite
// store, as tollgate run drives it), and durable, enqueued to one worker
// process on a SQLite or a PostgreSQL system database.
func BenchmarkRunLatency(b *testing.B) {
	b.Run("in-process", func(b *testing.B) {
		dir := b.TempDir()
		st, err := sqlite.Open(context.Background(), filepath.Join(dir, "store.db"), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		h, err := runs.New(st, testBuilder(dir), nil)
		if err != nil {
			b.Fatal(err)
		}
		cfg := runs.RunConfig{Version: runcore.ConfigVersion, AgentConfig: runs.AgentConfig{Model: runs.ModelRef{Provider: "mock", Name: "mock"}, Workdir: dir}}
		b.ResetTimer()
		for i := range b.N {
			res, err := h.Start(context.Background(), runs.StartRequest{RunID: fmt.Sprintf("run_free%d", i), Config: cfg, Prompt: fmt.Sprintf("key:free%d", i)})
			if err != nil || res.Status != agent.StatusDone {
				b.Fatalf("run %d: %v %v", i, res, err)
			}
		}
	})
	for _, db := range []string{"sqlite", "postgres"} {
		b.Run("durable-"+db, func(b *testing.B) {
			url := "sqlite:" + filepath.Join(b.TempDir(), "dbos.db")
			if db == "postgres" {
				url = pgtest.Database(b)
			}
			c := newCluster(b, url, 0)
			b.ResetTimer()
			for i := range b.N {
				c.finished(c.start(fmt.Sprintf("free%d", i)))
			}
		})
	}
}
