package server

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store"
)

// autonomyTable holds the autonomy overrides by tenant and by run, as the
// event log says.
type autonomyTable struct {
	mu     sync.RWMutex
	tenant map[string]approval.Autonomy
	run    map[string]approval.Autonomy
}

func (t *autonomyTable) apply(ev store.Event) {
	var c serverapi.AutonomyChange
	if json.Unmarshal(ev.Data, &c) != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tenant == nil {
		t.tenant, t.run = map[string]approval.Autonomy{}, map[string]approval.Autonomy{}
	}
	m, key := t.tenant, ev.Tenant
	if ev.RunID != "" {
		m, key = t.run, ev.RunID
	}
	if c.Level == "" {
		delete(m, key)
	} else {
		m[key] = c.Level
	}
}

// effective returns the override of a run: the run's own, else its
// tenant's, else "" (the agent's configured level).
func (t *autonomyTable) effective(r runRef) string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if a, ok := t.run[r.runID]; ok && r.runID != "" {
		return string(a)
	}
	return string(t.tenant[r.tenant])
}

func (t *autonomyTable) ofTenant(tenant string) approval.Autonomy {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.tenant[tenant]
}

// Run takes the stored runs up and keeps resuming them until ctx ends or
// Shutdown starts: it reads the event log once (autonomy levels), resumes
// every halted run whose requests are all answered or expired and every run
// whose host's lease expired (or was released), then follows the event log:
// an approval decided or expired resumes its run once all of the run's
// requests are answered. Every tick it records expired approvals and looks
// for runs whose lease expired. Of several servers sharing a store, each
// run is resumed by exactly one (the store's claims and single-use
// approvals). Run returns nil when stopped, or the store's error.
func (s *Server) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	// The whole log once, for the autonomy levels, and to know where to follow it from.
	var after int64
	for {
		evs, err := s.store.ListEvents(ctx, store.EventFilter{AllTenants: true, AfterSeq: after, Limit: store.MaxLimit})
		if err != nil {
			return stopped(ctx, err)
		}
		for _, ev := range evs {
			after = ev.Seq
			if ev.Type == serverapi.EventAutonomyChanged {
				s.autonomy.apply(ev)
			}
		}
		if len(evs) < store.MaxLimit {
			break
		}
	}
	s.feed.start(after)
	for _, w := range s.webhooks {
		go s.deliver(ctx, w, after)
	}
	if err := s.sweep(ctx); err != nil {
		return stopped(ctx, err)
	}
	s.warm(ctx)
	s.mu.Lock()
	s.ready = true
	s.mu.Unlock()
	tick := time.NewTicker(s.tick)
	defer tick.Stop()
	lastSweep := s.now()
	for {
		wctx, wcancel := context.WithTimeout(ctx, s.tick)
		err := s.store.WaitEvents(wctx, store.EventFilter{AllTenants: true, AfterSeq: after})
		wcancel()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			s.log.Error("waiting for events", "error", err)
		}
		for {
			evs, err := s.store.ListEvents(ctx, store.EventFilter{AllTenants: true, AfterSeq: after, Limit: store.MaxLimit})
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				s.log.Error("reading events", "error", err)
				break
			}
			s.feed.publish(evs) // to the streams first: resuming runs takes longer
			for _, ev := range evs {
				after = ev.Seq
				s.onEvent(ctx, ev)
			}
			if len(evs) < store.MaxLimit {
				break
			}
		}
		select {
		case <-tick.C:
			if _, err := s.store.ExpireApprovals(ctx); err != nil && ctx.Err() == nil {
				s.log.Error("recording expired approvals", "error", err)
			}
			// Runs whose host died: often enough to take them over soon
			// after their lease expires.
			if s.now().Sub(lastSweep) >= s.sweepEvery() {
				lastSweep = s.now()
				if err := s.sweepLeases(ctx); err != nil && ctx.Err() == nil {
					s.log.Error("looking for runs to take over", "error", err)
				}
			}
		default:
		}
	}
}

