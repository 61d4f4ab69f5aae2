package declarative

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tollgate-dev/tollgate/configfile"
)

// The seed's YAML example loads as three hooks.
func TestFromYAMLSeedExample(t *testing.T) {
	const doc = `hooks:
  - event: preToolUse
    matcher: "file_*"
    action:
      type: log
      message: "${tool} starting"
  - event: postToolUse
    matcher: "*"
    action:
      type: log
      message: "${tool} took ${latencyMs} ms, success=${success}"
  - event: onError
    action:
      type: command
      command: "echo tool failed >> hooks.log"
`
	lg, h := newRecLogger()
	r := FromYAML(strings.NewReader(doc), &Options{Logger: lg, File: "h.yaml"})
	want := []Config{
		{Event: PreToolUse, Matcher: "file_*", Action: Log("${tool} starting"), Source: "h.yaml:2:5"},
		{Event: PostToolUse, Matcher: MatchAll, Action: Log("${tool} took ${latencyMs} ms, success=${success}"), Source: "h.yaml:7:5"},
		{Event: OnError, Action: Command("echo tool failed >> hooks.log"), Source: "h.yaml:12:5"},
	}
	if d := cmp.Diff(want, r.Hooks()); d != "" {
		t.Errorf("hooks (-want +got):\n%s", d)
	}
	if len(r.Diagnostics()) != 0 || len(h.records()) != 0 {
		t.Errorf("diagnostics %v, logs %v; want none", r.Diagnostics(), h.records())
	}
}

func TestFromYAMLSpellings(t *testing.T) {
	const doc = `hooks:
  - {event: PRE_TOOL_USE, action: {type: LOG, message: a}}
  - {event: postToolUse, action: {type: Log, message: b}}
  - {event: ON_START, action: {type: COMMAND, command: "true"}}
  - {event: onStop, action: {type: command, argv: [sleep, 0.01, 1, true]}}
  - {event: ON_ERROR, action: {type: command, command: x, timeout: 1500ms}}
`
	r := FromYAML(strings.NewReader(doc), nil)
	var got []string
	for _, c := range r.Hooks() {
		got = append(got, c.Event.String()+" "+c.Action.describe())
	}
	want := []string{
		`PRE_TOOL_USE log "a"`, `POST_TOOL_USE log "b"`, `ON_START command "true"`,
		`ON_STOP command argv["sleep" "0.01" "1" "true"]`, `ON_ERROR command "x" timeout=1.5s`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("hooks (-want +got):\n%s\ndiagnostics: %v", d, r.Diagnostics())
	}
}

