package claudecode_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tollgate-dev/tollgate/hooks/claudecode"
	"github.com/tollgate-dev/tollgate/internal/claudenames"
)

// A bad entry is skipped alone, with FILE:LINE:COL; the rest of the file
// loads.
func TestParseDiagnostics(t *testing.T) {
	src := `{
  "permissions": {"allow": ["Bash(ls)"]},
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "ok.sh"}]},
      {"matcher": "(", "hooks": [{"type": "command", "command": "x"}]},
      {"matcher": "Edit", "hooks": [{"type": "command"}, {"type": "prompt", "prompt": "p"}, {"type": "command", "command": "y", "timeout": "5"}]},
      "nonsense"
    ],
	"PreCompact": [{"hooks": [{"type": "command", "command": "z"}]}],
    "Nope": [],
    "Stop": [{"hooks": [{"type": "command", "command": "stop.sh", "timeout": 5, "extra": 1}]}]
  }
}`
	s := claudecode.Parse([]byte(src), "s.json")
	var got []string
	for _, d := range s.Diagnostics {
		got = append(got, d.Error())
	}
	want := []string{
		`s.json:6:7: warning: skipped hooks.PreToolUse[1]: matcher "(" is not a regular expression RE2 can compile: error parsing regexp: missing closing ): ` + "`(`" + `; the group matches nothing`,
		`s.json:7:37: warning: skipped hooks.PreToolUse[2].hooks[0]: a command handler needs a non-empty command`,
		`s.json:7:67: warning: skipped hooks.PreToolUse[2].hooks[1]: tollgate does not run "prompt" handlers (they ask a model); use a command or http handler`,
		`s.json:7:140: warning: skipped hooks.PreToolUse[2].hooks[2]: timeout must be a number of seconds, not a string`,
		`s.json:8:7: warning: skipped hooks.PreToolUse[3]: a matcher group must be an object with matcher and hooks, not a string`,
		`s.json:10:2: warning: hooks.PreCompact is accepted but never fires: tollgate does not compact transcripts`,
		`s.json:11:5: warning: skipped hooks.Nope: unknown event (want one of PreToolUse, PermissionRequest, PostToolUse, PostToolUseFailure, UserPromptSubmit, Stop, SubagentStop, SessionStart, SessionEnd, Notification)`,
		`s.json:12:81: warning: hooks.Stop[0].hooks[0]: unknown field "extra" is ignored`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
	if len(s.Handlers()) != 2 {
		t.Fatalf("%d handlers loaded, want 2 (ok.sh, stop.sh)", len(s.Handlers()))
	}
}

func TestParseWholeFileProblems(t *testing.T) {
	deep := strings.Repeat("[", 40) + strings.Repeat("]", 40)
	for _, tc := range []struct{ src, want string }{
		{`[1]`, "must be a JSON object"},
		{`{"hooks": [}`, "does not parse"},
		{`{"hooks": 3}`, "hooks must be an object"},
		{`{"hooks": {"Stop": ` + deep + `}}`, "nests deeper"},
		{`{"disableAllHooks": true, "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]}}`, "disableAllHooks"},
		{``, "empty"},
		{`{"model": "x"}`, "no hooks object"},
	} {
		s := claudecode.Parse([]byte(tc.src), "f.json")
		if len(s.Handlers()) != 0 || len(s.Diagnostics) == 0 || !strings.Contains(s.Diagnostics[0].Error(), tc.want) {
			t.Errorf("%q: %d handlers, diagnostics %v; want none and %q", tc.src, len(s.Handlers()), s.Diagnostics, tc.want)
		}
	}
	big := make([]byte, claudecode.MaxSettingsSize+1)
	if s := claudecode.Parse(big, "big.json"); len(s.Handlers()) != 0 || !strings.Contains(s.Diagnostics[0].Error(), "larger than") {
		t.Errorf("a too large file: %v", s.Diagnostics)
	}
}

// Files add up; a file named twice is read once; SettingsFiles finds the
// user's and the project's files.
func TestLoadFilesAndSettingsFiles(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	write := func(p, body string) {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(home, ".claude", "settings.json"), `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"a"}]}]}}`)
	write(filepath.Join(proj, ".claude", "settings.local.json"), `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"b"}]}]}}`)
	files := claudecode.SettingsFiles(proj, home)
	if len(files) != 2 {
		t.Fatalf("found %v", files)
	}
	s, err := claudecode.LoadFiles(append(files, files[0])...)
	if err != nil || len(s.Handlers()) != 2 {
		t.Fatalf("loaded %d handlers, err %v; want 2", len(s.Handlers()), err)
	}
	if _, err := claudecode.LoadFiles(filepath.Join(proj, "missing.json")); !os.IsNotExist(errorsUnwrap(err)) {
		t.Fatalf("missing file: %v", err)
	}
}

func errorsUnwrap(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}

func TestMatcher(t *testing.T) {
	for _, tc := range []struct {
		m    string
		name string
		want bool
	}{
		{"", "Bash", true}, {"*", "anything", true},
		{"Bash", "Bash", true}, {"Bash", "bash", false}, {"Bash", "BashX", false},
		{"Edit|Write", "Write", true}, {"Edit, Write", "Write", true}, {"Edit|Write", "NotebookEdit", false},
		{"Edit.*", "NotebookEdit", true}, {"mcp__memory__.*", "mcp__memory__create", true},
		{"mcp__memory__.*", "mcp__github__x", false}, {"^Read$", "Read", true}, {"^Read$", "ReadX", false},
	} {
		m, err := claudecode.CompileMatcher(tc.m)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Match(tc.name); got != tc.want {
			t.Errorf("matcher %q on %q = %v, want %v", tc.m, tc.name, got, tc.want)
		}
	}
	if _, err := claudecode.CompileMatcher("a(b"); err == nil {
		t.Error("a(b compiled")
	}
}

// FuzzParse: any input gives settings and diagnostics without panicking, and
// every handler kept has a source position.
func FuzzParse(f *testing.F) {
	f.Add([]byte(guards))
	f.Add([]byte(`{"hooks":{"PreToolUse":[{"matcher":"(","hooks":[]}]}}`))
	f.Add([]byte(`{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"x","timeout":1e99}]}]}}`))
	f.Add([]byte(`{"permissions":{"deny":["Bash(rm:*)",7],"ask":"x","allow":["Read"],"defaultMode":"plan"}}`))
	f.Fuzz(func(t *testing.T, src []byte) {
		s := claudecode.Parse(src, "f.json")
		for _, p := range s.Permissions {
			if !strings.HasPrefix(p.Source, "f.json:") || (p.List != "allow" && p.List != "ask" && p.List != "deny") {
				t.Fatalf("permission without source or list: %+v", p)
			}
		}
		for _, h := range s.Handlers() {
			if !strings.Contains(h, ": f.json:") {
				t.Fatalf("handler without source: %s", h)
			}
		}
	})
}

// Identical handlers, from two files (or two groups), run once per event.
func TestIdenticalHandlersRunOnce(t *testing.T) {
	one := `{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"echo x >> \"$CLAUDE_PROJECT_DIR/count\""}]}]}}`
	h := newHarness(t, one)
	h.s.Add(claudecode.Parse([]byte(strings.Replace(one, `"Bash"`, `"Bash|Read"`, 1)), "local.json"))
	if len(h.s.Handlers()) != 2 {
		t.Fatalf("%d handlers", len(h.s.Handlers()))
	}
	if _, err := h.run(t, "go", bash("true")); err != nil {
		t.Fatal(err)
	}
	if got := h.read(t, "count"); got != "x\n" {
		t.Fatalf("the handler ran %d times", strings.Count(got, "x"))
	}
}

// The events an unknown event's warning offers all fire, SubagentStop
// among them.
func TestUnknownEventListsEveryFiredEvent(t *testing.T) {
	s := claudecode.Parse([]byte(`{"hooks": {"Nope": []}}`), "s.json")
	if len(s.Diagnostics) != 1 {
		t.Fatalf("diagnostics %v", s.Diagnostics)
	}
	msg := s.Diagnostics[0].Message
	_, list, ok := strings.Cut(msg, "(want one of ")
	if !ok {
		t.Fatalf("message %q offers no events", msg)
	}
	offered := strings.Split(strings.TrimSuffix(list, ")"), ", ")
	for _, ev := range offered {
		doc := fmt.Sprintf(`{"hooks": {%q: [{"hooks": [{"type": "command", "command": "true"}]}]}}`, ev)
		if s := claudecode.Parse([]byte(doc), "s.json"); len(s.Handlers()) != 1 {
			t.Errorf("offered event %s does not load a handler: %v", ev, s.Diagnostics)
		}
	}
	if !slices.Contains(offered, string(claudenames.SubagentStop)) {
		t.Errorf("%q leaves out SubagentStop", msg)
	}
}

// The permissions object's lists are read with their positions, whether or
// not the file has hooks; what tollgate does not apply is reported.
func TestParsePermissions(t *testing.T) {
	s := claudecode.Parse([]byte(`{"permissions": {"deny": ["Bash(rm:*)", 7], "allow": ["Read(./src/**)"], "defaultMode": "plan"}}`), "s.json")
	got := fmt.Sprint(s.Permissions)
	if got != "[{deny Bash(rm:*) s.json:1:27} {allow Read(./src/**) s.json:1:55}]" {
		t.Errorf("permissions %s", got)
	}
	var msgs []string
	for _, d := range s.Diagnostics {
		msgs = append(msgs, d.Error())
	}
	if len(msgs) != 2 || !strings.Contains(msgs[0], "skipped permissions.deny[1]") || !strings.Contains(msgs[1], "permissions.defaultMode is not applied") {
		t.Errorf("diagnostics %q", msgs)
	}
}

// A misspelt event or field is reported with the name that was probably
// meant.
func TestParseSuggestsTheNameMeant(t *testing.T) {
	src := `{"hooks": {
  "PreTooluse": [{"hooks": [{"type": "command", "command": "a"}]}],
  "Stop": [{"matchr": "x", "hooks": [{"type": "command", "command": "b", "timeuot": 5}]}]
}}`
	s := claudecode.Parse([]byte(src), "s.json")
	var got []string
	for _, d := range s.Diagnostics {
		got = append(got, d.Error())
	}
	want := []string{
		`s.json:2:3: warning: skipped hooks.PreTooluse: unknown event; did you mean "PreToolUse"?`,
		`s.json:3:13: warning: hooks.Stop[0]: unknown field "matchr" is ignored; did you mean "matcher"?`,
		`s.json:3:74: warning: hooks.Stop[0].hooks[0]: unknown field "timeuot" is ignored; did you mean "timeout"?`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
}
