package server_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/tollgate-dev/tollgate/server"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// countingStore counts the event queries of one tenant (the streams'; the
// server's own reading of the log is across tenants).
type countingStore struct {
	store.Store
	tenantQueries atomic.Int64
}

func (c *countingStore) ListEvents(ctx context.Context, f store.EventFilter) ([]store.Event, error) {
	if !f.AllTenants {
		c.tenantQueries.Add(1)
	}
	return c.Store.ListEvents(ctx, f)
}

// Many watchers of a tenant's stream each get every event of the tenant
// once, in the log's order, without a query of the store per watcher and
// event: the server reads the log once for all of them. A watcher that
// reconnects with Last-Event-ID gets the rest, from there.
func TestManyWatchersOneReader(t *testing.T) {
	const watchers, runs = 30, 4
	cs := &countingStore{Store: memory.New(nil)}
	f := newFixture(t, cs, nil, &server.Options{MaxStreams: 100, MaxStreamsPerPrincipal: 100})
	streams := make([]*sseStream, watchers)
	for i := range streams {
		streams[i] = f.openSSE("/v1/events", vicToken)
		if ev := streams[i].next(t); !ev.comment {
			t.Fatalf("stream %d opened with %+v", i, ev)
		}
	}
	before := cs.tenantQueries.Load()
	for range runs {
		f.pending(f.startRun())
	}
	during := cs.tenantQueries.Load() - before
	want, err := cs.Store.ListEvents(t.Context(), store.EventFilter{Tenant: "acme", Limit: store.MaxLimit})
	if err != nil || len(want) < runs*3 {
		t.Fatalf("the tenant's log: %d events, %v", len(want), err)
	}
	for i, s := range streams {
		for j, w := range want {
			if ev := s.nextEvent(t); ev.id != strconv.FormatInt(w.Seq, 10) || ev.event != w.Type {
				t.Fatalf("watcher %d, event %d: id %s %s, want %d %s", i, j, ev.id, ev.event, w.Seq, w.Type)
			}
		}
	}
	if during >= watchers {
		t.Errorf("the streams queried the store %d times while %d runs ran; want fewer than one per watcher (%d)", during, runs, watchers)
	}
	k := len(want) / 2
	again := f.openSSE("/v1/events", vicToken, "Last-Event-ID", strconv.FormatInt(want[k].Seq, 10))
	for j, w := range want[k+1:] {
		if ev := again.nextEvent(t); ev.id != strconv.FormatInt(w.Seq, 10) {
			t.Fatalf("after reconnecting, event %d: id %s, want %d", j, ev.id, w.Seq)
		}
	}
}
