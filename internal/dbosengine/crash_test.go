package dbosengine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/pgtest"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// The crash matrix: a worker is SIGKILLed at four points of a run that asks
// for an approval; another worker (a new executor) recovers the run through
// the reaper once the dead worker's heartbeat is old enough, and the run ends done with each model turn answered once and
// the tool started once.
func TestCrashMatrixSQLite(t *testing.T) {
	crashMatrix(t, func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "dbos.db") })
}

func TestCrashMatrixPostgres(t *testing.T) {
	crashMatrix(t, func(t *testing.T) string { return pgtest.Database(t) })
}

func crashMatrix(t *testing.T, db func(*testing.T) string) {
	approve := func(c *cluster, runID, req string) {
		t.Helper()
		if _, err := c.client.Answer(context.Background(), runID, req, store.Answer{Approve: true, By: tool.PrincipalOf("person:alice")}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		// crash drives the run to the crash point and kills w0; then w1 is started.
		crash func(c *cluster, key, runID string)
		// toolResult is what the model is shown of the tool in turn 2.
		toolResult string
	}{
		{"before the approval", func(c *cluster, key, runID string) {
			c.pending(runID)
			c.kill("w0")
			c.startWorker("w1")
			approve(c, runID, c.pending(runID))
		}, "counted"},
		{"after the approval", func(c *cluster, key, runID string) {
			// w0 is stopped before the answer is stored and killed
			// after, so it never acts on it: killed at once, it could
			// have run turn 2 before the kill, and turn 2 runs again
			// when a worker dies before its result is kept. The answer
			// is stored while w0 is stopped, and may wait for a lock
			// w0 holds until the kill lets it go.
			req := c.pending(runID)
			c.freeze("w0")
			answered := make(chan error, 1)
			go func() {
				_, err := c.client.Answer(context.Background(), runID, req, store.Answer{Approve: true, By: tool.PrincipalOf("person:alice")})
				answered <- err
			}()
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if a, err := c.store.GetApproval(context.Background(), runID, req); err == nil && a.Status != store.StatusPending {
					break // stored; else w0 holds what it waits for
				}
			}
			c.kill("w0")
			if err := <-answered; err != nil {
				t.Fatal(err)
			}
			c.startWorker("w1")
		}, "counted"},
		{"during the approved call's execute step", func(c *cluster, key, runID string) {
			block := filepath.Join(c.dir, "block-tool-"+key)
			if err := os.WriteFile(block, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			approve(c, runID, c.pending(runID))
			c.waitFor("the tool to start", 60e9, c.exists("block-tool-"+key+".started"))
			c.kill("w0")
			os.Remove(block)
			c.startWorker("w1")
		}, "may or may not have run"},
		{"during the model turn", func(c *cluster, key, runID string) {
			c.waitFor("turn 2 to start", 60e9, c.exists("block-model-"+key+"-2.started"))
			c.kill("w0")
			os.Remove(filepath.Join(c.dir, "block-model-"+key+"-2"))
			c.startWorker("w1")
		}, "counted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, db(t), 0)
			key := strings.NewReplacer(" ", "", "'", "").Replace(tc.name)
			if tc.name == "during the model turn" {
				if err := os.WriteFile(filepath.Join(c.dir, "block-model-"+key+"-2"), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			runID := c.start(key)
			if tc.name == "during the model turn" {
				approve(c, runID, c.pending(runID))
			}
			tc.crash(c, key, runID)
			c.reaped("w0")
			r := c.finished(runID)
			got, _ := c.counts(key)
			want := map[string]int{"turn 1": 1, "turn 2": 1, "tool": 1}
			for k, n := range want {
				if got[k] != n {
					t.Errorf("%s ran %d times, want %d (all counts: %v)", k, got[k], n, got)
				}
			}
			if !strings.Contains(string(r.Result), tc.toolResult) {
				t.Errorf("the model was not shown %q: %s", tc.toolResult, r.Result)
			}
			if r.Status != store.RunDone || r.Lease != nil {
				t.Errorf("stored run: status %s, lease %v", r.Status, r.Lease)
			}
			// The store's event log has the run's story, crash or not.
			evs, err := c.store.ListEvents(context.Background(), store.EventFilter{AllTenants: true, RunID: runID, Limit: store.MaxLimit})
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			for _, e := range evs {
				seen[e.Type]++
			}
			for _, typ := range []string{runcore.EventRunStarted, runcore.EventTurnUsage, runcore.EventToolCall, runcore.EventApprovalRequest,
				runcore.EventRunHalted, store.EventApprovalDecided, runcore.EventRunResumed, runcore.EventToolFinished, runcore.EventRunFinished} {
				if seen[typ] == 0 {
					t.Errorf("no %s event in the store: %v", typ, seen)
				}
			}
			if seen[runcore.EventTurnUsage] < 2 || seen[runcore.EventRunFinished] != 1 {
				t.Errorf("events: %v", seen)
			}
			// A second answer is refused by the store, and wakes nothing.
			page, err := c.store.ListApprovals(context.Background(), store.ApprovalFilter{AllTenants: true, RunID: runID})
			if err != nil || len(page.Approvals) != 1 {
				t.Fatalf("approvals of %s: %v %v", runID, page.Approvals, err)
			}
			if _, err := c.client.Answer(context.Background(), runID, page.Approvals[0].ID, store.Answer{Approve: true, By: tool.PrincipalOf("person:bob")}); !errors.Is(err, store.ErrDecided) {
				t.Errorf("second answer: %v, want ErrDecided", err)
			}
		})
	}
}

// The three calls of a turn run in parallel as steps of their own; a worker
// killed in the next model turn leaves them recorded, and the worker that
// takes the run over does not run them again.
func TestParallelCallsSQLite(t *testing.T) {
	parallelCalls(t, "sqlite:"+filepath.Join(t.TempDir(), "dbos.db"))
}

func TestParallelCallsPostgres(t *testing.T) { parallelCalls(t, pgtest.Database(t)) }

func parallelCalls(t *testing.T, db string) {
	c := newCluster(t, db, 0)
	key := "freepar"
	if err := os.WriteFile(filepath.Join(c.dir, "block-model-"+key+"-2"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	runID := c.start(key)
	c.waitFor("turn 2 to start", 60e9, c.exists("block-model-"+key+"-2.started"))
	c.kill("w0")
	os.Remove(filepath.Join(c.dir, "block-model-"+key+"-2"))
	c.startWorker("w1")
	c.reaped("w0")
	r := c.finished(runID)
	got, where := c.counts(key)
	for _, what := range []string{"turn 1", "turn 2", "meet 1", "meet 2", "meet 3"} {
		if got[what] != 1 {
			t.Errorf("%s ran %d times, want once (%v)", what, got[what], where)
		}
	}
	if !strings.Contains(string(r.Result), "done freepar: met 1, met 2, met 3") {
		t.Errorf("the calls did not all run at once, or their results are not in the model's order: %s", r.Result)
	}
}

// Cancel stops a run that waits for an answer at once, and a running one at
// its next step; the stored status stays cancelled. The waiting run's
// request is denied in the canceller's name, as runs.Host.Cancel denies it:
// it leaves the list of pending approvals, and a later answer is refused.
func TestCancelSQLite(t *testing.T) {
	testCancel(t, "sqlite:"+filepath.Join(t.TempDir(), "dbos.db"))
}

func TestCancelPostgres(t *testing.T) { testCancel(t, pgtest.Database(t)) }

func testCancel(t *testing.T, db string) {
	c := newCluster(t, db, 0)
	ctx := context.Background()

	waiting := c.start("cancelwait")
	req := c.pending(waiting)
	if err := c.client.Cancel(ctx, waiting, tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}); err != nil {
		t.Fatal(err)
	}
	if err := c.client.Cancel(ctx, waiting, tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}); !errors.Is(err, runs.ErrNotResumable) {
		t.Errorf("second cancel: %v, want ErrNotResumable", err)
	}
	if a, err := c.store.GetApproval(ctx, waiting, req); err != nil || a.Status != store.StatusDenied || a.DecidedBy.String() != "person:alice" || a.Reason != runcore.CancelledReason {
		t.Errorf("the cancelled run's request: %s by %s (%q), %v; want denied by person:alice (%q)", a.Status, a.DecidedBy, a.Reason, err, runcore.CancelledReason)
	}
	if page, err := c.store.ListApprovals(ctx, store.ApprovalFilter{AllTenants: true, Status: store.StatusPending}); err != nil || len(page.Approvals) != 0 {
		var ids []string
		for _, a := range page.Approvals {
			ids = append(ids, a.ID+" of "+a.RunID)
		}
		t.Errorf("pending approvals after the cancel: %v, %v", ids, err)
	}
	if _, err := c.client.Answer(ctx, waiting, req, store.Answer{Approve: true, By: tool.PrincipalOf("person:bob")}); !errors.Is(err, store.ErrDecided) {
		t.Errorf("a late approval: %v, want store.ErrDecided", err)
	}

	if err := os.WriteFile(filepath.Join(c.dir, "block-model-freecancel-2"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	running := c.start("freecancel")
	c.waitFor("turn 2 to start", 60e9, c.exists("block-model-freecancel-2.started"))
	if err := c.client.Cancel(ctx, running, tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}); err != nil {
		t.Fatal(err)
	}
	c.waitFor("the cancelled run's model turn to be interrupted", 60e9, c.exists("block-model-freecancel-2.cancelled"))
	// The worker goes on with other runs; by the time one has finished, the
	// cancelled ones had every chance to go on too.
	c.finished(c.start("freeafter"))
	for _, id := range []string{waiting, running} {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		r, err := c.client.Wait(wctx, id)
		cancel()
		if err != nil || r.Status != store.RunCancelled || r.Lease != nil {
			t.Errorf("run %s: %s, lease %v, %v", id, r.Status, r.Lease, err)
		}
	}
	if got, _ := c.counts("cancelwait"); got["tool"] != 0 || got["turn 2"] != 0 {
		t.Errorf("the cancelled waiting run went on: %v", got)
	}
	if got, _ := c.counts("freecancel"); got["turn 2"] != 0 {
		t.Errorf("the cancelled running run went on: %v", got)
	}
	evs, err := c.store.ListEvents(ctx, store.EventFilter{AllTenants: true, RunID: running, Limit: store.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
	}
	if !slices.Contains(types, runcore.EventRunCancelled) || slices.Contains(types, runcore.EventRunFinished) {
		t.Errorf("events of the cancelled run: %v", types)
	}
}
