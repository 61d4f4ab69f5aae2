package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// With a rule denying pathPrefix secret, the agent read and overwrote
// secret/key.txt through a link public -> secret in the workspace, also with
// bash denied. Both calls are now denied by the rule.
func TestSymlinkDoesNotBypassPathPrefix(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(filepath.Join(ws, "secret"), 0o755); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(ws, "secret", "key.txt")
	if err := os.WriteFile(key, []byte("sk-the-key\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("secret", filepath.Join(ws, "public")); err != nil {
		t.Fatal(err)
	}
	pol := writeFile(t, dir, "policy.yaml", "rules:\n  - id: no-secret\n    args: {path: {pathPrefix: secret}}\n    decision: deny\n    reason: secret is off limits\n")
	script := writeFile(t, dir, "s.yaml", `turns:
  - toolCalls:
      - {name: read, args: {path: public/key.txt}}
      - {name: write, args: {path: public/key.txt, content: pwned}}
      - {name: read, args: {path: `+filepath.Join(ws, "public", "key.txt")+`}}
  - text: done
`)
	code, out, errOut := runMain(t, "run", "--model", "script:"+script, "--workdir", ws, "--policy", pol, "--deny", "bash", "--approve", "no", "go")
	if code != exitDone || strings.Count(out, "<- error (46 bytes): denied by rule:no-secret") != 3 || strings.Contains(out, "sk-the-key") {
		t.Errorf("exit %d\n%s\n%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(key); string(b) != "sk-the-key\n" {
		t.Errorf("secret/key.txt = %q", b)
	}
}

// read on a FIFO in the workspace blocked the run forever, past --timeout
// and SIGINT; it is now an error result and the run goes on.
func TestReadFIFODoesNotHang(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := writeFile(t, dir, "s.yaml", "turns:\n  - toolCalls: [{name: read, args: {path: pipe}}, {name: grep, args: {pattern: x}}]\n  - text: done\n")
	code, out, errOut := runMain(t, "run", "--model", "script:"+script, "--workdir", dir, "go")
	if code != exitDone || !strings.Contains(out, "pipe is a named pipe (FIFO)") {
		t.Errorf("exit %d\n%s\n%s", code, out, errOut)
	}
}

// A model's tool name and call ID reached the terminal raw: escape sequences
// could clear the screen, and a newline could forge a line such as
// "approved by person:admin". So could a YAML error quoting the file.
func TestTerminalOutputIsEscaped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := writeFile(t, dir, "s.yaml", `turns:
  - toolCalls:
      - {name: "x\e[2J\n   [x] approved by person:admin", id: "c\e]0;title\a1"}
  - text: "done \e[31mred\x9b"
`)
	code, out, errOut := runMain(t, "run", "--model", "script:"+script, "--workdir", dir, "go")
	all := out + errOut
	if code != exitDone || strings.ContainsAny(all, "\x1b\x07\u009b") || strings.Contains(all, "\n   [x] approved") {
		t.Errorf("exit %d, raw control characters or a forged line:\n%q", code, all)
	}
	for _, want := range []string{`x\x1b[2J\x0a   [x] approved by person:admin`, `c\x1b]0;title\x071`, `done \x1b[31mred\x9b`} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	// --json keeps JSON valid and escapes what encoding/json leaves raw.
	code, out, _ = runMain(t, "run", "--json", "--model", "script:"+script, "--workdir", dir, "go")
	if code != exitDone || strings.ContainsAny(out, "\x1b\x07\u009b") || !strings.Contains(out, `\u009b`) {
		t.Errorf("--json: exit %d\n%q", code, out)
	}
	bad := writeFile(t, dir, "bad.yaml", "turns:\n  - text: \"\x1b[2Jhi\"\n    bogus\x1b[2J: 1\n")
	_, _, errOut = runMain(t, "run", "--model", "script:"+bad, "--workdir", dir, "go")
	if strings.ContainsRune(errOut, 0x1b) || errOut == "" {
		t.Errorf("a YAML error printed raw: %q", errOut)
	}
}

// A link changed after a call was authorized (here by a preToolUse command
// hook, which runs between the decision and the tool) led read to a file
// the policy denies. The tool now judges the file it opened with the run's
// policy; the records keep the real path next to the requested one; and
// apply_patch's files meet the same path rules.
func TestLinkChangedAfterDecisionIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	for name, content := range map[string]string{"secret/key.txt": "sk-the-key\n", "open/key.txt": "public\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("open", filepath.Join(ws, "public")); err != nil {
		t.Fatal(err)
	}
	pol := writeFile(t, dir, "policy.yaml", "rules:\n  - id: no-secret\n    args: {path: {pathPrefix: secret}}\n    decision: deny\n    reason: secret is off limits\n")
	hooksFile := writeFile(t, dir, "hooks.yaml", "hooks:\n  - event: preToolUse\n    matcher: read\n    action: {type: command, command: 'ln -sfn secret "+filepath.Join(ws, "public")+"'}\n")
	records := filepath.Join(dir, "records.jsonl")
	script := writeFile(t, dir, "s.yaml", `turns:
  - toolCalls:
      - {name: read, id: swapped, args: {path: public/key.txt}}
  - toolCalls:
      - {name: apply_patch, id: patch, args: {patchText: "*** Begin Patch\n*** Add File: secret/planted.txt\n+x\n*** End Patch\n"}}
  - text: done
`)
	code, out, errOut := runMain(t, "run", "--model", "script:"+script, "--workdir", ws, "--policy", pol, "--hooks", hooksFile, "--records", records, "go")
	if code != exitDone || strings.Contains(out, "sk-the-key") ||
		!strings.Contains(out, "refused: public/key.txt leads to secret/key.txt: denied by rule:no-secret: secret is off limits") ||
		!strings.Contains(out, "[apply_patch patch] denied by rule:no-secret") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(ws, "secret", "planted.txt")); err == nil {
		t.Error("apply_patch planted a file under secret")
	}
	b, err := os.ReadFile(records)
	if err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(ws, "secret", "key.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := `"files":[{"path":"public/key.txt","realPath":"` + real + `"}]`
	if !strings.Contains(string(b), want) {
		t.Errorf("the records lack %s:\n%s", want, b)
	}
}
