package declarative_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/hooks/declarative"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
)

// argv runs without a shell, but an interpreter among its elements reads a
// later element as code: model-controlled keys there are flagged as unsafe.
func TestUnsafeArgvIsFlagged(t *testing.T) {
	for src, unsafe := range map[string]bool{
		`argv: [sh, -c, "echo ${args} >> log"]`:                true,
		`argv: [/usr/bin/env, bash, -c, "x ${tool}"]`:          true,
		`argv: [timeout, 5, python3, -c, "print('${error}')"]`: true,
		`argv: [logger, -t, tollgate, "${args}"]`:              false, // data: no interpreter
		`argv: [sh, -c, 'echo "$TOLLGATE_ARGS"']`:              false, // the safe way
		`argv: [sh, /opt/hook.sh, "${args}"]`:                  true,  // a script's arguments may still be eval'd: flagged, conservatively
		`argv: ["${callId}"]`:                                  true,  // the model would choose the program
		`argv: ["/opt/${tool}-hook"]`:                          true,
		`argv: ["${agentId}", x]`:                              false, // a template, but not the model's: a warning only
	} {
		doc := "hooks:\n  - event: preToolUse\n    action: {type: command, " + src + "}\n"
		for _, allow := range []bool{false, true} {
			reg := declarative.FromYAML(strings.NewReader(doc), &declarative.Options{AllowUnsafeCommands: allow})
			got, skipped := false, false
			for _, d := range reg.Diagnostics() {
				got = got || d.Unsafe
				skipped = skipped || d.Skipped
			}
			if got != unsafe {
				t.Errorf("%s: unsafe = %v, want %v (%v)", src, got, unsafe, reg.Diagnostics())
			}
			// Skipped by default; kept, with the warning, when the caller opts in.
			want := 1
			if unsafe && !allow {
				want = 0
			}
			if len(reg.Hooks()) != want || skipped != (want == 0) {
				t.Errorf("%s (AllowUnsafeCommands %v): %d hooks (skipped %v), want %d (%v)", src, allow, len(reg.Hooks()), skipped, want, reg.Diagnostics())
			}
		}
	}
}

// A call write_file {"path":"$(touch PWNED)"} with a hook `echo edited
// ${args}` must not run the model's shell text: the entry is skipped unless
// the caller asks for seed 000's literal behaviour, under which it does run.
func TestUnsafeCommandFromYAMLDoesNotRunModelText(t *testing.T) {
	for _, allow := range []bool{false, true} {
		dir := t.TempDir()
		doc := "hooks:\n  - event: postToolUse\n    action: {type: command, command: 'cd " + dir + " && echo edited ${args}'}\n"
		reg := declarative.FromYAML(strings.NewReader(doc), &declarative.Options{AllowUnsafeCommands: allow})
		a := newAgent(t, agent.Options{
			Model: testkit.Script(
				[]model.FuncCall{testkit.Call("c1", "write_file", map[string]string{"path": "$(touch PWNED)"})},
			),
			Tools: agent.ToolList{&testkit.Counter{Name: "write_file"}},
		})
		reg.ApplyTo(context.Background(), a)
		if _, err := a.Run(context.Background(), "go"); err != nil {
			t.Fatal(err)
		}
		_, err := os.Stat(filepath.Join(dir, "PWNED"))
		if ran := err == nil; ran != allow {
			t.Errorf("AllowUnsafeCommands %v: the model's $(touch PWNED) ran = %v (%v)", allow, ran, reg.Diagnostics())
		}
	}
}
