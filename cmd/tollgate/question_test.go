package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/tool"
)

func questionRequest(t *testing.T) tool.Request {
	t.Helper()
	data, _ := json.Marshal(map[string]any{"questions": []map[string]any{
		{"question": "Which database?", "header": "DB", "options": []map[string]any{{"label": "sqlite"}, {"label": "postgres"}}},
		{"question": "Which features?", "options": []map[string]any{{"label": "auth"}, {"label": "search"}, {"label": "billing"}}, "multiple": true},
	}})
	return tool.Request{ID: "question_1", Kind: tool.KindQuestion, Prompt: "Which database?", Data: data}
}

func TestTerminalAsksQuestions(t *testing.T) {
	t.Parallel()
	req := questionRequest(t)
	for _, tt := range []struct {
		in, data string
		ok       bool
	}{
		{"2\n1, 3\n", `{"answers":[["postgres"],["auth","billing"]]}`, true},
		{"\nmysql\nsearch, my own\n", `{"answers":[["mysql"],["search","my own"]]}`, true},
		{"-\n", ``, false},
	} {
		var w bytes.Buffer
		ans, err := terminalWait(strings.NewReader(tt.in), &w, nil)(context.Background(), req)
		if err != nil {
			t.Fatalf("%q: %v", tt.in, err)
		}
		if ans.ID != req.ID || ans.OK != tt.ok || string(ans.Data) != tt.data {
			t.Errorf("%q: answer %+v, want ok=%v data %s", tt.in, ans, tt.ok, tt.data)
		}
		wants := []string{"[DB] Which database?\n  1. sqlite\n  2. postgres\n", "a number or your own words ('-' declines): "}
		if tt.ok {
			wants = append(wants, "  3. billing\n", "numbers or words, separated by commas")
		}
		for _, want := range wants {
			if !strings.Contains(w.String(), want) {
				t.Errorf("%q: the terminal did not show %q:\n%s", tt.in, want, w.String())
			}
		}
	}
}

// TestQuestionHaltAnswerResume: a question halts a run without a terminal
// like an approval does; `approvals answer` answers it; resume gives the
// model the answers.
func TestQuestionHaltAnswerResume(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	script := apWrite(t, dir, "script.yaml", `turns:
  - toolCalls:
      - name: question
        id: ask
        args:
          questions:
            - {question: "Which database?", options: [{label: sqlite}, {label: postgres}]}
            - {question: "Any notes?"}
  - text: "thanks"
`)
	code, out, errOut := apMain(t, "run", "--model", "script:"+script, "--workdir", ws, "--state-dir", state, "set up the project")
	if code != exitPending {
		t.Fatalf("run: exit %d, want %d\n%s%s", code, exitPending, out, errOut)
	}
	m := regexp.MustCompile(`tollgate approvals answer --state-dir \S+ (question_[0-9a-f]+) ANSWER`).FindStringSubmatch(out)
	runID := regexp.MustCompile(`stored run (run_[0-9a-f]+)`).FindStringSubmatch(out)
	if m == nil || runID == nil || !strings.Contains(out, "  | Which database?\n  |   1. sqlite\n") {
		t.Fatalf("run did not show the question and how to answer it:\n%s", out)
	}
	reqID := m[1]

	// Approving a question would tell the model it got no answer; a deny
	// without a reason would tell it nothing: both refused.
	if code, _, errOut := apMain(t, "approvals", "approve", "--state-dir", state, reqID); code != exitUsage || !strings.Contains(errOut, "approvals answer") {
		t.Errorf("approve of a question: exit %d\n%s", code, errOut)
	}
	if code, _, errOut := apMain(t, "approvals", "deny", "--state-dir", state, reqID, "--reason", " "); code != exitUsage || !strings.Contains(errOut, "--reason is required") {
		t.Errorf("deny without a reason: exit %d\n%s", code, errOut)
	}
	code, out, _ = apMain(t, "approvals", "answer", "--state-dir", state, reqID, "2")
	if code != exitUsage {
		t.Errorf("an answer to one of two questions: exit %d, want %d\n%s", code, exitUsage, out)
	}
	code, out, errOut = apMain(t, "approvals", "answer", "--state-dir", state, reqID, "2", "keep it small")
	if code != 0 || !strings.Contains(out, "answered "+reqID) {
		t.Fatalf("approvals answer: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = apMain(t, "resume", "--state-dir", state, runID[1])
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "<- ok (62 bytes): Q: Which database? A: postgres Q: Any notes? A: keep it small\nthanks") {
		t.Fatalf("the model did not get the answers:\n%s", out)
	}
}