// Every bad entry is skipped with a WARN at its position; the good ones stay.
func TestFromYAMLSkipsBadEntries(t *testing.T) {
	const doc = `hooks:
  - event: preTool
    action: {type: log, message: a}
  - action: {type: log, message: a}
  - event: preToolUse
  - event: preToolUse
    action: {type: shout, message: a}
  - event: preToolUse
    action: {type: log}
  - event: onError
    action: {type: command}
  - event: preToolUse
    colour: red
    action: {type: log, message: a}
  - event: preToolUse
    action: {type: log, message: a, color: red}
  - event: 7
    action: {type: log, message: a}
  - event: preToolUse
    matcher: [a, b]
    action: {type: log, message: a}
  - event: onError
    action: {type: command, command: x, timeout: soon}
  - event: onError
    action: {type: command, command: x, timeout: -1}
  - event: onError
    action: {type: command, command: x, timeout: 5}
  - event: onError
    action: {type: command, command: x, timeout: 11m}
  - event: onError
    action: {type: command, command: x, timeout: "-1s"}
  - event: preToolUse
    action: {type: log, message: a, timeout: 5s}
  - event: onError
    action: {type: command, command: x, argv: [y]}
  - event: onError
    action: {type: command, argv: []}
  - just a string
  - event: pretooluse
    action: {type: log, message: a}
  - event: preToolUse
    event: postToolUse
    action: {type: log, message: a}
  - event: preToolUse
    action: "log it"
  - event: onError
    action: {type: command, message: hi, command: x}
  - event: preToolUse
    action: {type: log, message: ok}
`
	lg, h := newRecLogger()
	r := FromYAML(strings.NewReader(doc), &Options{Logger: lg, File: "bad.yaml"})
	if got := r.Hooks(); len(got) != 1 || got[0].Action.Message != "ok" || got[0].Source != "bad.yaml:48:5" {
		t.Fatalf("hooks = %v, want only the last one; diagnostics:\n%v", got, r.Diagnostics())
	}
	var got []string
	for _, d := range r.Diagnostics() {
		if !d.Skipped || d.Severity != configfile.SeverityWarning {
			t.Errorf("diagnostic %v: want a skipped WARN", d)
		}
		got = append(got, d.Error())
	}
	want := []string{
		`bad.yaml:2:12: warning: skipped hook 1: unknown event "preTool" (want one of preToolUse, postToolUse, onStart, onStop, onError, or the same in UPPER_SNAKE case)`,
		`bad.yaml:4:5: warning: skipped hook 2: missing event`,
		`bad.yaml:5:5: warning: skipped hook 3: missing action`,
		`bad.yaml:7:20: warning: skipped hook 4: action: unknown action type "shout" (want log or command)`,
		`bad.yaml:9:13: warning: skipped hook 5: action: a log action needs message`,
		`bad.yaml:11:13: warning: skipped hook 6: action: a command action needs command or argv`,
		`bad.yaml:13:5: warning: skipped hook 7: unknown field "colour" (want event, matcher, action)`,
		`bad.yaml:16:37: warning: skipped hook 8: action: unknown field "color" (want type, message, command, argv, timeout)`,
		`bad.yaml:17:12: warning: skipped hook 9: event must be a string, not a number`,
		`bad.yaml:20:14: warning: skipped hook 10: matcher must be a string glob, not a list`,
		`bad.yaml:23:50: warning: skipped hook 11: action: timeout "soon" is not a Go duration such as "5s" or "500ms"`,
		`bad.yaml:25:50: warning: skipped hook 12: action: timeout must be a Go duration with a unit such as "5s" or "500ms", not a number "-1"`,
		`bad.yaml:27:50: warning: skipped hook 13: action: timeout must be a Go duration with a unit such as "5s" or "500ms", not a number "5"`,
		`bad.yaml:29:50: warning: skipped hook 14: action: timeout 11m0s is out of bounds (1ms to 10m0s)`,
		`bad.yaml:31:50: warning: skipped hook 15: action: timeout -1s is out of bounds (1ms to 10m0s)`,
		`bad.yaml:33:46: warning: skipped hook 16: action: timeout applies to command actions only`,
		`bad.yaml:35:13: warning: skipped hook 17: action: a command action takes command or argv, not both`,
		`bad.yaml:37:13: warning: skipped hook 18: action: argv needs a program as its first element`,
		`bad.yaml:38:5: warning: skipped hook 19: a hook must be a mapping with event, matcher and action, not a string`,
		`bad.yaml:39:12: warning: skipped hook 20: unknown event "pretooluse" (did you mean preToolUse or PRE_TOOL_USE?)`,
		`bad.yaml:42:5: warning: skipped hook 21: field "event" appears twice`,
		`bad.yaml:45:13: warning: skipped hook 22: action must be a mapping with type and message or command, not a string`,
		`bad.yaml:47:13: warning: skipped hook 23: action: a command action takes no message`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("diagnostics (-want +got):\n%s", d)
	}
	// Each one was logged at WARN, by the registry's logger.
	warns := h.atLeast(slog.LevelWarn)
	if len(warns) != len(want) {
		t.Fatalf("%d WARN records, want %d", len(warns), len(want))
	}
	for i, w := range warns {
		if w.Msg != want[i] || w.Attrs["logger"] != registryLoggerName {
			t.Errorf("record %d = %+v, want %q with logger=%s", i, w, want[i], registryLoggerName)
		}
	}
}

