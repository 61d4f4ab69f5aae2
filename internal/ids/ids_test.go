package ids

import (
	"regexp"
	"testing"
)

func TestNew(t *testing.T) {
	a, b := New("call_"), New("call_")
	if !regexp.MustCompile(`^call_[0-9a-f]{16}$`).MatchString(a) {
		t.Fatalf("New(call_) = %q, want call_ and 16 hex digits", a)
	}
	if a == b {
		t.Fatalf("two IDs alike: %q", a)
	}
}
