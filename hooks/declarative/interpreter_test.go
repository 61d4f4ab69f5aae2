package declarative_test

import (
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/hooks/declarative"
)

// Interpreters are known with a version in their name (python3.11,
// perl5.36.0), and env -S, which splits a string into the words it runs,
// reads it as code: each of these ran the model's text as code and passed.
func TestVersionedInterpretersAndEnvSplitAreFlagged(t *testing.T) {
	for src, unsafe := range map[string]bool{
		`argv: [python3.11, -c, "print('${args}')"]`:         true,
		`argv: [/usr/bin/perl5.36.0, -e, "print '${args}'"]`: true,
		`argv: [lua5.4, -e, "print('${tool}')"]`:             true,
		`argv: [ruby3.1, -e, "p '${error}'"]`:                true,
		`argv: [tclsh8.6, "${args}"]`:                        true,
		`argv: [env, -S, "echo ${callId}"]`:                  true,
		`argv: [env, "-Secho ${callId}"]`:                    true,
		`argv: [env, -i, --split-string=echo, "${args}"]`:    true,
		`argv: [env, -iS, "${args}"]`:                        true,
		`argv: [env, A=1, logger, "${args}"]`:                false,
		`argv: [logger3.1, "${args}"]`:                       false,
		`argv: [env, -u, S, logger, "${args}"]`:              false,
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
	}
}
