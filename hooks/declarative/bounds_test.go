package declarative

import (
	"log/slog"
	"strings"
	"testing"
)

// A 40 KB deeply nested hooks file needed ~670 MB to parse (120 KB crashed
// the process). Nesting is now measured before parsing: the file is an
// ERROR with a position and gives no hooks.
func TestFromYAMLRefusesNestingBomb(t *testing.T) {
	for name, doc := range map[string]string{
		"flow":  "hooks: " + strings.Repeat("[", 20000) + strings.Repeat("]", 20000),
		"block": "hooks:\n" + strings.Repeat("- ", 20000) + "x\n",
	} {
		r := FromYAML(strings.NewReader(doc), &Options{File: "bomb.yaml"})
		ds := r.Diagnostics()
		if len(r.Hooks()) != 0 || len(ds) != 1 || ds[0].Severity != slog.LevelError || ds[0].Line == 0 ||
			!strings.Contains(ds[0].String(), "the hooks document is nested deeper than 32 levels; no hooks loaded") {
			t.Errorf("%s: %d hooks, diagnostics %v", name, len(r.Hooks()), ds)
		}
	}
}
