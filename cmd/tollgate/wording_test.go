package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// Errors name what the user typed, not the packages that found them: a
// missing workspace, an unknown run ID.
func TestErrorsInTheUsersTerms(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := apWrite(t, dir, "s.yaml", "turns:\n  - text: hi\n")
	state := filepath.Join(dir, "state")
	if code, _, errOut := tgMain(t, "run", "--model", "script:"+script, "--state-dir", state, "--workdir", filepath.Join(dir, "nowhere"), "x"); code != exitUsage ||
		!strings.Contains(errOut, "run: --workdir "+filepath.Join(dir, "nowhere")+": no such directory") || strings.Contains(errOut, "lstat") {
		t.Errorf("run --workdir nowhere: exit %d, stderr:\n%s", code, errOut)
	}
	if code, _, errOut := tgMain(t, "run", "--model", "script:"+script, "--state-dir", state, "--workdir", script, "x"); code != exitUsage ||
		!strings.Contains(errOut, "run: --workdir "+script+": not a directory") {
		t.Errorf("run --workdir FILE: exit %d, stderr:\n%s", code, errOut)
	}
	// A store for the commands that only read one.
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := tgMain(t, "run", "--model", "script:"+script, "--state-dir", state, "--workdir", ws, "x"); code != exitDone {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	for _, args := range [][]string{{"runs", "show", "run_x"}, {"runs", "cancel", "run_x"}, {"resume", "run_x"}} {
		code, _, errOut := tgMain(t, append(args, "--state-dir", state)...)
		if code != exitError || !strings.Contains(errOut, `no run "run_x" (see 'tollgate runs list')`) || strings.Contains(errOut, "store:") {
			t.Errorf("%s: exit %d, stderr:\n%s", strings.Join(args, " "), code, errOut)
		}
	}
}

// --approve=no's declines say why once: the flag is the decider, the reason
// is what it does.
func TestApproveNoSaysWhyOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	script := apWrite(t, dir, "s.yaml", "turns:\n  - toolCalls: [{name: write, args: {path: a.txt, content: x}}]\n  - text: done\n")
	policy := apWrite(t, dir, "p.yaml", "rules:\n  - id: ask-write\n    tool: write\n    decision: ask\n")
	code, out, errOut := tgMain(t, "run", "--model", "script:"+script, "--workdir", ws, "--policy", policy, "--approve", "no", "--state-dir", filepath.Join(dir, "state"), "x")
	want := "declined by flag:--approve=no: every request is declined without asking"
	if code != exitDone || !strings.Contains(out, want) || strings.Contains(out, "declined by --approve=no") {
		t.Errorf("exit %d, want a line %q:\n%s%s", code, want, out, errOut)
	}
}

// The text output leaves out the decision of a call nothing objected to,
// and says a person answered a question rather than approved it.
func TestPrinterDecisionLines(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	p := &printer{w: &out}
	alice := tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}
	for _, ev := range []agent.Event{
		{Kind: agent.EventToolCall, Call: &model.ToolCall{ID: "c1", Name: "read", Arguments: []byte(`{}`)}},
		{Kind: agent.EventDecision, CallID: "c1", Decision: &gate.Decision{Outcome: gate.OutcomeAllowed, By: approval.Default}},
		{Kind: agent.EventToolCall, Call: &model.ToolCall{ID: "c2", Name: "question", Arguments: []byte(`{}`)}},
		{Kind: agent.EventPending, CallID: "c2", Request: &tool.Request{ID: "q1", Kind: tool.KindQuestion, Prompt: "Which?"}},
		{Kind: agent.EventDecision, CallID: "c2", Decision: &gate.Decision{Outcome: gate.OutcomeApproved, By: alice}},
		{Kind: agent.EventToolCall, Call: &model.ToolCall{ID: "c3", Name: "write", Arguments: []byte(`{}`)}},
		{Kind: agent.EventPending, CallID: "c3", Request: &tool.Request{ID: "r1", Kind: tool.KindApproval, Prompt: "Allow write?"}},
		{Kind: agent.EventDecision, CallID: "c3", Decision: &gate.Decision{Outcome: gate.OutcomeApproved, By: alice}},
		{Kind: agent.EventToolCall, Call: &model.ToolCall{ID: "c4", Name: "question", Arguments: []byte(`{}`)}},
		{Kind: agent.EventPending, CallID: "c4", Request: &tool.Request{ID: "q2", Kind: tool.KindQuestion, Prompt: "Which?"}},
		{Kind: agent.EventDecision, CallID: "c4", Decision: &gate.Decision{Outcome: gate.OutcomeApproved, By: tool.Principal{Kind: tool.PrincipalFlag, Name: "--approve=yes"}}},
	} {
		p.event(ev)
	}
	if strings.Contains(out.String(), "[read c1] allowed") {
		t.Errorf("a call nothing objected to has a decision line:\n%s", out.String())
	}
	for _, want := range []string{"[question c2] answered by person:alice\n", "[write c3] approved by person:alice\n",
		"[question c4] approved by flag:--approve=yes, without an answer\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestTook(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{0: "0 ms", 12 * time.Millisecond: "12 ms", 999 * time.Millisecond: "999 ms", 1500 * time.Millisecond: "1.5 s", 90 * time.Second: "90.0 s"} {
		if got := took(d); got != want {
			t.Errorf("took(%v) = %q, want %q", d, got, want)
		}
	}
}

