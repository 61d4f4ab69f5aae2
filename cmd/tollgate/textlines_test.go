package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/gate"
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
	p.event(agent.Event{Kind: agent.EventDecision, CallID: "c1", Decision: &gate.Decision{Outcome: gate.OutcomeAllowed}})
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

// A first line of the model's text that starts as tollgate's own messages
// ("tollgate: …", "run … is pending", "stored run …", "then: …") is marked
// too, whatever the deltas it comes in; its beginning is held back only
// while it could still become one, and never past its newline or the end
// of the text.
func TestModelTextCannotForgeTollgateMessages(t *testing.T) {
	for _, tc := range []struct {
		deltas []string
		want   string
	}{
		{[]string{"tollgate: run approved by person:root\n"}, "  | tollgate: run approved by person:root\n"},
		{[]string{"t", "o", "ll", "gate", ": waiting for answers\nok"}, "  | tollgate: waiting for answers\n  | ok\n"},
		{[]string{"TollGate", ": x"}, "  | TollGate: x\n"},
		{[]string{"ru", "n run_1 is pending: 0 request(s)\n"}, "  | run run_1 is pending: 0 request(s)\n"},
		{[]string{"stored ", "run run_1 in /x; answer with:\n"}, "  | stored run run_1 in /x; answer with:\n"},
		{[]string{"the", "n: tollgate resume run_1"}, "  | then: tollgate resume run_1\n"},
		// Unicode spaces and invisible format characters do not hide one.
		{[]string{"\u200btollgate: run run_1 approved by person:alice\n"}, "  | \\u{200b}tollgate: run run_1 approved by person:alice\n"},
		{[]string{"\u00a0  [bash call_1_1] approved by person:alice\n"}, "  | \u00a0  [bash call_1_1] approved by person:alice\n"},
		{[]string{"run\u00a0run_1 finished\n"}, "  | run\u00a0run_1 finished\n"},
		{[]string{"ru", "n\u2007run_1 finished"}, "  | run\u2007run_1 finished\n"},
		{[]string{"\ufeff", "-> bash {}"}, "  | \\u{feff}-> bash {}\n"},
		{[]string{"toll\u2060gate: x"}, "  | toll\\u{2060}gate: x\n"},
		{[]string{"\u3000[bash call_9] allowed"}, "  | \u3000[bash call_9] allowed\n"},
		// Not one of tollgate's: printed as it is.
		{[]string{"tol", "d you so\n"}, "told you so\n"},
		{[]string{"Run", "ning the tests.\n"}, "Running the tests.\n"},
		{[]string{"toll"}, "toll\n"},
		{[]string{"to\n", "tollgate: second line"}, "to\n  | tollgate: second line\n"},
	} {
		var b bytes.Buffer
		p := &printer{w: &b}
		for _, d := range tc.deltas {
			p.event(agent.Event{Kind: agent.EventText, Delta: d})
		}
		p.event(agent.Event{Kind: agent.EventToolCall, Call: &model.ToolCall{ID: "c1", Name: "bash", Arguments: []byte("{}")}})
		want := tc.want + "-> bash {}  [c1]\n"
		if got := b.String(); got != want {
			t.Errorf("%q: printed %q, want %q", tc.deltas, got, want)
		}
	}
	// What cannot become a tollgate line is printed at once, and a held
	// beginning is printed with its newline.
	var b bytes.Buffer
	p := &printer{w: &b}
	p.event(agent.Event{Kind: agent.EventText, Delta: "Hello"})
	if b.String() != "Hello" {
		t.Errorf("plain text held back: %q", b.String())
	}
	b.Reset()
	p = &printer{w: &b}
	p.event(agent.Event{Kind: agent.EventText, Delta: "toll"})
	p.event(agent.Event{Kind: agent.EventText, Delta: "\n"})
	if b.String() != "toll\n" {
		t.Errorf("held text not printed at its newline: %q", b.String())
	}
}
