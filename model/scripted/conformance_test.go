package scripted_test

import (
	"encoding/json"
	"testing"

	"github.com/tollgate-dev/tollgate/model/modeltest"
	"github.com/tollgate-dev/tollgate/model/scripted"
)

// TestConformance runs the provider suite on a scripted model whose script is
// the suite's turns. The model is stateless (it replays the turn named by the
// number of assistant messages in the request), so a suite call that repeats
// a request gets the same turn again, and the round trip gets the second turn
// because the request then holds the first answer.
//
// Flags, and why: a script has no finish reason of its own (NoLength: stop or
// tool_calls only), counts words instead of tokens (OwnUsage), reports its
// script's name as the answering model (OwnModelID), and answers in-process
// at once, so there is no call in flight to cancel (NoStall; a context
// cancelled before the call is still checked). It does not stream, so the
// stream cases are skipped by the suite.
func TestConformance(t *testing.T) {
	modeltest.Run(t, func(t *testing.T, turns []modeltest.Turn) modeltest.Backend {
		var s scripted.Script
		for i, tr := range turns {
			st := scripted.Turn{Text: tr.Text}
			for _, c := range tr.ToolCalls {
				var args map[string]any
				if err := json.Unmarshal(c.Arguments, &args); err != nil {
					t.Fatalf("turn %d: call %s: %v", i, c.ID, err)
				}
				st.ToolCalls = append(st.ToolCalls, scripted.ToolCall{ID: c.ID, Name: c.Name, Args: args})
			}
			s.Turns = append(s.Turns, st)
		}
		return modeltest.Backend{
			Model:      scripted.New("conformance.yaml", s),
			NoLength:   true,
			OwnUsage:   true,
			OwnModelID: true,
			NoStall:    true,
		}
	})
}
