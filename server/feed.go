package server

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/tollgate-dev/tollgate/store"
)

// feedSize is how many of the latest events the feed keeps for the
// streams, at least (at most twice as many); a stream further behind reads
// the store.
const feedSize = 8192

// feed is the store's event log as [Server.Run] reads it, once for the
// process, handed to every event stream (SSE and WebSocket): a stream reads
// the latest events from here instead of querying the store for each new
// event. The feed never waits for a stream: a stream that falls behind the
// events kept reads the store again, from where it is, so that nothing is
// lost or repeated.
type feed struct {
	size    int // events kept
	mu      sync.RWMutex
	started bool
	// base and last bound what is kept: every event with base < Seq <=
	// last, in order, is in events.
	base, last int64
	events     []store.Event
	// frames are the events as SSE events (sseFrame), encoded once for
	// every stream; nil where encoding failed or no SSE stream was open
	// when they were published (a stream encodes those itself).
	frames [][]byte
	// sse counts the SSE streams open: with none, a publish encodes
	// nothing (most servers have no one watching).
	sse atomic.Int64
	// changed is closed and replaced when events are added.
	changed chan struct{}
}

func newFeed(size int) *feed { return &feed{size: size, changed: make(chan struct{})} }

// start marks the log as read up to seq: the feed is complete from there.
func (f *feed) start(seq int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.started, f.base, f.last = true, seq, seq
}

// publish adds events read from the store after the last, in order.
func (f *feed) publish(evs []store.Event) {
	if len(evs) == 0 {
		return
	}
	// Encoded before the lock: the streams read the feed under it.
	var frames [][]byte
	if f.sse.Load() > 0 {
		frames = make([][]byte, len(evs))
		for i, ev := range evs {
			frames[i], _ = sseFrame(ev)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.started {
		return
	}
	f.events = append(f.events, evs...)
	if frames == nil { // nils, in place once there is room
		n := len(f.frames)
		f.frames = slices.Grow(f.frames, len(evs))[:n+len(evs)]
		clear(f.frames[n:])
	} else {
		f.frames = append(f.frames, frames...)
	}
	f.last = evs[len(evs)-1].Seq
	// Trimmed back to size once it holds twice that: trimming to size at
	// every publish moved every event kept (8,192 of them) each time.
	if len(f.events) >= 2*f.size {
		n := len(f.events) - f.size
		f.base = f.events[n-1].Seq
		f.events = slices.Delete(f.events, 0, n)
		f.frames = slices.Delete(f.frames, 0, n)
	}
	close(f.changed)
	f.changed = make(chan struct{})
}

// position returns the Seq of the last event the feed holds; ok is false
// before it started.
func (f *feed) position() (seq int64, ok bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.last, f.started
}

// watch counts an SSE stream open until the function it returns is
// called.
func (f *feed) watch() (done func()) {
	f.sse.Add(1)
	return func() { f.sse.Add(-1) }
}

// after appends to evs[:0] and frames[:0] the kept events that ef selects
// after ef.AfterSeq, at most ef.Limit of them, with their SSE frames, and
// returns them with a channel closed when more arrive: a stream passes the
// slices of its last call back, so that a wake-up allocates nothing once
// they have room (each publish wakes every stream). ok is false when the
// feed does not hold every event after ef.AfterSeq (it is not started, or
// they are older than what it keeps): then read the store.
func (f *feed) after(ef store.EventFilter, evs []store.Event, frames [][]byte) (_ []store.Event, _ [][]byte, changed <-chan struct{}, ok bool) {
	evs, frames = evs[:0], frames[:0]
	f.mu.RLock()
	defer f.mu.RUnlock()
	if !f.started || ef.AfterSeq < f.base {
		return evs, frames, nil, false
	}
	i, _ := slices.BinarySearchFunc(f.events, ef.AfterSeq+1, func(e store.Event, seq int64) int {
		switch {
		case e.Seq < seq:
			return -1
		case e.Seq > seq:
			return 1
		}
		return 0
	})
	for j, e := range f.events[i:] {
		if ef.Limit > 0 && len(evs) == ef.Limit {
			break
		}
		if (ef.AllTenants || e.Tenant == ef.Tenant) && (ef.RunID == "" || e.RunID == ef.RunID) {
			evs = append(evs, e)
			frames = append(frames, f.frames[i+j])
		}
	}
	return evs, frames, f.changed, true
}
