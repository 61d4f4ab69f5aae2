package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The exit statuses README.md promises: 0 done, 1 error, 2 usage, 4 incomplete
// (3, pending, is pinned by the approval tests).
func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	done := write("done.yaml", "turns:\n  - text: hello\n")
	loop := write("loop.yaml", "turns:\n"+strings.Repeat("  - toolCalls: [{name: glob, args: {pattern: '*'}}]\n", 5))
	short := write("short.yaml", "turns:\n  - toolCalls: [{name: glob, args: {pattern: '*'}}]\n")
	bad := write("bad.yaml", "turns:\n  - txt: hello\n")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // in stdout+stderr
	}{
		{"done", []string{"run", "--model", "script:" + done, "--workdir", dir, "hi"}, exitDone, "hello"},
		{"incomplete", []string{"run", "--model", "script:" + loop, "--workdir", dir, "--max-turns", "2", "hi"}, exitIncomplete, "reached MaxTurns (2)"},
		{"script runs out", []string{"run", "--model", "script:" + short, "--workdir", dir, "hi"}, exitError, "no turn left"},
		{"no model", []string{"run", "hi"}, exitUsage, "--model is required"},
		{"no prompt", []string{"run", "--model", "script:" + done}, exitUsage, "accepts 1 arg"},
		{"unknown flag", []string{"run", "--nope", "--model", "script:" + done, "hi"}, exitUsage, "unknown flag: --nope"},
		{"bad script", []string{"run", "--model", "script:" + bad, "hi"}, exitUsage, "bad.yaml"},
		{"missing workdir", []string{"run", "--model", "script:" + done, "--workdir", filepath.Join(dir, "nope"), "hi"}, exitUsage, "nope"},
		{"unknown command", []string{"frobnicate"}, exitUsage, "unknown command"},
		{"no command", nil, exitDone, "Available Commands"},
		{"help", []string{"run", "--help"}, exitDone, "Exit status: 0 done, 1 error, 2 usage, 3 pending, 4 incomplete"},
		{"tools", []string{"tools", "--workdir", dir}, exitDone, "read-only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Main(context.Background(), tc.args, strings.NewReader(""), &out, &errb)
			if code != tc.code || !strings.Contains(out.String()+errb.String(), tc.want) {
				t.Errorf("exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", code, tc.code, tc.want, out.String(), errb.String())
			}
		})
	}
}

// A typo in a subcommand of a command group is a usage error (exit 2), never
// help with exit 0: "tollgate policy chek FILE && deploy" must not deploy.
func TestUnknownSubcommandIsUsageError(t *testing.T) {
	for _, args := range [][]string{{"policy", "chek", "x.yaml"}, {"hooks", "chek", "x.yaml"}, {"approvals", "aprove", "req_1"}} {
		code, out, errOut := runMain(t, args...)
		if code != exitUsage || !strings.Contains(errOut, "unknown command") {
			t.Errorf("%v: exit %d, want %d\n%s\n%s", args, code, exitUsage, out, errOut)
		}
	}
}
