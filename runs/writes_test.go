package runs_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/internal/storeimpl/storeimpltest"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store/memory"
)

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
	st := &storeimpltest.Calls{Store: memory.New(nil)}
	h := newHost(t, st, &testBuilder{m: m, tools: agent.ToolList{lookup}}, "h1", time.Hour)
	res, err := h.Start(context.Background(), runs.StartRequest{RunID: "run_w", Config: testConfig(t), Prompt: "find it"})
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("start: %v %v", res, err)
	}
	want := []string{"CreateRun", "UpdateRun running", "UpdateRun running", "UpdateRun done"}
	if got := st.Take(); !slices.Equal(got, want) {
		t.Fatalf("writes %v, want %v", got, want)
	}
}
