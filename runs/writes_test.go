package runs_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// writeCounter is a store that notes its writes, by method (and the
// status an UpdateRun stores), in order.
type writeCounter struct {
	store.Store
	mu     sync.Mutex
	writes []string
}

func (w *writeCounter) note(m string) {
	w.mu.Lock()
	w.writes = append(w.writes, m)
	w.mu.Unlock()
}

func (w *writeCounter) CreateRun(ctx context.Context, r store.CreateRunRequest) (store.Run, error) {
	w.note("CreateRun")
	return w.Store.CreateRun(ctx, r)
}

func (w *writeCounter) UpdateRun(ctx context.Context, id string, u store.RunUpdate) (store.Run, error) {
	w.note("UpdateRun " + string(u.Status))
	return w.Store.UpdateRun(ctx, id, u)
}

func (w *writeCounter) ClaimRun(ctx context.Context, id string, c store.Claim) (store.Run, []store.Approval, error) {
	w.note("ClaimRun")
	return w.Store.ClaimRun(ctx, id, c)
}

func (w *writeCounter) RenewLease(ctx context.Context, id, holder string, token int64, ttl time.Duration) (store.Lease, error) {
	w.note("RenewLease")
	return w.Store.RenewLease(ctx, id, holder, token, ttl)
}

func (w *writeCounter) Decide(ctx context.Context, runID, id string, d store.Answer) (store.Approval, error) {
	w.note("Decide")
	return w.Store.Decide(ctx, runID, id, d)
}

func (w *writeCounter) Consume(ctx context.Context, runID, id, digest string) (store.Approval, error) {
	w.note("Consume")
	return w.Store.Consume(ctx, runID, id, digest)
}

func (w *writeCounter) ExpireApprovals(ctx context.Context) ([]store.Approval, error) {
	w.note("ExpireApprovals")
	return w.Store.ExpireApprovals(ctx)
}

func (w *writeCounter) AppendEvents(ctx context.Context, evs ...store.Event) ([]int64, error) {
	w.note("AppendEvents")
	return w.Store.AppendEvents(ctx, evs...)
}

func (w *writeCounter) DeleteRuns(ctx context.Context, f store.PruneFilter) (int, error) {
	w.note("DeleteRuns")
	return w.Store.DeleteRuns(ctx, f)
}

// TestRunWrites counts the store's writes of a run of two model turns and
// one call that nothing asks about, started and driven to its end by a
// host (as the server drives a run), with a lease too long to renew:
//
//  1. CreateRun: the run, leased to the host, with run.started;
//  2. UpdateRun running: the state after turn 1 (agent.CheckpointTurn),
//     its call in the batch, with the turn's usage;
//  3. UpdateRun running: the state once the call finished
//     (agent.CheckpointCall), with its tool.call, tool.decided and
//     tool.finished;
//  4. UpdateRun done: the end, lease released, with turn 2's usage and
//     run.finished.
//
// The state after the turn's results (agent.CheckpointResults) is not
// written (no event waits; the end comes one model call later), nor is
// one after turn 2, which ends the run. Each write more is a wait for
// SQLite's one writer.
func TestRunWrites(t *testing.T) {
	m, lookup := lookupAgent()
	st := &writeCounter{Store: memory.New(nil)}
	h := newHost(t, st, &testBuilder{m: m, tools: agent.ToolList{lookup}}, "h1", time.Hour)
	res, err := h.Start(context.Background(), runs.StartRequest{RunID: "run_w", Config: testConfig(t), Prompt: "find it"})
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("start: %v %v", res, err)
	}
	want := []string{"CreateRun", "UpdateRun running", "UpdateRun running", "UpdateRun done"}
	if !slices.Equal(st.writes, want) {
		t.Fatalf("writes %v, want %v", st.writes, want)
	}
}
