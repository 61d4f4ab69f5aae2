package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const swapPolicy = `turns:
  - toolCalls:
      - name: bash
        args: {command: "mv conf conf.orig; mkdir -p conf; printf 'autonomy: full_auto\\n' > conf/policy.yaml; mkdir -p .claude; cat > .claude/settings.local.json <<'J'\n{\"hooks\":{}}\nJ\necho planted"}
  - toolCalls:
      - {name: write, args: {path: a.txt, content: harmless}}
  - toolCalls:
      - {name: write, args: {path: notes.txt, content: OVERWRITTEN}}
  - text: done
`

// pinWorkspace is a workspace whose policy lies in conf/ (writes of a.txt
// ask, of notes.txt are denied) and a script whose bash call swaps the
// policy's directory and plants a Claude Code settings file before a write
// that halts the run.
func pinWorkspace(t *testing.T) (dir, ws string) {
	dir = t.TempDir()
	ws = filepath.Join(dir, "ws")
	if err := os.MkdirAll(filepath.Join(ws, "conf"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, ws, "notes.txt", "original\n")
	writeFile(t, filepath.Join(ws, "conf"), "policy.yaml", "autonomy: full_auto\nrules:\n  - id: review-write\n    tool: write\n    decision: ask\n    reason: reviewed\n  - id: no-notes\n    tool: write\n    args: {path: {pathPrefix: notes.txt}}\n    decision: deny\n    reason: never\n")
	writeFile(t, dir, "s.yaml", swapPolicy)
	return dir, ws
}

// A run's bash call that swaps the policy's directory for one holding an
// allow-all policy (here unsandboxed, so that the swap succeeds) and plants
// .claude/settings.local.json: the resume after a person's "no" refuses to
// build the run, naming the policy, and the denied write never runs.
func TestResumeRefusesSwappedPolicy(t *testing.T) {
	t.Parallel()
	dir, ws := pinWorkspace(t)
	state := filepath.Join(dir, "state")
	code, out, errOut := runMain(t, "run", "--model", "script:"+filepath.Join(dir, "s.yaml"), "--workdir", ws, "--policy", filepath.Join(ws, "conf", "policy.yaml"),
		"--claude-project-settings", "--sandbox", "off", "--state-dir", state, "tidy")
	req := regexp.MustCompile(`(req_[0-9a-f]+)`).FindString(out)
	run := regexp.MustCompile(`stored run (run_[0-9a-f]+)`).FindStringSubmatch(out)
	if code != exitPending || req == "" || run == nil || !strings.Contains(out, "planted") {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := runMain(t, "approvals", "deny", "--state-dir", state, req, "--reason", "no"); code != 0 {
		t.Fatalf("deny: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runMain(t, "resume", "--state-dir", state, run[1])
	if code != exitError || !strings.Contains(errOut, filepath.Join(ws, "conf", "policy.yaml")+" changed since the run started") {
		t.Fatalf("resume after the swap: exit %d\n%s\n%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "notes.txt")); string(b) != "original\n" {
		t.Fatalf("notes.txt = %q", b)
	}
	// With the policy restored, the planted settings file is what stops it.
	if err := os.RemoveAll(filepath.Join(ws, "conf")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(ws, "conf.orig"), filepath.Join(ws, "conf")); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runMain(t, "resume", "--state-dir", state, run[1])
	if code != exitError || !strings.Contains(errOut, filepath.Join(ws, ".claude", "settings.local.json")+" appeared") {
		t.Fatalf("resume with a planted settings file: exit %d\n%s\n%s", code, out, errOut)
	}
}

// Sandboxed (the default), the same bash call can neither move the
// policy's directory nor create the workspace's .claude directory or a
// settings file in it.
func TestSandboxKeepsGoverningFilesInPlace(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	dir, ws := pinWorkspace(t)
	code, out, errOut := runMain(t, "run", "--model", "script:"+filepath.Join(dir, "s.yaml"), "--workdir", ws, "--policy", filepath.Join(ws, "conf", "policy.yaml"),
		"--state-dir", filepath.Join(dir, "state"), "--approve", "no", "tidy")
	if code != exitDone {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "conf", "policy.yaml")); !strings.Contains(string(b), "no-notes") {
		t.Errorf("the policy was swapped: %q\n%s", b, out)
	}
	if _, err := os.Stat(filepath.Join(ws, "conf.orig")); err == nil {
		t.Errorf("the policy's directory was moved\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(ws, ".claude", "settings.local.json")); err == nil {
		t.Errorf("a Claude Code settings file was planted\n%s", out)
	}
	// The .claude directory the sandbox made to seal it goes with the run.
	if _, err := os.Lstat(filepath.Join(ws, ".claude")); err == nil {
		t.Errorf("the run left a .claude directory in a workspace that had none\n%s", out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "notes.txt")); string(b) != "original\n" {
		t.Fatalf("notes.txt = %q", b)
	}
}
