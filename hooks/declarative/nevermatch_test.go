package declarative

import (
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/configfile"
)

// A matcher that can never match a tool name (a regular expression, a list)
// is kept, as seed 000 keeps it, with a positioned warning.
func TestMatcherThatNeverMatchesWarns(t *testing.T) {
	const doc = `hooks:
  - event: preToolUse
    matcher: "edit|write"
    action: {type: log, message: x}
  - event: postToolUse
    matcher: "mcp__fs__.*"
    action: {type: log, message: x}
  - event: preToolUse
    matcher: "mcp__fs__*"
    action: {type: log, message: x}
`
	lg, _ := newRecLogger()
	r := FromYAML(strings.NewReader(doc), &Options{Logger: lg, File: "h.yaml"})
	if n := len(r.Hooks()); n != 3 {
		t.Fatalf("%d hooks loaded, want 3", n)
	}
	var got []string
	for _, d := range r.Diagnostics() {
		got = append(got, d.Error())
	}
	if len(got) != 2 || !strings.HasPrefix(got[0], "h.yaml:3:14: warning:") || !strings.Contains(got[0], `"edit|write" can never match`) ||
		!strings.HasPrefix(got[1], "h.yaml:6:14: warning:") || !strings.Contains(got[1], "not a regular expression") {
		t.Errorf("diagnostics:\n%s", strings.Join(got, "\n"))
	}

	reg := Of([]Config{{Event: PreToolUse, Matcher: "read(x)", Action: Log("x")}, {Event: OnError, Matcher: "a|b", Action: Log("x")}}, &Options{Logger: lg})
	ds := reg.Diagnostics()
	if len(reg.Hooks()) != 2 || len(ds) != 1 || ds[0].Severity != configfile.SeverityWarning || ds[0].Skipped || !strings.Contains(ds[0].Message, "config[0]") {
		t.Errorf("Of: hooks %d, diagnostics %v; want 2 hooks and one warning about config[0]", len(reg.Hooks()), ds)
	}
}
