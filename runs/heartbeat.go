package runs

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/store"
)

// heartbeat renews the lease every third of its TTL until stopped; when the
// lease is lost or a cancel is requested, it cancels the run with that cause.
func (d *driver) heartbeat(ctx context.Context, cancel context.CancelCauseFunc) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { d.beat(ctx, done, cancel) })
	return func() { close(done); wg.Wait() }
}

// beat is the heartbeat's loop, until done is closed or ctx ends.
func (d *driver) beat(ctx context.Context, done <-chan struct{}, cancel context.CancelCauseFunc) {
	h := d.h
	t := time.NewTicker(h.ttl / 3)
	defer t.Stop()
	var after int64
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := h.store.RenewLease(ctx, d.run.ID, h.holder, d.token, h.ttl); err != nil {
			if ctx.Err() == nil {
				h.log.Error("lost the run's lease; stopping it", "run", d.run.ID, "error", err)
				cancel(fmt.Errorf("runs: lost the lease on run %s: %w", d.run.ID, err))
			}
			return
		}
		if d.cancelRequested(ctx, &after) {
			cancel(runcore.ErrCancelRequested)
			return
		}
	}
}

// cancelRequested reads every event of the run after *after (a page at a
// time, so that a cancel request is seen at the next beat however many
// events the run wrote), moves *after past them, and reports whether one
// is a cancel request. A store that fails is asked again at the next beat.
func (d *driver) cancelRequested(ctx context.Context, after *int64) bool {
	for {
		evs, err := d.h.store.ListEvents(ctx, store.EventFilter{AllTenants: true, RunID: d.run.ID, AfterSeq: *after, Limit: store.MaxLimit})
		if err != nil || len(evs) == 0 {
			return false
		}
		for _, e := range evs {
			*after = e.Seq
			if e.Type == runcore.EventCancelRequested {
				return true
			}
		}
		if len(evs) < store.MaxLimit {
			return false
		}
	}
}
