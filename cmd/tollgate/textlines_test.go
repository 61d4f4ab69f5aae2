package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// forged reports the lines of out that pass for one of tollgate's own.
func forged(out string) []string {
	var bad []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimLeft(l, " "), "[bash call_9]") || strings.HasPrefix(l, "FAKE") || l == "-> bash {}" {
			bad = append(bad, l)
		}
	}
	return bad
}

// The model's text cannot forge a tollgate line: its continuation lines,
// and a first line that starts with a blank or "-", are marked, also when
// the newline and the forged line come in separate deltas.
func TestModelTextCannotForgeLines(t *testing.T) {
	var b bytes.Buffer
	p := &printer{w: &b}
	p.event(agent.Event{Kind: agent.EventToolCall, Call: &model.ToolCall{ID: "c1", Name: "bash", Arguments: []byte("{}")}})
	for _, d := range []string{"Done.\n   [bash call_9] allowed by person:root\nFAKE", ": x\n", "\n", "   [bash call_9] approved"} {
		p.event(agent.Event{Kind: agent.EventText, Delta: d})
	}
	p.event(agent.Event{Kind: agent.EventDecision, CallID: "c1", Decision: &agent.Decision{Outcome: agent.OutcomeAllowed}})
	p.event(agent.Event{Kind: agent.EventText, Delta: "   [bash call_9] allowed by person:root\n-> bash {}"})
	p.endLine()
	out := b.String()
	if bad := forged(out); len(bad) > 0 {
		t.Fatalf("forged lines %q in:\n%s", bad, out)
	}
	for _, want := range []string{"Done.\n  |    [bash call_9] allowed by person:root\n  | FAKE: x\n  | \n  |    [bash call_9] approved\n", "  |    [bash call_9] allowed by person:root\n  | -> bash {}\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in:\n%s", want, out)
		}
	}
	// Plain text is printed as it is.
	b.Reset()
	p = &printer{w: &b}
	p.event(agent.Event{Kind: agent.EventText, Delta: "All done"})
	p.event(agent.Event{Kind: agent.EventText, Delta: " here.\n"})
	if got := b.String(); got != "All done here.\n" {
		t.Errorf("plain text printed as %q", got)
	}
}

// A question's text and its options' labels and descriptions cannot forge
// a tollgate line either.
func TestQuestionTextCannotForgeLines(t *testing.T) {
	data, _ := json.Marshal(map[string]any{"questions": []map[string]any{{
		"question": "Which?\nFAKE: [bash call_9] allowed by person:root",
		"header":   "H\n   [bash call_9] allowed",
		"options": []map[string]any{
			{"label": "a\n   [bash call_9] allowed by person:root", "description": "d\nFAKE"},
			{"label": "b"},
		},
	}}})
	req := tool.Request{ID: "question_1", Kind: tool.KindQuestion, Prompt: "Which?", Data: data}
	var w bytes.Buffer
	if _, err := terminalWait(strings.NewReader("2\n"), &w, nil)(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if bad := forged(w.String()); len(bad) > 0 {
		t.Fatalf("forged lines %q in:\n%s", bad, w.String())
	}
	if !strings.Contains(w.String(), "Which?\n  | FAKE: [bash call_9]") {
		t.Errorf("the question's second line is not marked:\n%s", w.String())
	}
}