// A document that does not parse, or has the wrong shape, gives an ERROR and
// an empty registry.
func TestFromYAMLBrokenDocument(t *testing.T) {
	tests := []struct{ name, doc, want string }{
		{"syntax", "hooks:\n  - event: preToolUse\n   action: [a, b\n", "f.yaml:3:"},
		{"tabs", "hooks:\n\t- event: x\n", "f.yaml:2:"},
		{"scalar", "just text\n", "f.yaml:1:1: error: the document must be a mapping with a top-level hooks list, not a string; no hooks loaded"},
		{"list top", "- event: preToolUse\n", "f.yaml:1:1: error: the document must be a mapping"},
		{"hooks map", "hooks:\n  event: preToolUse\n", "f.yaml:2:3: error: hooks must be a list, not a mapping; no hooks loaded"},
		{"hooks twice", "hooks: []\nhooks: []\n", "f.yaml:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lg, h := newRecLogger()
			r := FromYAML(strings.NewReader(tt.doc), &Options{Logger: lg, File: "f.yaml"})
			if len(r.Hooks()) != 0 {
				t.Errorf("hooks = %v, want none", r.Hooks())
			}
			ds := r.Diagnostics()
			if len(ds) != 1 || ds[0].Severity != configfile.SeverityError || !strings.HasPrefix(ds[0].Error(), tt.want) {
				t.Fatalf("diagnostics = %v, want one ERROR starting %q", ds, tt.want)
			}
			if errs := h.atLeast(slog.LevelError); len(errs) != 1 {
				t.Errorf("ERROR records = %v, want 1", errs)
			}
		})
	}
}

// Warnings that keep the hook: unknown top-level keys, ignored matchers, shell
// commands with model-controlled templates, and (C22) text cut by a comment.
func TestFromYAMLWarnings(t *testing.T) {
	const doc = `version: 2
hooks:
  - event: onError
    matcher: "bash"
    action: {type: log, message: "failed"}
  - event: onError
    action:
      type: command
      command: echo ${tool} failed with ${error} >> log
  - event: onError
    action:
      type: command
      command: echo a #b
  - event: onError
    action:
      type: command
      command: "echo a #b"
  - event: postToolUse
    action:
      type: log
      message: done   # a real comment, also reported
  - event: postToolUse
    matcher: ""
    action:
      type: command
      argv: [logger, "${tool}", x #y
        ]
`
	r := FromYAML(strings.NewReader(doc), &Options{File: "w.yaml", AllowUnsafeCommands: true})
	hs := r.Hooks()
	if len(hs) != 6 {
		t.Fatalf("%d hooks, want 6: %v", len(hs), r.Diagnostics())
	}
	if hs[2].Action.Command != "echo a" || hs[3].Action.Command != "echo a #b" {
		t.Errorf("commands %q and %q, want the plain one cut and the quoted one whole", hs[2].Action.Command, hs[3].Action.Command)
	}
	var got []string
	for _, d := range r.Diagnostics() {
		if d.Skipped {
			t.Errorf("%v: not skipped", d)
		}
		got = append(got, d.Error())
	}
	want := []string{
		`w.yaml:1:1: warning: unknown top-level key "version" is ignored (want hooks)`,
		`w.yaml:4:14: warning: hook 1: matcher is ignored for onError: the hook runs for every tool`,
		`w.yaml:9:16: warning: hook 2: command uses ${tool}, whose value comes from the model or an error and is not quoted: the shell may run it; use $TOLLGATE_TOOL, stdin or argv instead`,
		`w.yaml:9:16: warning: hook 2: command uses ${error}, whose value comes from the model or an error and is not quoted: the shell may run it; use $TOLLGATE_ERROR, stdin or argv instead`,
		`w.yaml:13:16: warning: hook 3: command is "echo a": the rest of the line, "#b", is a YAML comment and was dropped; quote the whole value to keep it`,
		`w.yaml:21:16: warning: hook 5: message is "done": the rest of the line, "# a real comment, also reported", is a YAML comment and was dropped; quote the whole value to keep it`,
		`w.yaml:23:14: warning: hook 6: matcher is empty; the hook runs for every tool (leave matcher out to say so)`,
		`w.yaml:26:33: warning: hook 6: argv[2] is "x": the rest of the line, "#y", is a YAML comment and was dropped; quote the whole value to keep it`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("diagnostics (-want +got):\n%s", d)
	}
}

