package runs_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/tool"
)

// A host that stops driving a run (ErrHostStopping) leaves it resumable: the
// status stays running, the lease is released at once, a run.released event
// is stored, and another host takes it over from the latest checkpoint
// without waiting for a lease to expire; the call the stop cut short runs
// again there. Created reports the stored run before the first turn;
// Ended, the run as its end stored it, and not for the released part.
func TestStopReleasesRun(t *testing.T) {
	ctx := context.Background()
	started := make(chan struct{}, 1)
	var slowRuns atomic.Int64
	slow := tool.Must("slow", "waits for its context the first time", func(ctx context.Context, _ struct{}) (string, error) {
		if slowRuns.Add(1) > 1 {
			return "quick", nil
		}
		started <- struct{}{}
		<-ctx.Done()
		return "", ctx.Err()
	}, nil)
	first := true
	m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		if testkit.Turn(req) == 0 {
			return model.Reply{ToolCalls: []model.FuncCall{testkit.Call("c1", "done_first", nil)}}, nil
		}
		if testkit.Turn(req) == 1 && first {
			return model.Reply{ToolCalls: []model.FuncCall{testkit.Call("c2", "slow", nil)}}, nil
		}
		return model.Reply{Content: "finished"}, nil
	})
	doneFirst := &testkit.Counter{Name: "done_first", Hints: &tool.Hints{ReadOnly: true}}
	b := &testBuilder{m: m, tools: agent.ToolList{doneFirst, slow}}
	s := memory.New(nil)
	h := newHost(t, s, b, "host-a", time.Hour)
	runCtx, stop := context.WithCancelCause(ctx)
	var created store.Run
	errc := make(chan error, 1)
	go func() {
		_, err := h.Start(runCtx, runs.StartRequest{RunID: "run_s", Config: testConfig(t), Prompt: "go", Created: func(r store.Run) { created = r },
			Drive: runs.Drive{Ended: func(r store.Run) { t.Errorf("Ended called for a released part: %s", r.Status) }}})
		errc <- err
	}()
	<-started
	stop(runs.ErrHostStopping)
	err := <-errc
	if !errors.Is(err, runs.ErrHostStopping) {
		t.Fatalf("Start after stop: %v, want ErrHostStopping", err)
	}
	if created.ID != "run_s" || created.Status != store.RunRunning {
		t.Fatalf("Created saw %+v", created)
	}
	run, err := s.GetRun(ctx, "run_s")
	if err != nil || run.Status != store.RunRunning || run.Lease != nil || len(run.State) == 0 {
		t.Fatalf("stored run after stop: status %s lease %+v state %d bytes, %v", run.Status, run.Lease, len(run.State), err)
	}
	evs, _ := s.ListEvents(ctx, store.EventFilter{RunID: "run_s"})
	if last := evs[len(evs)-1]; last.Type != runcore.EventRunReleased {
		t.Fatalf("last event %s, want %s", last.Type, runcore.EventRunReleased)
	}
	// Another host takes it over at once (the lease is gone) and finishes it.
	first = false
	h2 := newHost(t, s, b, "host-b", time.Hour)
	var ended []store.Run
	res, err := h2.Resume(ctx, runs.ResumeRequest{RunID: "run_s", Drive: runs.Drive{Ended: func(r store.Run) { ended = append(ended, r) }}})
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("takeover: %+v %v", res, err)
	}
	if stored, _ := s.GetRun(ctx, "run_s"); len(ended) != 1 || !reflect.DeepEqual(ended[0], stored) {
		t.Fatalf("Ended saw %d runs (%+v); want once, the run as stored: %+v", len(ended), ended, stored)
	}
	if doneFirst.Count() != 1 {
		t.Fatalf("the call finished before the stop ran %d times, want 1", doneFirst.Count())
	}
	// The call cut short by the stop was not recorded as finished: it runs again.
	if slowRuns.Load() != 2 {
		t.Fatalf("the interrupted call ran %d times, want 2 (once cut short, once to the end)", slowRuns.Load())
	}
	var out map[string]any
	_ = json.Unmarshal(evs[len(evs)-1].Data, &out)
	if out["holder"] != "host-a" {
		t.Fatalf("released event data %v", out)
	}
}
