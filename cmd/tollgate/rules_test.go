package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/internal/layer"
)

// Approve and remember at the terminal: a bash call asked about and
// approved is proposed as a rule of the local store's layer; a sandboxed
// tool of another run cannot accept it (the store is read-only to it);
// the OS user accepts it, and the next identical call runs without asking;
// the history names the change and who made it.
func TestPolicyRulesRememberLocally(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	bin := tollgateBinary(t)
	ws, state := t.TempDir(), t.TempDir()
	apWrite(t, ws, "gated.yaml", "turns:\n  - toolCalls:\n      - {name: bash, id: gated, args: {command: \"touch marker\"}}\n  - text: done\n")
	apWrite(t, ws, "policy.yaml", "rules:\n  - id: ask-marker\n    tool: bash\n    args: {command: {regex: marker}}\n    decision: ask\n    reason: needs a person\n")
	tg := func(args ...string) (int, string) {
		c := exec.Command(bin, args...)
		c.Dir = ws
		c.Env = append(os.Environ(), envStateDir+"="+state)
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		err := c.Run()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatal(err)
		}
		return c.ProcessState.ExitCode(), out.String()
	}
	code, out := tg("run", "--model", "script:gated.yaml", "--policy", "policy.yaml", "mark")
	m := regexp.MustCompile(`approvals approve (req_[0-9a-f]+)`).FindStringSubmatch(out)
	r := regexp.MustCompile(`stored run (run_[0-9a-f]+)`).FindStringSubmatch(out)
	if code != exitPending || m == nil || r == nil {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	if code, out = tg("policy", "rules", "propose", m[1]); code == 0 {
		t.Fatalf("a pending approval was remembered:\n%s", out)
	}
	if code, out = tg("approvals", "approve", m[1]); code != 0 {
		t.Fatalf("approve: exit %d\n%s", code, out)
	}
	if code, out = tg("resume", r[1]); code != 0 {
		t.Fatalf("resume: exit %d\n%s", code, out)
	}
	code, out = tg("policy", "rules", "propose", m[1])
	id := regexp.MustCompile(`proposed rule (allow-bash-[0-9a-f]+)`).FindStringSubmatch(out)
	if code != 0 || id == nil || !strings.Contains(out, `"command": {equals: "touch marker"}`) {
		t.Fatalf("propose: exit %d\n%s", code, out)
	}

	// A sandboxed tool cannot accept the rule: the store and its decision
	// key are hidden from it.
	attack := fmt.Sprintf(`%s policy rules accept --state-dir %s %s; echo "accept=$?"`, bin, state, id[1])
	apWrite(t, ws, "attack.yaml", fmt.Sprintf("turns:\n  - toolCalls:\n      - {name: bash, id: attack, args: {command: %q}}\n  - text: done\n", attack))
	code, out = tg("run", "--model", "script:attack.yaml", "--sandbox-read", filepath.Dir(bin), "--sandbox-read", state, "attack")
	if code != 0 || !regexp.MustCompile(`accept=[1-9]`).MatchString(out) {
		t.Fatalf("sandboxed attack: exit %d\n%s", code, out)
	}
	if code, out = tg("policy", "rules", "list"); code != 0 || !strings.Contains(out, "version 0, 0 rule(s), 1 proposal(s)") {
		t.Fatalf("the layer changed under a tool: exit %d\n%s", code, out)
	}
	if code, out = tg("run", "--model", "script:gated.yaml", "--policy", "policy.yaml", "mark"); code != exitPending {
		t.Fatalf("a proposal answered: exit %d\n%s", code, out)
	}

	if code, out = tg("policy", "rules", "accept", id[1]); code != 0 || !strings.Contains(out, "rule layer version 1: accept "+id[1]+" by person:"+currentUser()) {
		t.Fatalf("accept: exit %d\n%s", code, out)
	}
	if code, out = tg("run", "--model", "script:gated.yaml", "--policy", "policy.yaml", "mark"); code != 0 || strings.Contains(out, "approvals approve") {
		t.Fatalf("the remembered call was asked about again: exit %d\n%s", code, out)
	}
	if code, out = tg("policy", "rules", "history"); code != 0 || !strings.Contains(out, "accept allow rule "+id[1]+" (bash) by person:"+currentUser()) {
		t.Fatalf("history: exit %d\n%s", code, out)
	}
	if code, out = tg("policy", "rules", "remove", id[1]); code != 0 || !strings.Contains(out, "rule layer version 2: remove") {
		t.Fatalf("remove: exit %d\n%s", code, out)
	}
	if code, out = tg("run", "--model", "script:gated.yaml", "--policy", "policy.yaml", "mark"); code != exitPending {
		t.Fatalf("a removed rule still answered: exit %d\n%s", code, out)
	}
}

// A rule's YAML is printed with its indentation, so that what the person
// reads (and may paste into a policy file) is what the layer reads; a
// control character in it is escaped, not sent.
func TestRuleTextKeepsIndentation(t *testing.T) {
	text := "rules:\n  - id: allow-bash-1\n    tool: \"bash\"\n    command: {pattern: [\"go test *\"]}\n    reason: \"x\x1b[2J\"\n"
	want := "    rules:\n      - id: allow-bash-1\n        tool: \"bash\"\n        command: {pattern: [\"go test *\"]}\n        reason: \"x\\x1b[2J\"\n"
	if got := textBlock(text); got != want {
		t.Errorf("textBlock:\n%s\nwant:\n%s", got, want)
	}
}

// propose says when the rule it makes would not answer the very call it
// came from (the sample agent's `echo hello > greeting.txt`: a write
// redirection is never covered), and is silent when it would.
func TestProposeSaysWhenItsCallIsNotCovered(t *testing.T) {
	for _, c := range []struct {
		command string
		covers  bool
	}{
		{"echo hello > greeting.txt", false},
		{"go test ./server", true},
		{"FOO=1 go test ./server", true}, // remembered exactly: the same call is covered
	} {
		args, _ := json.Marshal(map[string]string{"command": c.command})
		p, err := layer.ProposeIn(layer.NewID(approval.Allow, "bash"), "bash", args, approval.Allow, "run/req", "/w")
		if err != nil {
			t.Fatalf("%s: %v", c.command, err)
		}
		if got := coversItsCall(p, "bash", args, "/w"); got != c.covers {
			t.Errorf("%q: covered %v, want %v\n%s", c.command, got, c.covers, p.Text)
		}
	}
}
