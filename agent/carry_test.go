package agent_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate/gatetest"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// With WaitFor, a call a person approved whose tool then asks for input
// waits for that answer too and runs once with it; the pending call the
// wait is shown (PendingCallFrom) carries the approval, as a copy: a wait
// that changes it changes nothing of the call.
func TestWaitForCarriesTheApproval(t *testing.T) {
	p := &gatetest.Probe{}
	askAll := approval.AuthorizerFunc(func(context.Context, approval.Call) (approval.Verdict, error) {
		return approval.Verdict{Decision: approval.Ask, By: tool.Principal{Kind: tool.PrincipalRule, Name: "ask"}}, nil
	})
	m := model.Func(func(_ context.Context, req *model.Request) (model.Reply, error) {
		if req.Messages[len(req.Messages)-1].Role == model.RoleTool {
			return model.Reply{Content: "done"}, nil
		}
		return model.Reply{ToolCalls: []model.FuncCall{{ID: "c1", Name: "write", Arguments: json.RawMessage(`{"path":"/a","text":"ask"}`)}}}, nil
	})
	var kinds []tool.Kind
	wait := func(ctx context.Context, req tool.Request) (tool.Answer, error) {
		kinds = append(kinds, req.Kind)
		if req.Kind == tool.KindApproval {
			return tool.Answer{ID: req.ID, OK: true, By: "alice"}, nil
		}
		pc, ok := agent.PendingCallFrom(ctx)
		if !ok || pc.Approved == nil || pc.Approved.Answer.Who().Name != "alice" {
			t.Errorf("the wait is not shown the carried approval: %+v", pc)
		} else {
			pc.Approved.Digest = "sha256:scribbled"
			pc.Approved.Answer.OK = false
		}
		return tool.Answer{ID: req.ID, OK: true, By: "bob", Data: json.RawMessage(`"eu"`)}, nil
	}
	a, err := agent.New(&agent.Options{Model: m, Tools: agent.ToolList{p.Tool()}, Authorizers: []approval.Authorizer{askAll}, WaitFor: wait})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background(), "go")
	if err != nil || res.Status != agent.StatusDone || len(res.ToolCalls) != 1 {
		t.Fatalf("run: %v %+v", err, res)
	}
	rec := res.ToolCalls[0]
	if len(kinds) != 2 || kinds[0] != tool.KindApproval || kinds[1] != tool.KindInput {
		t.Errorf("waited for %v, want an approval then the tool's input", kinds)
	}
	if !rec.Ran || rec.Output != `wrote /a with "eu"` || rec.Decision.By.String() != "person:alice" || len(p.Runs()) != 1 {
		t.Fatalf("record: ran %v, output %q, by %s; runs %v", rec.Ran, rec.Output, rec.Decision.By, p.Runs())
	}
}
