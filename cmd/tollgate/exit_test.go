package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/sqlite"
)

// The exit statuses docs/cli.md promises: 0 done, 1 error, 2 usage, 4 incomplete
// (3, pending, is pinned by the approval tests).
func TestExitCodes(t *testing.T) {
	t.Parallel()
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
	promptFile := write("prompt.txt", "from the file\n")
	emptyFile := write("empty.txt", " \n\t\n")
	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
		code  int
		want  string // in stdout+stderr
	}{
		{"done", []string{"run", "--model", "script:" + done, "--workdir", dir, "hi"}, "", exitDone, "hello"},
		{"incomplete", []string{"run", "--model", "script:" + loop, "--workdir", dir, "--max-turns", "2", "hi"}, "", exitIncomplete, "reached MaxTurns (2)"},
		{"script runs out", []string{"run", "--model", "script:" + short, "--workdir", dir, "hi"}, "", exitError, "no turn left"},
		{"no model", []string{"run", "hi"}, "", exitUsage, "--model is required"},
		{"no prompt", []string{"run", "--model", "script:" + done}, "", exitUsage, "no prompt"},
		{"empty prompt", []string{"run", "--model", "script:" + done, ""}, "", exitUsage, "the prompt is empty"},
		{"blank prompt", []string{"run", "--model", "script:" + done, " \n "}, "", exitUsage, "the prompt is empty"},
		{"empty stdin", []string{"run", "--model", "script:" + done, "-"}, "", exitUsage, "the prompt is empty"},
		{"empty prompt file", []string{"run", "--model", "script:" + done, "--prompt-file", emptyFile}, "", exitUsage, "the prompt is empty"},
		{"missing prompt file", []string{"run", "--model", "script:" + done, "--prompt-file", filepath.Join(dir, "nope.txt")}, "", exitUsage, "nope.txt"},
		{"prompt twice", []string{"run", "--model", "script:" + done, "--prompt-file", promptFile, "hi"}, "", exitUsage, "not both"},
		{"unknown flag", []string{"run", "--nope", "--model", "script:" + done, "hi"}, "", exitUsage, "unknown flag: --nope"},
		{"bad script", []string{"run", "--model", "script:" + bad, "hi"}, "", exitUsage, "bad.yaml"},
		{"missing workdir", []string{"run", "--model", "script:" + done, "--workdir", filepath.Join(dir, "nope"), "hi"}, "", exitUsage, "nope"},
		{"unknown command", []string{"frobnicate"}, "", exitUsage, "unknown command"},
		{"no command", nil, "", exitDone, "Available Commands"},
		{"help", []string{"run", "--help"}, "", exitDone, "Exit status: 0 done, 1 error, 2 usage, 3 pending, 4 incomplete"},
		{"tools", []string{"tools", "--workdir", dir}, "", exitDone, "read-only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Main(context.Background(), tc.args, strings.NewReader(tc.stdin), &out, &errb)
			if code != tc.code || !strings.Contains(out.String()+errb.String(), tc.want) {
				t.Errorf("exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", code, tc.code, tc.want, out.String(), errb.String())
			}
		})
	}
}

// A typo in a subcommand of a command group is a usage error (exit 2), never
// help with exit 0: "tollgate policy chek FILE && deploy" must not deploy.
func TestUnknownSubcommandIsUsageError(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"policy", "chek", "x.yaml"}, {"hooks", "chek", "x.yaml"}, {"approvals", "aprove", "req_1"}} {
		code, out, errOut := runMain(t, args...)
		if code != exitUsage || !strings.Contains(errOut, "unknown command") {
			t.Errorf("%v: exit %d, want %d\n%s\n%s", args, code, exitUsage, out, errOut)
		}
	}
}

// The prompt comes from the argument, from stdin with -, or from
// --prompt-file, and reaches the model as the user's message (read back from
// the stored run).
func TestPromptSources(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "done.yaml")
	os.WriteFile(script, []byte("turns:\n  - toolCalls: [{name: glob, args: {pattern: '*'}}]\n  - text: hello\n"), 0o644)
	file := filepath.Join(dir, "prompt.txt")
	os.WriteFile(file, []byte("prompt from the file\n"), 0o644)
	for _, tc := range []struct {
		name, stdin, want string
		args              []string
	}{
		{"argument", "", "prompt as an argument", []string{"prompt as an argument"}},
		{"stdin", "prompt from stdin\nsecond line\n", "prompt from stdin\nsecond line\n", []string{"-"}},
		{"file", "", "prompt from the file\n", []string{"--prompt-file", file}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := t.TempDir()
			var out, errb bytes.Buffer
			args := append([]string{"run", "--model", "script:" + script, "--workdir", dir, "--state-dir", state}, tc.args...)
			if code := Main(context.Background(), args, strings.NewReader(tc.stdin), &out, &errb); code != exitDone {
				t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
			}
			s, err := sqlite.Open(context.Background(), filepath.Join(state, storeFile), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			page, err := s.ListRuns(context.Background(), store.RunFilter{AllTenants: true})
			if err != nil || len(page.Runs) != 1 {
				t.Fatalf("stored runs: %v, %v", page, err)
			}
			st, err := runcore.LoadState(page.Runs[0])
			if err != nil {
				t.Fatal(err)
			}
			msgs := st.Messages()
			if len(msgs) == 0 || msgs[0].Role != model.RoleUser || msgs[0].Content != tc.want {
				t.Errorf("first message %+v, want the user's %q", msgs, tc.want)
			}
		})
	}
}
