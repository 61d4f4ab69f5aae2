package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// demoBypasses are spellings of rm that a rule on the text of the command
// misses; the demo's no-rm rule must deny every one.
var demoBypasses = []string{
	"rm -rf notes.txt",
	"/bin/rm -rf notes.txt",
	"(rm notes.txt)",
	"$(rm notes.txt)",
	`\rm notes.txt`,
	`"rm" notes.txt`,
	`sh -c "rm notes.txt"`,
	"find . -delete",
	"echo notes.txt | xargs rm",
	"find . -name notes.txt -exec rm {} +",
	"sudo -n rm notes.txt",
	"env rm notes.txt",
	`eval "rm notes.txt"`,
	"true; timeout 5 nohup rm notes.txt",
}

// Through the command line, with the demo's policy, every bypass is denied
// and notes.txt survives.
func TestDemoPolicyDeniesRmBypasses(t *testing.T) {
	t.Parallel()
	demo, _ := filepath.Abs("../../examples/demo")
	tmp := t.TempDir()
	ws := filepath.Join(tmp, "workspace")
	copyDir(t, filepath.Join(demo, "workspace"), ws)
	type call struct {
		Name string            `yaml:"name"`
		Args map[string]string `yaml:"args"`
	}
	type turn struct {
		ToolCalls []call `yaml:"toolCalls,omitempty"`
		Text      string `yaml:"text,omitempty"`
	}
	var turns []turn
	for _, cmd := range demoBypasses {
		turns = append(turns, turn{ToolCalls: []call{{Name: "bash", Args: map[string]string{"command": cmd}}}})
	}
	turns = append(turns, turn{Text: "done"})
	src, err := yaml.Marshal(map[string]any{"turns": turns})
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(tmp, "script.yaml")
	os.WriteFile(script, src, 0o644)
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"run", "--model", "script:" + script, "--workdir", ws,
		"--policy", filepath.Join(demo, "policy.yaml"), "--approve", "no", "--max-turns", "100", "--state-dir", filepath.Join(tmp, ".tollgate"), "x"},
		strings.NewReader(""), &out, &errb)
	if code != exitDone {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	for i, cmd := range demoBypasses {
		want := fmt.Sprintf("[bash call_%d_1] denied by rule:no-rm: deleting files with rm is not allowed here", i+1)
		if !strings.Contains(out.String(), want) {
			t.Errorf("%q is not denied by no-rm (want %q)", cmd, want)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "notes.txt")); err != nil {
		t.Errorf("notes.txt: %v\n%s", err, out.String())
	}
}

func TestPolicyExplain(t *testing.T) {
	t.Parallel()
	demo, _ := filepath.Abs("../../examples/demo")
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Main(context.Background(), append([]string{"policy", "explain"}, args...), strings.NewReader(""), &out, &errb)
		return code, out.String(), errb.String()
	}
	code, out, errs := run("--policy", filepath.Join(demo, "policy.yaml"), "--tool", "bash",
		"--args", `{"command":"ls | xargs rm; sh -c \"rm notes.txt\"; $X y; printf '\u001b[2J'"}`)
	if code != exitDone {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"simple commands (7):",
		"  3. xargs rm  [rm, via xargs]\n     deny by rule:no-rm: deleting files with rm is not allowed here",
		"  5. rm notes.txt  [rm, via sh -c]\n     deny by rule:no-rm",
		"  6. $X y  [opaque: the program is only known when the script runs]\n     ask by rule:shell-opaque",
		"  1. ls  [ls]\n     no rule",
		`\x1b[2J`,
		"decision: deny by rule:no-rm: deleting files with rm is not allowed here",
		"refused at exec by bash's sandbox, whatever the spelling: rm",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("output holds a raw escape character:\n%q", out)
	}
	code, out, _ = run(filepath.Join(demo, "policy.yaml"), "--tool", "bash", "--args", `{"command":"wc -l notes.txt"}`)
	if code != exitDone || !strings.Contains(out, "decision: allow by runtime:default") {
		t.Errorf("wc: exit %d\n%s", code, out)
	}
	for _, bad := range [][]string{
		{"--tool", "bash"},
		{filepath.Join(demo, "policy.yaml"), "--args", "{}"},
		{filepath.Join(demo, "policy.yaml"), "--tool", "bash", "--args", "[1]"},
		{filepath.Join(demo, "policy.yaml"), "--policy", "x", "--tool", "bash"},
	} {
		if code, _, _ := run(bad...); code != exitUsage {
			t.Errorf("%q: exit %d, want %d", bad, code, exitUsage)
		}
	}
}

// A --deny glob that can never match a tool name is a usage error: it would
// let every tool run.
func TestDenyGlobThatNeverMatches(t *testing.T) {
	t.Parallel()
	for _, g := range []string{"edit|write", "mcp__fs__.*", "Bash(rm:*)", "edit,write"} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), []string{"run", "--model", "script:nonexistent.yaml", "--deny", g, "x"}, strings.NewReader(""), &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), "can never match") {
			t.Errorf("--deny %q: exit %d, stderr %q; want a usage error", g, code, errb.String())
		}
	}
}
