package claudegate

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// A session's prompt or intent kept for the card is cut whole characters
// at a time: never half a UTF-8 character in notes.json or the prompt.
func TestCutKeepsCharactersWhole(t *testing.T) {
	s := strings.Repeat("é", 10) // 2 bytes each
	for n := range 21 {
		if got := cut(s, n); !utf8.ValidString(got) || len(got) > n {
			t.Errorf("cut(%q, %d) = %q", s, n, got)
		}
	}
}