func stopped(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func (s *Server) sweepEvery() time.Duration {
	ttl := runcore.DefaultLeaseTTL
	if d := s.leaseTTL(); d > 0 {
		ttl = d
	}
	if ttl/3 < s.tick {
		return s.tick
	}
	return ttl / 3
}

func (s *Server) leaseTTL() time.Duration { return s.hostTTL }

func (s *Server) onEvent(ctx context.Context, ev store.Event) {
	switch ev.Type {
	case serverapi.EventAutonomyChanged:
		s.autonomy.apply(ev)
	case store.EventApprovalDecided, store.EventApprovalExpired, runcore.EventRunReleased:
		s.tryResume(ctx, ev.RunID)
	}
}

// maxWarm bounds the agents warm builds: the build cache keeps 64 idle.
const maxWarm = 32

// warm builds, before the server says it is ready, the agent of each
// configured agent for each tenant that may start it (those of
// Options.AgentTenants, else Options.Tenants), under the
// tenant's autonomy level, so that the first run of each does not wait for
// its build. A build that fails is logged and left to the first run, which
// reports it. A durable server builds nothing: its workers build.
func (s *Server) warm(ctx context.Context) {
	if s.durable != nil {
		return
	}
	n := 0
	for _, name := range slices.Sorted(maps.Keys(s.agents)) {
		tenants, limited := s.agentTenants[name]
		if !limited {
			tenants = s.tenants
		}
		for _, t := range tenants {
			if n == maxWarm || ctx.Err() != nil {
				return
			}
			n++
			cfg, _ := s.agent(name, t)
			if lvl := s.autonomy.effective(runRef{tenant: t}); lvl != "" {
				cfg.Autonomy = lvl
			}
			if err := s.buildCache.Warm(ctx, t, cfg); err != nil {
				s.log.Warn("building an agent before its first run failed; its first run will try again", "agent", name, "tenant", t, "error", err)
			}
		}
	}
}

// sweep resumes every stored run that can go on: halted runs with every
// request answered, and runs whose host is gone.
func (s *Server) sweep(ctx context.Context) error {
	for r, err := range store.AllRuns(ctx, s.store, store.RunFilter{AllTenants: true, Status: store.RunPending, Limit: store.MaxLimit}) {
		if err != nil {
			return err
		}
		s.tryResumeRun(ctx, r)
	}
	return s.sweepLeases(ctx)
}

func (s *Server) sweepLeases(ctx context.Context) error {
	for _, st := range []store.RunStatus{store.RunRunning, store.RunResuming} {
		for r, err := range store.AllRuns(ctx, s.store, store.RunFilter{AllTenants: true, Status: st, Limit: store.MaxLimit}) {
			if err != nil {
				return err
			}
			if r.Lease == nil || r.Lease.Expired(s.now()) {
				s.tryResumeRun(ctx, r)
			}
		}
	}
	return nil
}

func (s *Server) tryResume(ctx context.Context, runID string) {
	if runID == "" {
		return
	}
	r, err := s.store.GetRun(ctx, runID)
	if err != nil {
		return
	}
	s.tryResumeRun(ctx, r)
}

// tryResumeRun resumes r in the background if it can go on: halted with no
// request left unanswered, or running without a live lease.
func (s *Server) tryResumeRun(ctx context.Context, r store.Run) {
	if durableRun(r) {
		return // its workflow waits for the answer and goes on by itself
	}
	if claudeSession(r) {
		return // Claude Code drives it; its hook waits for the answer
	}
	switch r.Status {
	case store.RunPending:
		p, err := s.store.ListApprovals(ctx, store.ApprovalFilter{AllTenants: true, RunID: r.ID, Status: store.StatusPending, Limit: 1})
		if err != nil || len(p.Approvals) > 0 {
			return
		}
	case store.RunRunning, store.RunResuming:
		if r.Lease != nil && !r.Lease.Expired(s.now()) {
			return
		}
	default:
		return
	}
	s.drive(r.ID, r.Tenant, func(ctx context.Context) error {
		_, err := s.host.Resume(withRun(ctx, r.Tenant, r.ID), runs.ResumeRequest{RunID: r.ID, Drive: runs.Drive{OnEvent: s.runEvents(r.ID)}})
		switch {
		case errors.Is(err, store.ErrLeased), errors.Is(err, store.ErrConflict), errors.Is(err, runs.ErrNothingDecided), errors.Is(err, runs.ErrNotResumable):
			return nil // another server has it, or there is nothing to do
		}
		return err
	})
}
