package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tollgate policy replay: a run recorded under a policy that asks before
// every write, replayed against one that lets the agent write on its own (full_auto),
// shows the approval it would have saved, as text and as JSON; the same
// store and file give the same output.
func TestPolicyReplay(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	script := apWrite(t, dir, "script.yaml", `turns:
  - toolCalls:
      - {name: write, id: w1, args: {path: notes.txt, content: hello}}
  - toolCalls:
      - {name: read, id: r1, args: {path: notes.txt}}
  - text: "done"
`)
	recorded := apWrite(t, dir, "recorded.yaml", "rules:\n  - id: ask-write\n    tool: write\n    decision: ask\n    reason: writes are reviewed\n")
	if code, out, errOut := apMain(t, "run", "--model", "script:"+script, "--workdir", ws, "--policy", recorded, "--approve", "yes", "--state-dir", state, "write a note"); code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	candidate := apWrite(t, dir, "candidate.yaml", "autonomy: full_auto\n")
	code, out, errOut := apMain(t, "policy", "replay", "--state-dir", state, candidate)
	if code != 0 {
		t.Fatalf("replay: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"replayed 2 call(s) of 1 run(s) against " + candidate + ": 1 unchanged, 1 changed\n",
		"approvals saved: 1 (of which a person had declined 0); approvals added: 0\n",
		"ask -> allow: 1\n",
		`"write" "{\"content\":\"hello\",\"path\":\"notes.txt\"}": was rule:ask-write (approved), now autonomy:full_auto`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("replay output lacks %q:\n%s", want, out)
		}
	}
	if _, again, _ := apMain(t, "policy", "replay", "--state-dir", state, candidate); again != out {
		t.Errorf("a second replay differs:\n%s", again)
	}
	code, out, _ = apMain(t, "policy", "replay", "--json", "--since", "1h", "--state-dir", state, recorded)
	var r struct {
		Calls     int `json:"calls"`
		Unchanged int `json:"unchanged"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Calls != 2 || r.Unchanged != 2 {
		t.Fatalf("replay of the recorded policy, as JSON: exit %d %+v\n%s", code, r, out)
	}
	if code, _, errOut := apMain(t, "policy", "replay", "--state-dir", state, filepath.Join(dir, "missing.yaml")); code == 0 {
		t.Fatalf("a missing policy file: exit 0\n%s", errOut)
	}
}

// policy explain shows what a shadow rule would vote, apart from the
// decision it does not change.
func TestPolicyExplainShadow(t *testing.T) {
	pol := apWrite(t, t.TempDir(), "p.yaml", "rules:\n  - id: no-push\n    mode: shadow\n    tool: bash\n    command: {pattern: \"git push *\"}\n    decision: deny\n    reason: pushes are reviewed\n")
	code, out, errOut := apMain(t, "policy", "explain", pol, "--tool", "bash", "--args", `{"command":"git push origin main"}`)
	if code != 0 || !strings.Contains(out, "decision: allow by runtime:default") ||
		!strings.Contains(out, "shadow (decides nothing): deny by rule:no-push: pushes are reviewed\n") {
		t.Fatalf("explain: exit %d\n%s%s", code, out, errOut)
	}
}
