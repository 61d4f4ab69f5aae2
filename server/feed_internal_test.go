package server

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/store"
)

func seqs(evs []store.Event) []int64 {
	var out []int64
	for _, e := range evs {
		out = append(out, e.Seq)
	}
	return out
}

// The feed hands out only what it holds whole: a stream behind the events
// it keeps is told to read the store; one within them gets its tenant's
// (or run's) events after its position, at most its limit.
func TestFeedKeepsTheLatest(t *testing.T) {
	f := newFeed(3)
	if _, _, _, ok := f.after(store.EventFilter{}); ok {
		t.Fatal("a feed not started answered")
	}
	f.start(10)
	var evs []store.Event
	for i := int64(11); i <= 15; i++ {
		tenant := "a"
		if i%2 == 0 {
			tenant = "b"
		}
		evs = append(evs, store.Event{Seq: i, Tenant: tenant, RunID: "r" + tenant})
	}
	f.publish(evs[:2])
	changed := f.changed
	f.publish(evs[2:])
	select {
	case <-changed:
	default:
		t.Fatal("publishing did not wake the streams")
	}
	for _, tc := range []struct {
		ef   store.EventFilter
		ok   bool
		want []int64
	}{
		{store.EventFilter{AllTenants: true, AfterSeq: 11}, false, nil}, // 12 is no longer kept
		{store.EventFilter{AllTenants: true, AfterSeq: 12}, true, []int64{13, 14, 15}},
		{store.EventFilter{Tenant: "a", AfterSeq: 12}, true, []int64{13, 15}},
		{store.EventFilter{Tenant: "b", RunID: "rb", AfterSeq: 12}, true, []int64{14}},
		{store.EventFilter{AllTenants: true, AfterSeq: 12, Limit: 2}, true, []int64{13, 14}},
		{store.EventFilter{AllTenants: true, AfterSeq: 15}, true, nil},
		{store.EventFilter{AllTenants: true, AfterSeq: 99}, true, nil}, // ahead of the feed: wait
	} {
		got, frames, _, ok := f.after(tc.ef)
		if len(frames) != len(got) {
			t.Errorf("after(%+v): %d frames for %d events", tc.ef, len(frames), len(got))
		}
		if ok != tc.ok || !slices.Equal(seqs(got), tc.want) {
			t.Errorf("after(%+v) = %v, %v; want %v, %v", tc.ef, seqs(got), ok, tc.want, tc.ok)
		}
	}
}

// A tenant's stream woken by a publish gets what follows in two
// allocations, whatever its length: each publish wakes every stream.
func TestFeedAfterAllocatesOnce(t *testing.T) {
	f := newFeed(1000)
	f.start(0)
	var evs []store.Event
	for i := int64(1); i <= 500; i++ {
		evs = append(evs, store.Event{Seq: i, Tenant: "a", Type: "x"})
	}
	f.publish(evs)
	allocs := testing.AllocsPerRun(20, func() {
		if got, _, _, ok := f.after(store.EventFilter{Tenant: "a", Limit: store.MaxLimit}); !ok || len(got) != 500 {
			t.Fatalf("after: %d events, %v", len(got), ok)
		}
	})
	if allocs > 2 {
		t.Fatalf("after allocated %v times for 500 events, want 2", allocs)
	}
}

// deadlineCounter is a response writer that counts the write deadlines set
// on it.
type deadlineCounter struct {
	http.ResponseWriter
	n int
}

func (d *deadlineCounter) SetWriteDeadline(time.Time) error { d.n++; return nil }

// A stream sets its write deadline again only once a quarter of the
// timeout has passed: setting it for each event was a tenth of a stream's
// work.
func TestStreamDeadlineSetOnce(t *testing.T) {
	w := &deadlineCounter{ResponseWriter: httptest.NewRecorder()}
	deadline := writeDeadline(http.NewResponseController(w), time.Hour)
	for range 100 {
		deadline()
	}
	if w.n != 1 {
		t.Fatalf("100 writes within a quarter of the timeout set %d deadlines, want 1", w.n)
	}
	short := &deadlineCounter{ResponseWriter: httptest.NewRecorder()}
	deadline = writeDeadline(http.NewResponseController(short), 0)
	deadline()
	deadline()
	if short.n != 2 {
		t.Fatalf("with no time between them, %d deadlines set, want 2", short.n)
	}
}
