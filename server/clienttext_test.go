package server

import (
	"strings"
	"testing"
)

// What an MCP client says of itself is kept without control characters
// (an escape sequence or a newline in its name could repaint a terminal or
// forge a line where the run is listed) and within its bound.
func TestClientTextDropsControls(t *testing.T) {
	for in, want := range map[string]string{
		"claude\x1b[2J\nApproved by alice": "claude[2JApproved by alice",
		"ok\u0085\u009bname\x7f":           "okname",
		"héllo":                            "héllo",
	} {
		if got := clientText(in, 200); got != want {
			t.Errorf("clientText(%q) = %q, want %q", in, got, want)
		}
	}
	if got := clientText(strings.Repeat("é", 200), 201); len(got) != 200 {
		t.Errorf("cut to %d bytes, want 200 (no half character)", len(got))
	}
}
