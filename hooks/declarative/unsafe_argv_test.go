package declarative_test

import (
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/hooks/declarative"
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
	} {
		doc := "hooks:\n  - event: preToolUse\n    action: {type: command, " + src + "}\n"
		reg := declarative.FromYAML(strings.NewReader(doc), nil)
		got := false
		for _, d := range reg.Diagnostics() {
			got = got || d.Unsafe
		}
		if got != unsafe {
			t.Errorf("%s: unsafe = %v, want %v (%v)", src, got, unsafe, reg.Diagnostics())
		}
		if len(reg.Hooks()) != 1 {
			t.Errorf("%s: the hook must still load (seed 000 skips only bad entries)", src)
		}
	}
}
