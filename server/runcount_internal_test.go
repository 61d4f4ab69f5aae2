package server

import (
	"context"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
)

// A run stops counting among its tenant's running runs when its agent is
// done, while its part's goroutine still lets go of what it holds: a client
// that saw the run end and started another found the place taken (429 at
// the tenant's cap), since the end is stored before the goroutine ends.
func TestRunUncountedWhenItsAgentIsDone(t *testing.T) {
	s := &Server{inflight: map[string]bool{}, recheck: map[string]bool{}, tenantRuns: map[string]int{}, counted: map[string]string{},
		maxRuns: 1, done: make(chan struct{}), runCtx: context.Background()}
	m, err := newMetrics(s)
	if err != nil {
		t.Fatal(err)
	}
	s.metrics = m
	hold, done := make(chan struct{}), make(chan struct{})
	started, full := s.driveCapped("run_a", "acme", true, func(context.Context) error {
		defer close(done)
		<-hold // the part's goroutine, after its end was stored
		return nil
	})
	if !started || full {
		t.Fatalf("the first run: started %v, full %v", started, full)
	}
	if _, full := s.driveCapped("run_b", "acme", true, func(context.Context) error { return nil }); !full {
		t.Fatal("a second run was started past the tenant's cap of 1")
	}
	s.runEvents("run_a")(agent.Event{Kind: agent.EventDone})
	s.mu.Lock()
	n, driven := s.tenantRuns["acme"], s.inflight["run_a"]
	s.mu.Unlock()
	if n != 0 || !driven {
		t.Fatalf("after run_a's agent is done: %d counted, driven %v; want 0, still driven", n, driven)
	}
	close(hold)
	<-done
	s.runsWG.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.tenantRuns) != 0 || len(s.counted) != 0 || len(s.inflight) != 0 {
		t.Fatalf("after the goroutine: counts %v, counted %v, inflight %v", s.tenantRuns, s.counted, s.inflight)
	}
}
