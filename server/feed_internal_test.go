package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
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
// (or run's) events after its position, at most its limit. It keeps its
// size at least, and trims back to it once it holds twice that.
func TestFeedKeepsTheLatest(t *testing.T) {
	f := newFeed(3)
	if _, _, _, ok := f.after(store.EventFilter{}, nil, nil); ok {
		t.Fatal("a feed not started answered")
	}
	f.start(10)
	var evs []store.Event
	for i := int64(11); i <= 16; i++ {
		tenant := "a"
		if i%2 == 0 {
			tenant = "b"
		}
		evs = append(evs, store.Event{Seq: i, Tenant: tenant, RunID: "r" + tenant})
	}
	f.publish(evs[:5])
	if got, _, _, ok := f.after(store.EventFilter{AllTenants: true, AfterSeq: 10}, nil, nil); !ok || len(got) != 5 {
		t.Fatalf("5 events of a feed of size 3: %v, %v; want all kept until twice its size", seqs(got), ok)
	}
	changed := f.changed
	f.publish(evs[5:])
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
		{store.EventFilter{AllTenants: true, AfterSeq: 12}, false, nil}, // 13 is no longer kept
		{store.EventFilter{AllTenants: true, AfterSeq: 13}, true, []int64{14, 15, 16}},
		{store.EventFilter{Tenant: "a", AfterSeq: 13}, true, []int64{15}},
		{store.EventFilter{Tenant: "b", RunID: "rb", AfterSeq: 13}, true, []int64{14, 16}},
		{store.EventFilter{AllTenants: true, AfterSeq: 13, Limit: 2}, true, []int64{14, 15}},
		{store.EventFilter{AllTenants: true, AfterSeq: 16}, true, nil},
		{store.EventFilter{AllTenants: true, AfterSeq: 99}, true, nil}, // ahead of the feed: wait
	} {
		got, frames, _, ok := f.after(tc.ef, nil, nil)
		if len(frames) != len(got) {
			t.Errorf("after(%+v): %d frames for %d events", tc.ef, len(frames), len(got))
		}
		if ok != tc.ok || !slices.Equal(seqs(got), tc.want) {
			t.Errorf("after(%+v) = %v, %v; want %v, %v", tc.ef, seqs(got), ok, tc.want, tc.ok)
		}
	}
}

// A tenant's stream woken by a publish allocates nothing once the slices
// it passes back have room: each publish wakes every stream.
func TestFeedAfterReusesItsRoom(t *testing.T) {
	f := newFeed(1000)
	f.start(0)
	var evs []store.Event
	for i := int64(1); i <= 500; i++ {
		evs = append(evs, store.Event{Seq: i, Tenant: "a", Type: "x"})
	}
	f.publish(evs)
	got, frames, _, _ := f.after(store.EventFilter{Tenant: "a", Limit: store.MaxLimit}, nil, nil)
	allocs := testing.AllocsPerRun(20, func() {
		var ok bool
		if got, frames, _, ok = f.after(store.EventFilter{Tenant: "a", Limit: store.MaxLimit}, got, frames); !ok || len(got) != 500 {
			t.Fatalf("after: %d events, %v", len(got), ok)
		}
	})
	if allocs > 0 {
		t.Fatalf("after allocated %v times for 500 events given room, want 0", allocs)
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

// writeCounter is a response writer that counts the writes made to it
// and the events they held.
type writeCounter struct {
	*httptest.ResponseRecorder
	mu             sync.Mutex
	writes, events int
}

func (w *writeCounter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	w.events += strings.Count(string(b), "\nevent: ")
	return w.ResponseRecorder.Write(b)
}

func (w *writeCounter) counts() (writes, events int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes, w.events
}

// A stream woken by the feed writes what it was given in one write, then
// flushes: a write per event cost each watcher a system call per event.
func TestStreamWritesABatchOnce(t *testing.T) {
	writes, n := streamWrites(t, 10, json.RawMessage(`{}`))
	if n != 10 || writes != 2 { // the preamble, then the events
		t.Fatalf("%d events in %d writes after the preamble, want 10 in 1", n, writes-1)
	}
}

// streamWrites publishes n events with data to a feed, has a tenant's SSE
// stream read them, and returns the writes the stream made (its preamble
// among them) and the events they held.
func streamWrites(t *testing.T, n int, data json.RawMessage) (writes, events int) {
	t.Helper()
	s := &Server{feed: newFeed(1000), closed: context.Background(), done: make(chan struct{}), beat: time.Hour, writeTimeout: time.Minute}
	s.feed.start(0)
	var evs []store.Event
	for i := range int64(n) {
		evs = append(evs, store.Event{Seq: i + 1, Tenant: "a", Type: "x", Data: data})
	}
	s.feed.publish(evs)
	w := &writeCounter{ResponseRecorder: httptest.NewRecorder()}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.events(w, httptest.NewRequestWithContext(ctx, "GET", "/v1/events", nil), Principal{Tenant: "a"})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for _, got := w.counts(); got < n && time.Now().Before(deadline); _, got = w.counts() {
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	return w.counts()
}

// A publish encodes SSE frames only while an SSE stream is open: with no
// one watching, encoding every event was a twentieth of a served run.
func TestFeedEncodesOnlyForStreams(t *testing.T) {
	f := newFeed(10)
	f.start(0)
	f.publish([]store.Event{{Seq: 1, Tenant: "a", Type: "x"}})
	done := f.watch()
	f.publish([]store.Event{{Seq: 2, Tenant: "a", Type: "x"}})
	done()
	f.publish([]store.Event{{Seq: 3, Tenant: "a", Type: "x"}})
	_, frames, _, _ := f.after(store.EventFilter{Tenant: "a"}, nil, nil)
	if len(frames) != 3 || frames[0] != nil || frames[1] == nil || frames[2] != nil {
		t.Fatalf("frames %q: want only the second, published while a stream was open, encoded", frames)
	}
}

// A stream catching up writes in pieces of about maxBatch bytes, each with
// its deadline: one write of every event it was behind needed its whole
// deadline for as much as the feed handed out.
func TestStreamWritesInBoundedPieces(t *testing.T) {
	pad, _ := json.Marshal(strings.Repeat("x", 1000))
	writes, n := streamWrites(t, 300, pad)
	if want := 1 + 300*1100/maxBatch; n != 300 || writes < want {
		t.Fatalf("%d events of about 1.1 KB in %d writes, want 300 in at least %d", n, writes, want)
	}
}

// With no SSE stream open a publish allocates nothing for the frames it
// does not encode (the new channel that wakes the streams is its one
// allocation).
func TestFeedPublishAllocatesNoFramesUnwatched(t *testing.T) {
	f := newFeed(1 << 12)
	f.start(0)
	seq := int64(0)
	evs := make([]store.Event, 7)
	publish := func() {
		for i := range evs {
			seq++
			evs[i] = store.Event{Seq: seq, Tenant: "a", Type: "x"}
		}
		f.publish(evs)
	}
	for range 2 << 12 / 7 { // grown to its size, and trimmed once
		publish()
	}
	if allocs := testing.AllocsPerRun(100, publish); allocs > 1 {
		t.Fatalf("a publish with no stream open made %.1f allocations, want 1 (the wake-up channel)", allocs)
	}
}