// With --json, a run that halts on a pending request ends with a halted
// event carrying the pending result, not a done one; a finished run ends
// with done.
func TestJSONHaltedRunEndsHalted(t *testing.T) {
	t.Parallel()
	ws, state := t.TempDir(), filepath.Join(t.TempDir(), "state")
	script := apWrite(t, ws, "script.yaml", "turns:\n  - toolCalls:\n      - {name: bash, id: c1, args: {command: \"echo hi\"}}\n  - text: done\n")
	policy := apWrite(t, ws, "policy.yaml", "rules:\n  - id: ask-bash\n    tool: bash\n    decision: ask\n")
	code, out, errOut := apMain(t, "run", "--json", "--model", "script:"+script, "--workdir", ws, "--policy", policy, "--state-dir", state, "--sandbox", "off", "x")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var last struct {
		Kind   string `json:"kind"`
		Result struct {
			Status string `json:"status"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || code != exitPending || last.Kind != "halted" || last.Result.Status != "pending" {
		t.Fatalf("exit %d, last event %+v (%v)\n%s\n%s", code, last, err, out, errOut)
	}
	done := apWrite(t, ws, "done.yaml", "turns:\n  - text: hi\n")
	code, out, _ = apMain(t, "run", "--json", "--model", "script:"+done, "--workdir", ws, "--state-dir", state, "x")
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || code != exitDone || last.Kind != "done" {
		t.Fatalf("finished run: exit %d, last event %+v\n%s", code, last, out)
	}
}

// runs show of a finished run sums it up for people: its turns and tool
// calls, one line per call with its decision, who made it and how long it
// took (ms or s), and the answer; the JSON only with --json.
func TestRunsShowSummarizesCalls(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws, state := filepath.Join(dir, "ws"), filepath.Join(dir, "state")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	script := apWrite(t, dir, "s.yaml", "turns:\n  - toolCalls: [{name: write, id: c1, args: {path: a.txt, content: x}}, {name: bash, id: c2, args: {command: \"rm a.txt\"}}]\n  - text: all done\n")
	policy := apWrite(t, dir, "p.yaml", "rules:\n  - id: no-rm\n    tool: bash\n    decision: deny\n")
	if code, out, errOut := apMain(t, "run", "--model", "script:"+script, "--workdir", ws, "--policy", policy, "--state-dir", state, "x"); code != exitDone {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ := apMain(t, "runs", "list", "--json", "--state-dir", state)
	var runs []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(out), &runs); code != 0 || err != nil || len(runs) != 1 {
		t.Fatalf("runs list: exit %d, %v\n%s", code, err, out)
	}
	code, out, _ = apMain(t, "runs", "show", runs[0].ID, "--state-dir", state)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^run ` + runs[0].ID + `: done$`),
		regexp.MustCompile(`(?m)^turns: 2; tool calls: 2$`),
		regexp.MustCompile(`(?m)^ +CALL +TOOL +DECISION +BY +TOOK$`),
		regexp.MustCompile(`(?m)^ +c1 +write +allowed +runtime:default +\d+(\.\d)? m?s$`),
		regexp.MustCompile(`(?m)^ +c2 +bash +denied +rule:no-rm +\d+(\.\d)? m?s$`),
		regexp.MustCompile(`(?m)^answer: all done$`),
	} {
		if code != 0 || !want.MatchString(out) || strings.Contains(out, `"transcript"`) {
			t.Errorf("runs show: exit %d, output lacks %s or has the JSON:\n%s", code, want, out)
		}
	}
}

// runs show says a question a person let go on was answered, as run does.
func TestRunsShowSaysAnswered(t *testing.T) {
	t.Parallel()
	alice := tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}
	res, err := json.Marshal(agent.Result{Status: agent.StatusDone, Turns: 2, ToolCalls: []gate.Record{
		{ID: "c1", Name: "question", Decision: gate.Decision{Outcome: gate.OutcomeApproved, By: alice}},
		{ID: "c2", Name: "write", Decision: gate.Decision{Outcome: gate.OutcomeApproved, By: alice}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := printRunSummary(&out, runDetail{ID: "run_1", Status: "done", Result: res}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^ +c1 +question +answered +person:alice `),
		regexp.MustCompile(`(?m)^ +c2 +write +approved +person:alice `),
	} {
		if !want.MatchString(out.String()) {
			t.Errorf("runs show lacks %s:\n%s", want, out.String())
		}
	}
}
