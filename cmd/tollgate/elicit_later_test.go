package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// elicitRun starts a run whose one call, mcp__app__deploy, asks the
// person through MCP elicitation with nobody at a terminal: the run halts
// and is stored. The server's message is read from the file msg in the
// workspace. It returns the state directory, the run's ID, the request's
// ID and msg.
func elicitRun(t *testing.T) (state, runID, reqID, msg string) {
	t.Helper()
	dir := t.TempDir()
	msg = filepath.Join(dir, "message")
	if err := os.WriteFile(msg, []byte("Deploy to which region?"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"TOLLGATE_TEST_MCP_SERVER": "elicit", "TOLLGATE_TEST_MCP_MESSAGE": msg}
	cfg := mcpConfig(t, dir, map[string]any{"app": map[string]any{"command": os.Args[0], "env": env}})
	script := apWrite(t, dir, "script.yaml", "turns:\n  - toolCalls:\n      - {name: mcp__app__deploy, id: d1, args: {env: prod}}\n  - text: done\n")
	state = t.TempDir()
	code, out, errOut := apMain(t, "run", "--model", "script:"+script, "--workdir", dir, "--mcp", cfg, "--state-dir", state, "deploy")
	if code != exitPending {
		t.Fatalf("run: exit %d, want %d\n%s%s", code, exitPending, out, errOut)
	}
	m := regexp.MustCompile(`tollgate approvals answer --state-dir \S+ (elicitation_[0-9a-f_]+) ANSWER`).FindStringSubmatch(out)
	run := regexp.MustCompile(`stored run (run_[0-9a-f]+)`).FindStringSubmatch(out)
	if m == nil || run == nil || !strings.Contains(out, `  | MCP server "app" asks: Deploy to which region?`) || !strings.Contains(out, "  |   1. eu\n") {
		t.Fatalf("run did not show the elicitation and how to answer it:\n%s%s", out, errOut)
	}
	return state, run[1], m[1], msg
}

// A server's elicitation with nobody at a terminal halts the run like a
// question; the stored run (a new process opens the store and starts the
// server again) is answered with `approvals answer`, and resume gives the
// answer to the server's same elicitation: accepted with the form's
// values, declined, or cancelled.
func TestElicitationHaltAnswerResume(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"accept", []string{"2", "us"}, `server got {"action":"accept","content":{"count":2,"region":"us"}}`},
		{"decline", []string{"--decline"}, `server got {"action":"decline"}`},
		{"cancel", []string{"--data", `{"action":"cancel"}`}, `server got {"action":"cancel"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			state, runID, reqID, _ := elicitRun(t)
			code, out, errOut := apMain(t, "approvals", "list", "--state-dir", state)
			if code != 0 || !strings.Contains(out, reqID) {
				t.Fatalf("approvals list: exit %d, the elicitation is not pending:\n%s%s", code, out, errOut)
			}
			code, out, errOut = apMain(t, append([]string{"approvals", "answer", "--state-dir", state, reqID}, c.args...)...)
			if code != 0 {
				t.Fatalf("approvals answer: exit %d\n%s%s", code, out, errOut)
			}
			code, out, errOut = apMain(t, "resume", "--state-dir", state, runID)
			if code != 0 || !strings.Contains(out, c.want) {
				t.Fatalf("resume: exit %d, want the server to have got %s:\n%s%s", code, c.want, out, errOut)
			}
		})
	}
}

// An answer that does not fit the server's form is refused at once; an
// answer given for one elicitation is not given to another (the server
// asks something else when the run resumes): the call ends with an error
// and the server never sees the answer.
func TestElicitationAnswerChecked(t *testing.T) {
	t.Parallel()
	state, runID, reqID, msg := elicitRun(t)
	code, out, errOut := apMain(t, "approvals", "answer", "--state-dir", state, reqID, "2", "mars")
	if code == 0 || !strings.Contains(out+errOut, `"mars" is not one of "eu", "us"`) {
		t.Errorf("an answer out of the enum: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := apMain(t, "approvals", "answer", "--state-dir", state, reqID, "2", "us"); code != 0 {
		t.Fatalf("approvals answer: exit %d\n%s%s", code, out, errOut)
	}
	if err := os.WriteFile(msg, []byte("Delete which region?"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = apMain(t, "resume", "--state-dir", state, runID)
	if strings.Contains(out, `"action":"accept"`) || !strings.Contains(out, "second pending request") {
		t.Fatalf("resume: exit %d; the answer must not reach another elicitation:\n%s%s", code, out, errOut)
	}
}

// A policy's elicitation rule declines what an untrusted server asks: the
// server is told decline without anyone being asked, and the call's
// record names the rule.
func TestElicitationDeniedByPolicy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := mcpConfig(t, dir, map[string]any{"app": map[string]any{"command": os.Args[0], "env": map[string]string{"TOLLGATE_TEST_MCP_SERVER": "elicit"}}})
	script := apWrite(t, dir, "script.yaml", "turns:\n  - toolCalls:\n      - {name: mcp__app__deploy, id: d1, args: {env: prod}}\n  - text: done\n")
	pol := apWrite(t, t.TempDir(), "policy.yaml", "elicitation:\n  - id: untrusted-never-ask\n    trusted: false\n    decision: deny\n    reason: only trusted servers ask for input\n")
	records := filepath.Join(t.TempDir(), "records.jsonl")
	code, out, errOut := apMain(t, "run", "--model", "script:"+script, "--workdir", dir, "--mcp", cfg, "--policy", pol,
		"--records", records, "--state-dir", t.TempDir(), "deploy")
	if code != exitDone || !strings.Contains(out, `server got {"action":"decline"}`) ||
		!strings.Contains(out, "decline (rule:untrusted-never-ask: only trusted servers ask for input)") {
		t.Fatalf("run: exit %d, want the server declined by the rule:\n%s%s", code, out, errOut)
	}
	b, err := os.ReadFile(records)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"elicitations":[{"server":"app","mode":"form","outcome":"decline","by":"rule:untrusted-never-ask","reason":"only trusted servers ask for input"}]`) {
		t.Errorf("the record does not name the rule:\n%s", b)
	}
}

