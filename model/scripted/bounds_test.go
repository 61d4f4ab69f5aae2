package scripted

import (
	"strings"
	"testing"
)

// A 416-byte script of nested aliases took a minute and gigabytes before it
// crashed; a 40 KB nested one hundreds of megabytes. Both are refused before
// parsing, with their position.
func TestParseRefusesBombs(t *testing.T) {
	laughs := "turns:\n  - toolCalls:\n      - name: x\n        args:\n          a: &a [x, x, x, x, x, x, x, x, x]\n"
	for i, n := range "bcdefg" {
		prev := string("abcdefg"[i])
		laughs += "          " + string(n) + ": &" + string(n) + " [" + strings.Repeat("*"+prev+", ", 8) + "*" + prev + "]\n"
	}
	for name, tc := range map[string]struct{ doc, want string }{
		"aliases": {laughs, "s.yaml:6:18: YAML aliases (*name) are not supported"},
		"nesting": {"turns: " + strings.Repeat("[", 20000) + strings.Repeat("]", 20000), "s.yaml:1:71: nested deeper than 64 levels"},
	} {
		if len(tc.doc) > 40<<10 {
			t.Fatalf("%s: %d bytes", name, len(tc.doc))
		}
		_, err := Parse("s.yaml", strings.NewReader(tc.doc))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s (%d bytes): %v, want %q", name, len(tc.doc), err, tc.want)
		}
	}
}
