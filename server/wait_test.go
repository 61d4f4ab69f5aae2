package server_test

import (
	"testing"
	"time"
)

// waitFor polls cond until it holds, failing the test with what after 30
// seconds: long enough for a loaded machine, short of the test binary's
// own timeout, so that a condition that never comes says which.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30 s for %s", what)
		}
	}
}