func TestFromYAMLEmpty(t *testing.T) {
	for _, doc := range []string{"", "# nothing\n", "hooks:\n", "hooks: []\n", "other: 1\n"} {
		r := FromYAML(strings.NewReader(doc), nil)
		if len(r.Hooks()) != 0 {
			t.Errorf("%q: hooks %v", doc, r.Hooks())
		}
		for _, d := range r.Diagnostics() {
			if d.Severity != configfile.SeverityWarning || d.Skipped {
				t.Errorf("%q: diagnostic %v, want a WARN that skips nothing", doc, d)
			}
		}
	}
}

func TestFromYAMLAnchorsAndAliases(t *testing.T) {
	const doc = `hooks:
  - &first
    event: preToolUse
    action: &act {type: log, message: a}
  - event: postToolUse
    action: *act
  - *first
  - event: !!str onError
    action: {type: log, message: !!str b}
`
	r := FromYAML(strings.NewReader(doc), &Options{File: "a.yaml"})
	var got []string
	for _, c := range r.Hooks() {
		got = append(got, c.String())
	}
	want := []string{`a.yaml:2:5 PRE_TOOL_USE log "a"`, `a.yaml:8:5 ON_ERROR log "b"`}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("hooks (-want +got):\n%s\n%v", d, r.Diagnostics())
	}
	if ds := r.Diagnostics(); len(ds) != 2 || !strings.Contains(ds[0].Message, "aliases are not supported") || !strings.Contains(ds[1].Message, "aliases are not supported") {
		t.Errorf("diagnostics = %v", ds)
	}
}

