package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A policy with several errors, given to run, prints each as a line of its
// own that names the flag and the problem's file:line:col, instead of one
// line holding them all with \n between them.
func TestRunPolicyErrorsOneLineEach(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := writeFile(t, dir, "s.yaml", "turns:\n  - text: hi\n")
	pol := writeFile(t, dir, "p.yaml", "autonomy: supervized\nrules:\n  - id: a\n    tool: bash\n    decision: maybe\n")
	code, _, errOut := runMain(t, "run", "--model", "script:"+script, "--workdir", dir, "--state-dir", filepath.Join(t.TempDir(), "state"), "--policy", pol, "x")
	if code != exitUsage {
		t.Fatalf("exit %d, want %d\n%s", code, exitUsage, errOut)
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	for _, want := range []string{
		"tollgate: run: --policy: " + pol + `:1:11: error: unknown autonomy level "supervized" (want one of full_auto, supervised, cautious, manual)`,
		"tollgate: run: --policy: " + pol + `:5:15: error: unknown decision "maybe" (want allow, ask or deny)`,
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("no line\n%s\nin stderr:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, `\n`) {
		t.Errorf("problems joined on one line:\n%s", errOut)
	}
}

// So does a server configuration with several problems.
func TestServeConfigErrorsOneLineEach(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	config := filepath.Join(dir, "server.yaml")
	writeTestFile(t, config, "leaseTtl: 30\nagents:\n  a:\n    model: script:s.yaml\n    workdir: ws\n    approvalTtl: 1 hour\n")
	code, _, errOut := runMain(t, "serve", "--config", config, "--state-dir", filepath.Join(dir, "state"))
	if code != exitUsage {
		t.Fatalf("exit %d, want %d\n%s", code, exitUsage, errOut)
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	for _, want := range []string{
		"tollgate: serve: " + config + `:1:11: leaseTtl: want a duration such as 30s or 10m, got "30"`,
		"tollgate: serve: " + config + `:6:18: agents.a.approvalTtl: want a duration such as 30s or 10m, got "1 hour"`,
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("no line\n%s\nin stderr:\n%s", want, errOut)
		}
	}
}

// errorLines splits a list of errors found under context, putting the
// context before each; it keeps whole an error whose parts are not one a
// line (fmt.Errorf with two %w), and still escapes newlines inside a part.
func TestErrorLinesNestedList(t *testing.T) {
	t.Parallel()
	list := errors.Join(errors.New("f:1:2: one"), errors.New("f:3:4: two\ntollgate: forged"))
	got := errorLines(fmt.Errorf("run: --policy: %w", list))
	want := []string{"run: --policy: f:1:2: one", `run: --policy: f:3:4: two\ntollgate: forged`}
	if !slices.Equal(got, want) {
		t.Errorf("errorLines = %q, want %q", got, want)
	}
	got = errorLines(fmt.Errorf("ctx: %w", fmt.Errorf("%w: %w", errors.New("decided"), errors.New("by bob"))))
	if want := []string{"ctx: decided: by bob"}; !slices.Equal(got, want) {
		t.Errorf("errorLines = %q, want %q", got, want)
	}
}
