package declarative

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/configfile"
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
		if len(r.Hooks()) != 0 || len(ds) != 1 || ds[0].Severity != configfile.SeverityError || ds[0].Line == 0 ||
			!strings.Contains(ds[0].Error(), "the hooks document is nested deeper than 32 levels; no hooks loaded") {
			t.Errorf("%s: %d hooks, diagnostics %v", name, len(r.Hooks()), ds)
		}
	}
}

// A log action and a command's stdin carried a value of any size (a 5 MB
// argument, an error): both are now bounded, with a marker.
func TestLogAndStdinAreBounded(t *testing.T) {
	huge := strings.Repeat("a", 5<<20)
	recs := runAction(t, context.Background(), Log("args: ${args}"), map[string]any{"args": huge})
	if len(recs) != 1 || len(recs[0].Msg) > logMessageLimit+100 || !strings.HasSuffix(recs[0].Msg, fmt.Sprintf("…[%d of %d bytes cut]", len(huge)+6-logMessageLimit, len(huge)+6)) {
		t.Errorf("log record of %d bytes: %.80q", len(recs[0].Msg), recs[0].Msg[max(0, len(recs[0].Msg)-80):])
	}
	var m map[string]string
	if err := json.Unmarshal(stdinJSON(map[string]any{"error": huge, "tool": "t"}), &m); err != nil {
		t.Fatal(err)
	}
	if len(m["error"]) > stdinValueLimit+100 || !strings.Contains(m["error"], "bytes cut]") || m["tool"] != "t" {
		t.Errorf("stdin error value of %d bytes", len(m["error"]))
	}
}
