package sqlite

import (
	"context"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/store"
)

// A waiter after every event this process wrote asks the database nothing
// until a write wakes it (or a poll for other processes' events comes
// due): the server's follower, which has just read the log, made a query
// that found nothing at every call. Woken by the write, it asks once and
// returns.
func TestWaitAfterTheLastEventWaitsBeforeAsking(t *testing.T) {
	ctx := context.Background()
	s := openInternal(t)
	s.firstPoll = time.Hour // no poll during the test
	seqs, err := s.AppendEvents(ctx, store.Event{Type: "test.first"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.WaitEvents(ctx, store.EventFilter{AllTenants: true, AfterSeq: seqs[0]}) }()
	time.Sleep(50 * time.Millisecond) // the waiter waits, or has asked
	if n := s.waitQueries.Load(); n != 0 {
		t.Fatalf("the waiter asked the database %d times before any write, want 0", n)
	}
	if _, err := s.AppendEvents(ctx, store.Event{Type: "test.second"}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := s.waitQueries.Load(); n != 1 {
		t.Fatalf("woken by the write, the waiter asked %d times, want 1", n)
	}
	// A store opened on a log with events knows them: a waiter before the
	// last asks at once.
	again, err := Open(ctx, s.path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	a := again.(*sqliteStore)
	a.firstPoll = time.Hour                                  // no poll: only knowing the log's last Seq answers
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second) // it would wait for a write
	defer cancel()
	if err := a.WaitEvents(wctx, store.EventFilter{AllTenants: true, AfterSeq: seqs[0]}); err != nil || a.waitQueries.Load() != 1 {
		t.Fatalf("a store opened on the log, waiting before its last event: %v after %d queries, want found at the first", err, a.waitQueries.Load())
	}
}
