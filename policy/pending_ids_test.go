package policy_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// When a hook gives two calls of one turn the same request ID, the agent makes
// the IDs unique; the pending events streamed must carry the same IDs as
// Result.Pending, or a streaming host that routes answers by the event's ID
// answers the wrong request or gets ErrUnknownAnswer.
func TestAgentPendingEventIDsMatchState(t *testing.T) {
	hk := (&hooks.Hooks{}).BeforeTool("ask", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		return hooks.Ask(tool.Request{ID: "approve", Kind: tool.KindApproval, Prompt: "ok?"}), nil
	})
	c := &testkit.Counter{Name: "transfer"}
	sc := newScripted([]model.FuncCall{testkit.Call("A", "transfer", nil), testkit.Call("B", "transfer", nil)})
	a := newAgent(t, agent.Options{Model: sc.model(), Tools: agent.ToolList{c}, Hooks: hk, MaxParallel: 1})
	var evIDs []string
	var res *agent.Result
	for ev, err := range a.Stream(bg, "x") {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == agent.EventPending {
			evIDs = append(evIDs, ev.Request.ID)
		}
		if ev.Kind == agent.EventDone {
			res = ev.Result
		}
	}
	var stateIDs []string
	for _, r := range res.Pending {
		stateIDs = append(stateIDs, r.ID)
	}
	if len(stateIDs) != 2 || stateIDs[0] == stateIDs[1] {
		t.Fatalf("pending IDs %v, want two distinct IDs", stateIDs)
	}
	if d := cmp.Diff(stateIDs, evIDs); d != "" {
		t.Errorf("pending event IDs differ from Result.Pending (-state +events):\n%s", d)
	}
}
