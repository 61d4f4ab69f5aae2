package agent_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// A hook that rewrites arguments into bytes that are not JSON: the call is
// refused as invalid, and the result and a later halted state still encode,
// so the run can be saved and resumed.
func TestGarbledRewriteKeepsStateEncodable(t *testing.T) {
	c := &testkit.Counter{Name: "t"}
	gated := &testkit.Counter{Name: "gated"}
	h := (&hooks.Hooks{}).BeforeTool("garble", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		if ev.Name == "t" {
			return hooks.Rewrite(json.RawMessage("{not json")), nil
		}
		return nil, nil
	})
	ask := approval.AuthorizerFunc(func(ctx context.Context, call approval.Call) (approval.Verdict, error) {
		if call.Tool == "gated" {
			return approval.Verdict{Decision: approval.Ask, By: tool.Principal{Kind: "rule", Name: "ask"}}, nil
		}
		return approval.Verdict{Decision: approval.Allow}, nil
	})
	a, err := agent.New(&agent.Options{
		Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "t", nil)}, []model.FuncCall{testkit.Call("c2", "gated", nil)}),
		Tools: agent.ToolList{c, gated}, Hooks: h, Authorizers: []approval.Authorizer{ask},
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background(), "x")
	if err != nil || res.Status != agent.StatusPending || c.Count() != 0 {
		t.Fatalf("%v %+v count %d", err, res, c.Count())
	}
	if res.ToolCalls[0].Decision.Outcome != gate.OutcomeInvalid || string(res.ToolCalls[0].Args) != `"{not json"` {
		t.Errorf("record %+v args %s", res.ToolCalls[0].Decision, res.ToolCalls[0].Args)
	}
	if _, err := json.Marshal(res); err != nil {
		t.Fatalf("the result does not encode: %v", err)
	}
	blob, err := json.Marshal(res.State)
	if err != nil {
		t.Fatalf("the state does not encode: %v", err)
	}
	var st agent.State
	if err := json.Unmarshal(blob, &st); err != nil {
		t.Fatal(err)
	}
	res2, err := a.Resume(context.Background(), &st, tool.Answer{ID: res.Pending[0].ID, OK: true})
	if err != nil || res2.Status != agent.StatusDone || gated.Count() != 1 {
		t.Fatalf("resume: %v %+v gated %d", err, res2, gated.Count())
	}
}
