package builtin_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tollgate-dev/tollgate/builtin"
	"github.com/tollgate-dev/tollgate/internal/toolcall"
	"github.com/tollgate-dev/tollgate/tool"
)

func TestQuestionAsksThenAnswers(t *testing.T) {
	_, tools := workspace(t, nil, nil)
	args := map[string]any{"questions": []map[string]any{
		{"question": "Which database?", "header": "DB", "options": []map[string]any{{"label": "sqlite", "description": "a file"}, {"label": "postgres"}}},
		{"question": "Which features?", "options": []map[string]any{{"label": "auth"}, {"label": "search"}}, "multiple": true},
	}}
	res := call(t, tools, "question", args)
	if res.Pending == nil {
		t.Fatalf("the first call returned a result, not a pending request: %+v", res)
	}
	req := *res.Pending
	if req.Kind != tool.KindQuestion || !strings.HasPrefix(req.ID, "question_") {
		t.Fatalf("request = %+v", req)
	}
	if want := "[DB] Which database?\n  1. sqlite: a file\n  2. postgres\nWhich features?\n  1. auth\n  2. search"; req.Prompt != want {
		t.Errorf("prompt = %q, want %q", req.Prompt, want)
	}
	qs, err := builtin.ParseQuestions(req)
	if err != nil || len(qs) != 2 || qs[1].Options[1].Label != "search" || !qs[1].Multiple {
		t.Fatalf("ParseQuestions = %+v, %v", qs, err)
	}

	tests := []struct {
		name, data, out string
		isError         bool
	}{
		{"wrapped", `{"answers":[["postgres"],["auth","search"]]}`, "Q: Which database?\nA: postgres\nQ: Which features?\nA: auth; search\n", false},
		{"bare lists", `[["sqlite"],["auth"]]`, "Q: Which database?\nA: sqlite\nQ: Which features?\nA: auth\n", false},
		{"one string each, own words", `["mysql, really","none"]`, "Q: Which database?\nA: mysql, really\nQ: Which features?\nA: none\n", false},
		{"no data", ``, "The user gave no answer.", false},
		{"too few", `["sqlite"]`, "the user's answer could not be read: 1 answers for 2 questions", true},
		{"several for a single question", `[["sqlite","postgres"],["auth"]]`, "the user's answer could not be read: question 1 takes one answer, got 2", true},
		{"empty choice", `[[" "],["auth"]]`, "the user's answer could not be read: answer 1 holds an empty choice", true},
		{"wrong shape", `{"x":1}`, `the user's answer could not be read: want {"answers": [["choice"], ...]} with one list per question`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := toolcall.WithAnswer(context.Background(), tool.Answer{ID: req.ID, OK: true, Data: json.RawMessage(tt.data)})
			res := callCtx(t, ctx, tools, "question", args)
			if diff := cmp.Diff(outcome{tt.out, tt.isError}, got(res)); diff != "" || res.Pending != nil {
				t.Errorf("answer %s (-want +got):\n%s", tt.data, diff)
			}
		})
	}
}

func TestQuestionRejectsBadInput(t *testing.T) {
	_, tools := workspace(t, nil, nil)
	for _, args := range []map[string]any{
		{"questions": []map[string]any{}},
		{"questions": []map[string]any{{"question": " "}}},
		{"questions": []map[string]any{{"question": "q", "options": []map[string]any{{"label": ""}}}}},
	} {
		if res := call(t, tools, "question", args); !res.IsError || res.Pending != nil {
			t.Errorf("question(%v) = %+v, want an error", args, res)
		}
	}
	if _, err := builtin.ParseQuestions(tool.Request{ID: "x", Kind: tool.KindApproval}); err == nil {
		t.Error("ParseQuestions accepted an approval request")
	}
}
