package postgres

import "github.com/tollgate-dev/tollgate/approval/store"

// Notified returns how many notifications s's listener has received (and
// dispatched to its waiters).
func Notified(s *Store) int64 {
	s.listen.mu.Lock()
	defer s.listen.mu.Unlock()
	return s.listen.notified
}

// Listening reports whether s's listener is listening.
func Listening(s *Store) bool { return s.listen.isListening() }

// Register registers a waiter for f with s's listener, as WaitEvents does,
// and starts the listener; the channel gets a token when the waiter is
// woken. Unregister with the returned function.
func Register(s *Store, f store.EventFilter) (<-chan struct{}, func()) {
	w := s.listen.register(f)
	s.listen.start()
	return w.ch, func() { s.listen.unregister(w) }
}