// A call a policy asks about, approved by a person, whose server then asks
// for input with nobody at a terminal halts again on the elicitation, with
// the approval kept: answered with `approvals answer`, the resume runs the
// call once more without asking for the approval again, the server gets
// the answer, and the record names who approved the call and who answered
// the server.
func TestElicitationAfterApproval(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := map[string]string{"TOLLGATE_TEST_MCP_SERVER": "elicit"}
	cfg := mcpConfig(t, dir, map[string]any{"app": map[string]any{"command": os.Args[0], "env": env}})
	script := apWrite(t, dir, "script.yaml", "turns:\n  - toolCalls:\n      - {name: mcp__app__deploy, id: d1, args: {env: prod}}\n  - text: done\n")
	pol := apWrite(t, t.TempDir(), "policy.yaml", "rules:\n  - id: ask-deploy\n    tool: mcp__app__deploy\n    decision: ask\n    reason: deploys need a person\n")
	records := filepath.Join(t.TempDir(), "records.jsonl")
	state := t.TempDir()
	code, out, errOut := apMain(t, "run", "--model", "script:"+script, "--workdir", dir, "--mcp", cfg, "--policy", pol,
		"--records", records, "--state-dir", state, "deploy")
	approve := regexp.MustCompile(`tollgate approvals approve --state-dir \S+ (req_[0-9a-f]+)`).FindStringSubmatch(out)
	run := regexp.MustCompile(`stored run (run_[0-9a-f]+)`).FindStringSubmatch(out)
	if code != exitPending || approve == nil || run == nil {
		t.Fatalf("run: exit %d, want it halted on the approval:\n%s%s", code, out, errOut)
	}
	if code, out, errOut := apMain(t, "approvals", "approve", "--state-dir", state, "--admin", "--by", "alice", approve[1]); code != 0 {
		t.Fatalf("approvals approve: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = apMain(t, "resume", "--state-dir", state, run[1])
	answer := regexp.MustCompile(`tollgate approvals answer --state-dir \S+ (elicitation_[0-9a-f_]+) ANSWER`).FindStringSubmatch(out)
	if code != exitPending || answer == nil || strings.Contains(out, "second pending request") {
		t.Fatalf("resume after the approval: exit %d, want it halted on the elicitation:\n%s%s", code, out, errOut)
	}
	if code, out, errOut := apMain(t, "approvals", "answer", "--state-dir", state, "--admin", "--by", "bob", answer[1], "2", "us"); code != 0 {
		t.Fatalf("approvals answer: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = apMain(t, "resume", "--state-dir", state, run[1])
	if code != exitDone || !strings.Contains(out, `server got {"action":"accept","content":{"count":2,"region":"us"}}`) || strings.Contains(out, "approvals approve") {
		t.Fatalf("resume after the answer: exit %d, want the server to get the answer without a new approval:\n%s%s", code, out, errOut)
	}
	b, err := os.ReadFile(records)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	last := lines[len(lines)-1]
	for _, want := range []string{`"outcome":"approved","by":{"kind":"person","name":"alice"}`,
		`{"source":{"kind":"person","name":"alice"},"actor":`,
		`{"source":{"kind":"person","name":"bob"},"actor":`, `"ran":true`, `"elicitations":[{"server":"app","mode":"form","outcome":"accept","by":"person:bob"}]`} {
		if !strings.Contains(last, want) {
			t.Errorf("the call's record lacks %s:\n%s", want, last)
		}
	}
}
