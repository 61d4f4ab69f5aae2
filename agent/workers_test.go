package agent

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// A worker that finished a task runs the next one: two tasks one after the
// other take one goroutine.
func TestWorkersReuseAnIdleWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newWorkers()
		var ran atomic.Int32
		for range 3 {
			p.do(func() { ran.Add(1) })
			synctest.Wait() // the task ran and its worker waits for the next
			if n := p.idle.Load(); n != 1 {
				t.Fatalf("%d idle workers after a task, want 1", n)
			}
		}
		if ran.Load() != 3 || p.live.Load() != 1 {
			t.Fatalf("ran %d tasks on %d goroutines, want 3 on 1", ran.Load(), p.live.Load())
		}
		time.Sleep(workerIdle) // the bubble ends with no goroutine left
	})
}

// An idle worker exits after workerIdle without a task, and not before.
func TestWorkersExitWhenIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newWorkers()
		p.do(func() {})
		time.Sleep(workerIdle - time.Millisecond)
		synctest.Wait()
		if n := p.live.Load(); n != 1 {
			t.Fatalf("%d workers just before the idle timeout, want 1", n)
		}
		// A task in between starts the wait again.
		p.do(func() {})
		time.Sleep(workerIdle - time.Millisecond)
		synctest.Wait()
		if n := p.live.Load(); n != 1 {
			t.Fatalf("%d workers %v after the last task, want 1", n, workerIdle-time.Millisecond)
		}
		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		if n := p.live.Load(); n != 0 {
			t.Fatalf("%d workers after the idle timeout, want 0", n)
		}
	})
}

// No task waits for a busy worker: with every worker running, a new task
// gets a goroutine of its own.
func TestWorkersNeverQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newWorkers()
		release := make(chan struct{})
		p.do(func() { <-release })
		done := make(chan struct{})
		p.do(func() { close(done) })
		<-done // would block forever if the task waited for the first worker
		if n := p.live.Load(); n != 2 {
			t.Fatalf("%d workers, want 2", n)
		}
		close(release)
		time.Sleep(workerIdle)
	})
}

// stubborn ignores its context until released.
type stubborn struct {
	release chan struct{}
	calls   atomic.Int32
}

func (s *stubborn) Spec() tool.Spec { return tool.Spec{Name: "stuck"} }
func (s *stubborn) Call(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
	s.calls.Add(1)
	<-s.release
	return tool.Text("late"), nil
}

// A tool that ignores its context is abandoned after its timeout and
// AbandonAfter, and keeps its worker: the next calls run on other
// goroutines and finish, and the stuck worker takes no task until the tool
// returns; then it goes back to the pool and, idle, exits.
func TestAbandonedToolKeepsItsWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &stubborn{release: make(chan struct{})}
		quick := &testkit.Counter{Name: "quick"}
		a, err := New(Options{
			Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "stuck", nil)}),
			Tools: ToolList{st, quick}, ToolLimits: map[string]ToolLimits{"stuck": {Timeout: time.Second}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if a.workers != nil {
			t.Fatal("an agent made in a synctest bubble has a pool of workers")
		}
		a.workers = newWorkers() // made in the bubble, so usable here
		res, err := a.Run(context.Background(), "x")
		if err != nil || !strings.Contains(res.Transcript[2].Content, "the call was abandoned") {
			t.Fatalf("first run: %v %+v", err, res)
		}
		synctest.Wait()
		// The call's worker is idle again; the tool's is stuck.
		if live, idle := a.workers.live.Load(), a.workers.idle.Load(); live != 2 || idle != 1 {
			t.Fatalf("%d workers, %d idle; want 2, 1 (the abandoned tool keeps one)", live, idle)
		}
		a.opts.Model = testkit.Script([]model.FuncCall{testkit.Call("c1", "quick", nil), testkit.Call("c2", "quick", nil)})
		if res, err := a.Run(context.Background(), "x"); err != nil || res.Status != StatusDone || quick.Count() != 2 {
			t.Fatalf("second run: %v %+v, quick ran %d times", err, res, quick.Count())
		}
		synctest.Wait()
		if live, idle := a.workers.live.Load(), a.workers.idle.Load(); idle != live-1 {
			t.Fatalf("%d workers, %d idle; want all but the stuck one idle", live, idle)
		}
		close(st.release)
		synctest.Wait()
		if live, idle := a.workers.live.Load(), a.workers.idle.Load(); idle != live {
			t.Fatalf("%d workers, %d idle after the tool returned; want all idle", live, idle)
		}
		time.Sleep(workerIdle)
		synctest.Wait()
		if n := a.workers.live.Load(); n != 0 {
			t.Fatalf("%d workers after the idle timeout, want 0", n)
		}
		if st.calls.Load() != 1 {
			t.Fatalf("the stuck tool ran %d times, want 1", st.calls.Load())
		}
	})
}

// inBubble tells a goroutine in a synctest bubble from one outside.
func TestInBubble(t *testing.T) {
	if inBubble() {
		t.Fatal("inBubble outside a bubble")
	}
	synctest.Test(t, func(t *testing.T) {
		if !inBubble() {
			t.Fatal("not inBubble in a bubble")
		}
		done := make(chan bool)
		go func() { done <- inBubble() }()
		if !<-done {
			t.Fatal("not inBubble on a goroutine started in a bubble")
		}
	})
}
