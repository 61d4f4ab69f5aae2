package postgres

import (
	"context"
	"testing"

	"github.com/tollgate-dev/tollgate/store"
)

// Notified returns how many notifications s's listener has received (and
// dispatched to its waiters).
func Notified(st store.Store) int64 {
	s := st.(*pgStore)
	s.listen.mu.Lock()
	defer s.listen.mu.Unlock()
	return s.listen.notified
}

// Listening reports whether s's listener is listening.
func Listening(st store.Store) bool {
	s := st.(*pgStore)
	return s.listen.isListening()
}

// Register registers a waiter for f with s's listener, as WaitEvents does,
// and starts the listener; the channel gets a token when the waiter is
// woken. Unregister with the returned function.
func Register(st store.Store, f store.EventFilter) (<-chan struct{}, func()) {
	s := st.(*pgStore)
	w := s.listen.register(f)
	s.listen.start()
	return w.ch, func() { s.listen.unregister(w) }
}

// Setting returns the value of a setting in a session of s's pool.
func Setting(t testing.TB, st store.Store, name string) string {
	s := st.(*pgStore)
	t.Helper()
	var v string
	if err := s.pool.QueryRow(context.Background(), "SELECT current_setting($1)", name).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// Deadlocks returns how many of s's transactions were run again after
// PostgreSQL chose them as a deadlock's victim.
func Deadlocks(st store.Store) int64 {
	s := st.(*pgStore)
	return s.deadlocks.Load()
}

// Names the tests use for the package's constants.
const (
	Channel       = channel
	FallbackPoll  = fallbackPoll
	MaxJSONDepth  = maxJSONDepth
	SchemaVersion = schemaVersion
)

// NewConns returns how many connections s's pool has opened.
func NewConns(st store.Store) int64 {
	s := st.(*pgStore)
	return s.pool.Stat().NewConnsCount()
}

// WaitQueries returns how many reads of the log s's WaitEvents made.
func WaitQueries(st store.Store) int64 { return st.(*pgStore).waitQueries.Load() }

// Waiters returns how many waiters s's listener has registered.
func Waiters(st store.Store) int {
	s := st.(*pgStore)
	s.listen.mu.Lock()
	defer s.listen.mu.Unlock()
	return len(s.listen.waiters)
}

// ListenerName is the application_name of a store's listening connection.
const ListenerName = listenerName

// CaughtUp reports whether a waiter of s after Seq after would wait
// without reading the log first.
func CaughtUp(st store.Store, after int64) bool { return st.(*pgStore).listen.caughtUp(after) }

// WaitQuery returns the query and arguments of a waiter of f's read of
// the log.
func WaitQuery(f store.EventFilter) (string, []any) {
	w := eventWhere(f)
	return waitQuery(w), w.args
}
