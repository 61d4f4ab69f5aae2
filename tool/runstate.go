package tool

import (
	"encoding/json"
	"maps"
	"slices"
	"sync"
)

// RunState is a run's storage for tools: small JSON values, by key, that a
// tool keeps from one call to the next of the same run and that must survive
// a halt and a resume in another process (a plan, a counter). The agent keeps
// it in its serializable state and hands it to every tool call of the run
// as [Invocation].State. Keys are the tools' own; use the
// tool's name. It is safe for concurrent use: the calls of a turn run at once,
// and the last Set of a key wins.
type RunState struct {
	mu     sync.Mutex
	values map[string]json.RawMessage
}

// NewRunState returns a RunState holding a copy of values (nil for none).
func NewRunState(values map[string]json.RawMessage) *RunState {
	s := &RunState{}
	if len(values) > 0 { // a run whose tools keep nothing never makes the map
		s.values = make(map[string]json.RawMessage, len(values))
		for k, v := range values {
			s.values[k] = slices.Clone(v)
		}
	}
	return s
}

// Get returns a copy of the value of key, if there is one.
func (s *RunState) Get(key string) (json.RawMessage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.values[key]
	return slices.Clone(v), ok
}

// Set stores a copy of value under key; a nil value deletes the key.
func (s *RunState) Set(key string, value json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if value == nil {
		delete(s.values, key)
		return
	}
	if s.values == nil {
		s.values = map[string]json.RawMessage{}
	}
	s.values[key] = slices.Clone(value)
}

// Values returns a copy of every value, or nil when there is none.
func (s *RunState) Values() map[string]json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.values) == 0 {
		return nil
	}
	out := maps.Clone(s.values)
	for k, v := range out {
		out[k] = slices.Clone(v)
	}
	return out
}
