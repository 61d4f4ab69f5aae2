package server

import (
	"context"
	"errors"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store"
)

// durableRun reports whether r is a durable run that has not ended: its
// record is held by the durable engine (runcore.DurableHolder) for as long as
// it runs or waits, and only its workflow drives it.
func durableRun(r store.Run) bool {
	return r.Lease != nil && r.Lease.Holder == runcore.DurableHolder
}

// runRef names the run an agent is built for, on the builder's context.
type runRef struct{ tenant, runID string }

type runRefKey struct{}

func withRun(ctx context.Context, tenant, runID string) context.Context {
	return context.WithValue(ctx, runRefKey{}, runRef{tenant, runID})
}

func runFrom(ctx context.Context) runRef {
	r, _ := ctx.Value(runRefKey{}).(runRef)
	return r
}

// closing reports whether Shutdown has started.
func (s *Server) closing() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// drive runs f (a Start or a Resume of runID) in the background under the
// server's run context, unless the run is driven here already or the server
// is closing. It reports whether f was started.
func (s *Server) drive(runID, tenant string, f func(ctx context.Context) error) bool {
	ok, _ := s.driveCapped(runID, tenant, false, f)
	return ok
}

// driveCapped is drive for a run of tenant; with capped, a run the tenant's
// count of driven runs has no room for is not started, and full is true.
func (s *Server) driveCapped(runID, tenant string, capped bool, f func(ctx context.Context) error) (started, full bool) {
	s.mu.Lock()
	if s.inflight[runID] || s.closing() {
		if s.inflight[runID] {
			// The part of the run driven now may have ended (halted)
			// already: look again when its goroutine is done.
			s.recheck[runID] = true
		}
		s.mu.Unlock()
		return false, false
	}
	if capped && s.tenantRuns[tenant] >= s.maxRuns {
		s.mu.Unlock()
		return false, true
	}
	s.inflight[runID] = true
	s.tenantRuns[tenant]++
	s.counted[runID] = tenant
	s.runsWG.Add(1)
	s.mu.Unlock()
	go func() {
		defer func() {
			s.mu.Lock()
			delete(s.inflight, runID)
			s.uncountLocked(runID)
			again := s.recheck[runID]
			delete(s.recheck, runID)
			s.mu.Unlock()
			if again && !s.closing() {
				s.tryResume(context.WithoutCancel(s.runCtx), runID)
			}
			s.runsWG.Done()
		}()
		if err := f(s.runCtx); err != nil && !errors.Is(err, runs.ErrHostStopping) {
			s.log.Info("run part ended with an error", "run", runID, "error", err)
		}
	}()
	return true, false
}

// Shutdown stops the server: event streams end and new runs are refused at
// once; the runs it drives get until ctx ends to finish or halt, and are then
// stopped without being ended (their latest checkpoint stays stored, their
// lease is released: runs.ErrHostStopping), so that the next server takes
// them over. It returns when every run it drove is stored, with ctx's error
// if the grace ran out. The caller shuts its http.Server down too.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		close(s.done)
		s.mu.Unlock()
		s.setClose()
	})
	idle := make(chan struct{})
	go func() { s.runsWG.Wait(); s.buildCache.Close(); close(idle) }()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
	}
	s.stopRun(runs.ErrHostStopping)
	<-idle
	return ctx.Err()
}

// runEvents is the OnEvent of a run part the server drives: the metrics
// see every event, and the run stops counting among its tenant's running
// runs when its agent is done (ended or halted), before its end is stored
// and seen: a client that starts its next run on seeing the end found the
// place still taken while the part's goroutine let go of what it held.
func (s *Server) runEvents(runID string) func(agent.Event) {
	return func(ev agent.Event) {
		s.metrics.onEvent(ev)
		if ev.Kind == agent.EventDone {
			s.mu.Lock()
			s.uncountLocked(runID)
			s.mu.Unlock()
		}
	}
}

// uncountLocked stops counting runID among its tenant's running runs, once;
// s.mu is held.
func (s *Server) uncountLocked(runID string) {
	tenant, ok := s.counted[runID]
	if !ok {
		return
	}
	delete(s.counted, runID)
	if s.tenantRuns[tenant]--; s.tenantRuns[tenant] <= 0 {
		delete(s.tenantRuns, tenant)
	}
}
