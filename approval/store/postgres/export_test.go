package postgres

// Notified returns how many notifications s's listener has received.
func Notified(s *Store) int64 {
	s.listen.mu.Lock()
	defer s.listen.mu.Unlock()
	return s.listen.notified
}

// Listening reports whether s's listener is listening.
func Listening(s *Store) bool {
	_, on := s.listen.state()
	return on
}