func TestFromYAMLTooLarge(t *testing.T) {
	doc := "hooks: []\n#" + strings.Repeat("x", maxDocumentSize)
	r := FromYAML(strings.NewReader(doc), nil)
	if ds := r.Diagnostics(); len(ds) != 1 || ds[0].Severity != configfile.SeverityError || !strings.Contains(ds[0].Message, "larger than") {
		t.Errorf("diagnostics = %v", ds)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestFromYAMLReadError(t *testing.T) {
	r := FromYAML(failingReader{}, nil)
	if ds := r.Diagnostics(); len(ds) != 1 || ds[0].Severity != configfile.SeverityError || !strings.Contains(ds[0].Message, "disk on fire") {
		t.Errorf("diagnostics = %v", ds)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "hooks.yaml")
	if err := os.WriteFile(path, []byte("hooks:\n  - event: onStop\n    action: {type: log, message: bye}\n  - event: nope\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := Load(path, &Options{File: "ignored"})
	if err != nil {
		t.Fatal(err)
	}
	if hs := r.Hooks(); len(hs) != 1 || hs[0].Source != path+":2:5" {
		t.Errorf("hooks = %v", hs)
	}
	if ds := r.Diagnostics(); len(ds) != 1 || ds[0].File != path || ds[0].Line != 4 || ds[0].Col != 12 {
		t.Errorf("diagnostics = %+v", ds)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml"), nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(missing) err = %v, want fs.ErrNotExist", err)
	}
}

func TestOfSkipsInvalidConfigs(t *testing.T) {
	lg, h := newRecLogger()
	r := Of([]Config{
		{Event: PreToolUse, Action: Log("ok")},
		{Event: 0, Action: Log("no event")},
		{Event: OnError, Action: Command("x").withTimeout(-time.Second)},
		{Event: OnError, Action: Command("x").withTimeout(time.Microsecond)},
		{Event: OnError, Action: Command("x").withTimeout(time.Millisecond)},
		{Event: OnError, Action: Argv("")},
		{Event: OnError, Action: Log("")},
		{Event: OnError, Action: Action{}},
	}, &Options{Logger: lg})
	if got := len(r.Hooks()); got != 2 {
		t.Errorf("%d hooks kept, want 2: %v", got, r.Hooks())
	}
	var got []string
	for _, d := range r.Diagnostics() {
		got = append(got, d.Error())
	}
	want := []string{
		"warning: skipped config[1] (Event(0)): invalid hook action: unknown event 0",
		"warning: skipped config[2] (ON_ERROR): invalid hook action: timeout -1s is out of bounds (1ms to 10m0s)",
		"warning: skipped config[3] (ON_ERROR): invalid hook action: timeout 1µs is out of bounds (1ms to 10m0s)",
		"warning: skipped config[5] (ON_ERROR): invalid hook action: argv needs a program as its first element",
		"warning: skipped config[6] (ON_ERROR): invalid hook action: a log action needs message",
		"warning: skipped config[7] (ON_ERROR): invalid hook action: unknown action type 0 (want ActionLog or ActionCommand)",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("diagnostics (-want +got):\n%s", d)
	}
	if n := len(h.atLeast(slog.LevelWarn)); n != len(want) {
		t.Errorf("%d WARN records, want %d", n, len(want))
	}
}

func FuzzFromYAML(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.yaml")
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	for _, s := range []string{"", "hooks:", "hooks: [", "hooks:\n  - event: onError\n    action: {type: command, command: echo a #b\n}", "- a\n- b", "hooks: &a [*a]", "hooks:\n  - <<: {event: onStop}\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		r := FromYAML(strings.NewReader(doc), &Options{File: "fuzz.yaml"})
		// YAML breaks lines at \n, \r\n and a lone \r.
		lines := strings.Count(strings.ReplaceAll(doc, "\r\n", "\n"), "\n") + strings.Count(strings.ReplaceAll(doc, "\r\n", ""), "\r") + 1
		for _, c := range r.Hooks() {
			if err := c.validate(); err != nil {
				t.Fatalf("loaded an invalid hook %v: %v", c, err)
			}
			if !strings.HasPrefix(c.Source, "fuzz.yaml:") {
				t.Fatalf("hook source %q", c.Source)
			}
		}
		errs := 0
		for _, d := range r.Diagnostics() {
			if d.Line < 0 || d.Line > lines+1 || d.Col < 0 {
				t.Fatalf("diagnostic %v outside the document (%d lines)", d, lines)
			}
			if d.Severity == configfile.SeverityError {
				errs++
			}
		}
		if errs > 0 && len(r.Hooks()) > 0 {
			t.Fatalf("an ERROR diagnostic, yet %d hooks loaded", len(r.Hooks()))
		}
	})
}

// The demo's hooks file loads cleanly: it logs every call and runs a command
// on errors.
func TestDemoHooksFile(t *testing.T) {
	r, err := Load("../../examples/demo/hooks.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if ds := r.Diagnostics(); len(ds) != 0 {
		t.Fatalf("diagnostics: %v", ds)
	}
	var pre, post, onErr bool
	for _, h := range r.Hooks() {
		switch {
		case h.Event == PreToolUse && h.Matcher == MatchAll && h.Action.Type == ActionLog:
			pre = true
		case h.Event == PostToolUse && h.Matcher == MatchAll && h.Action.Type == ActionLog:
			post = true
		case h.Event == OnError && h.Action.Type == ActionCommand:
			onErr = true
		}
	}
	if !pre || !post || !onErr {
		t.Errorf("hooks %v: want logs on every call and a command on errors", r.Hooks())
	}
}

// A misspelt field is skipped with the field that was probably meant.
func TestLoadSuggestsTheFieldMeant(t *testing.T) {
	doc := "hooks:\n  - event: preToolUse\n    matchr: bash\n    action: {type: log, message: a}\n  - event: onError\n    action: {type: log, mesage: a}\n"
	r := FromYAML(strings.NewReader(doc), &Options{File: "h.yaml", Logger: slog.New(slog.DiscardHandler)})
	var got []string
	for _, d := range r.Diagnostics() {
		got = append(got, d.Error())
	}
	want := []string{
		`h.yaml:3:5: warning: skipped hook 1: unknown field "matchr"; did you mean "matcher"?`,
		`h.yaml:6:25: warning: skipped hook 2: action: unknown field "mesage"; did you mean "message"?`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("diagnostics (-want +got):\n%s", d)
	}
}
