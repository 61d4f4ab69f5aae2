package sandbox

import (
	"strings"
	"testing"
)

// A program whose main never called Main is not probed as its own helper
// (the probe would run the program itself and wait on it): New says what
// to do instead.
func TestNewWithoutMainRefusesTheDefaultHelper(t *testing.T) {
	was := mainCalled.Load()
	mainCalled.Store(false)
	defer mainCalled.Store(was)
	_, err := New(nil)
	if err == nil || !strings.Contains(err.Error(), "does not call sandbox.Main") {
		t.Fatalf("New without Main: %v, want a refusal naming sandbox.Main", err)
	}
}
