package server_test

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/server"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// waitWatcher is a store that, in each WaitEvents, looks for goroutines an
// event stream started for that wait.
type waitWatcher struct {
	store.Store
	mu      sync.Mutex
	waits   int
	spawned []string
	seen    chan struct{} // closed after enough waits
}

const watchedWaits = 5

func (w *waitWatcher) WaitEvents(ctx context.Context, f store.EventFilter) error {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	w.mu.Lock()
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "created by github.com/tollgate-dev/tollgate/server.(*Server).follow") {
			w.spawned = append(w.spawned, g)
		}
	}
	if w.waits++; w.waits == watchedWaits {
		close(w.seen)
	}
	w.mu.Unlock()
	return w.Store.WaitEvents(ctx, f)
}

// An idle event stream waits for events and heartbeats without starting a
// goroutine for each wait.
func TestStreamWaitsWithoutGoroutines(t *testing.T) {
	w := &waitWatcher{Store: memory.New(nil), seen: make(chan struct{})}
	f := newFixture(t, w, nil, &server.Options{Heartbeat: 2 * time.Millisecond})
	sse := f.openSSE("/v1/events", aliceToken)
	<-w.seen
	_ = sse.body.Close()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.spawned) > 0 {
		t.Fatalf("%d goroutines started by the stream's waits, want none; the first:\n%s", len(w.spawned), w.spawned[0])
	}
}
