package runcore

import (
	"context"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// The end of a run cancelled while it ran is stored once: a replay of an
// execution that stored it already (the process died before the workflow
// recorded its end), or a retry of a write that committed, finds the
// result stored and writes nothing; it wrote the end's events again.
func TestCancelledEndStoredOnce(t *testing.T) {
	ctx := context.Background()
	st := memory.New(nil)
	if _, err := st.CreateRun(ctx, store.CreateRunRequest{Run: store.Run{ID: "run_c", Status: store.RunRunning}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.UpdateRun(ctx, "run_c", store.RunUpdate{Status: store.RunCancelled}); err != nil {
		t.Fatal(err)
	}
	d := &Durable{store: st, now: time.Now}
	in := DurableRun{RunID: "run_c"}
	res := &agent.Result{Status: agent.StatusError, Reason: "cancelled"}
	turn := []store.Event{{RunID: "run_c", Type: "turn.usage"}}
	for range 2 {
		if got, err := d.storeEnd(ctx, in, store.RunCancelled, res, context.Canceled, turn); err != nil || got != store.RunCancelled {
			t.Fatalf("storeEnd: %s %v", got, err)
		}
	}
	evs, err := st.ListEvents(ctx, store.EventFilter{AllTenants: true, RunID: "run_c"})
	if err != nil || len(evs) != 1 {
		t.Fatalf("%d events stored (%v), want the turn's once", len(evs), err)
	}
}
