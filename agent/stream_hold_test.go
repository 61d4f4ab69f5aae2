package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/model"
)

// holdConversation is two turns: two parallel calls with text, then the
// answer in text.
var holdConversation = []parTurn{
	{text: "Looking up Ada and Bob.", calls: []model.ToolCall{
		{ID: "call_ada", Name: "lookup", Arguments: json.RawMessage(`{"user":"ada"}`)},
		{ID: "call_bob", Name: "lookup", Arguments: json.RawMessage(`{"user":"bob"}`)},
	}},
	{text: "Both accounts are active."},
}

// A consumer may keep every event it reads and look at it after the run:
// nothing an event shows (its call, decision, record, usage, result) is
// changed by what the run does after yielding it, on every model backend
// (the providers stream, the others do not). The events are numbered 1 to
// n without a gap, and come in the documented order.
func TestStreamEventsHeldAfterRun(t *testing.T) {
	for _, kind := range parKinds {
		t.Run(kind, func(t *testing.T) {
			a, _, _, _ := parAgent(t, kind, holdConversation, nil)
			var held []agent.Event
			var seen []string // each event's JSON when it was yielded
			for ev, err := range a.Stream(context.Background(), "How are Ada and Bob?") {
				if err != nil {
					t.Fatal(err)
				}
				b, err := json.Marshal(ev)
				if err != nil {
					t.Fatal(err)
				}
				held, seen = append(held, ev), append(seen, string(b))
			}
			for i, ev := range held {
				if ev.Seq != int64(i+1) {
					t.Errorf("event %d (%s) has seq %d", i+1, ev.Kind, ev.Seq)
				}
				b, _ := json.Marshal(ev)
				if string(b) != seen[i] {
					t.Errorf("event %d (%s) changed after it was yielded:\nthen %s\nnow  %s", i+1, ev.Kind, seen[i], b)
				}
			}
			// Kinds: turn 1's text, usage, then per call tool_call, decision,
			// tool_result (the calls interleave); turn 2's text, usage; done.
			perCall := map[string][]agent.EventKind{}
			var kinds []string
			for _, ev := range held {
				if ev.CallID != "" {
					perCall[ev.CallID] = append(perCall[ev.CallID], ev.Kind)
					continue
				}
				if k := string(ev.Kind); len(kinds) == 0 || kinds[len(kinds)-1] != k || k != string(agent.EventText) {
					kinds = append(kinds, k)
				}
			}
			if got, want := strings.Join(kinds, ","), "text,usage,text,usage,done"; got != want {
				t.Errorf("events without a call: %s, want %s", got, want)
			}
			for _, id := range []string{"call_ada", "call_bob"} {
				got := perCall[id]
				if len(got) != 3 || got[0] != agent.EventToolCall || got[1] != agent.EventDecision || got[2] != agent.EventToolResult {
					t.Errorf("events of %s: %v, want tool_call, decision, tool_result", id, got)
				}
			}
			res := held[len(held)-1].Result
			if res == nil || res.Status != agent.StatusDone || len(res.ToolCalls) != 2 {
				t.Fatalf("done event's result = %+v", res)
			}
		})
	}
}

// What a consumer does to the events it reads changes nothing of the run:
// the model is sent, and the result holds, the calls and results as they
// were, whatever the consumer wrote into the events' call, decision,
// record and usage.
func TestStreamEventsOwnedByConsumer(t *testing.T) {
	for _, kind := range parKinds {
		t.Run(kind, func(t *testing.T) {
			a, b, _, _ := parAgent(t, kind, holdConversation, nil)
			var res *agent.Result
			for ev, err := range a.Stream(context.Background(), "How are Ada and Bob?") {
				if err != nil {
					t.Fatal(err)
				}
				switch ev.Kind {
				case agent.EventToolCall:
					ev.Call.Name, ev.Call.Arguments = "tampered", json.RawMessage(`{"user":"eve"}`)
				case agent.EventDecision:
					ev.Decision.Outcome, ev.Decision.Reason = gate.OutcomeDenied, "tampered"
				case agent.EventToolResult:
					ev.Record.Output, ev.Record.Args, ev.Record.Name = "tampered", json.RawMessage(`{"user":"eve"}`), "tampered"
				case agent.EventUsage:
					ev.Usage.InputTokens = -1
				case agent.EventDone:
					res = ev.Result
				}
			}
			if res == nil || res.Status != agent.StatusDone {
				t.Fatalf("result = %+v", res)
			}
			for _, rec := range res.ToolCalls {
				if rec.Name != "lookup" || rec.Output == "tampered" || strings.Contains(string(rec.Args), "eve") || rec.Decision.Outcome != gate.OutcomeAllowed {
					t.Errorf("record changed by the consumer: %+v", rec)
				}
			}
			if res.Usage.InputTokens < 0 {
				t.Errorf("usage changed by the consumer: %+v", res.Usage)
			}
			for _, m := range res.Transcript {
				if strings.Contains(m.Content, "tampered") {
					t.Errorf("transcript holds the consumer's text: %+v", m)
				}
				for _, c := range m.ToolCalls {
					if c.Name != "lookup" || strings.Contains(string(c.Arguments), "eve") {
						t.Errorf("transcript holds the consumer's call: %+v", c)
					}
				}
			}
			reqs := b.requests()
			if len(reqs) != 2 {
				t.Fatalf("the model received %d requests, want 2", len(reqs))
			}
			if strings.Contains(reqs[1], "tampered") || strings.Contains(reqs[1], "eve") || !strings.Contains(reqs[1], "user ada: active") {
				t.Errorf("the second request carries what the consumer wrote: %s", reqs[1])
			}
		})
	}
}
