package agent_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/gate/gatetest"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// The agent is a user of the gate: its calls pass the gate's conformance
// suite, answered while the run waits (Options.WaitFor) and answered after
// the run halted, by a resume from its serialized state.
func TestGateConformance(t *testing.T) {
	t.Run("waiting", func(t *testing.T) { gatetest.Run(t, agentCaller{wait: true}) })
	t.Run("halted and resumed", func(t *testing.T) { gatetest.Run(t, agentCaller{}) })
}

type agentCaller struct{ wait bool }

func (c agentCaller) Call(t *testing.T, s gatetest.Setup, name string, args json.RawMessage, answer gatetest.Answerer) *gate.Record {
	ctx := context.Background()
	m := model.Func(func(_ context.Context, req *model.Request) (model.Reply, error) {
		if len(req.Messages) > 1 && req.Messages[len(req.Messages)-1].Role == model.RoleTool {
			return model.Reply{Content: "done"}, nil
		}
		return model.Reply{ToolCalls: []model.FuncCall{{ID: "call_1", Name: name, Arguments: args}}}, nil
	})
	opts := agent.Options{Model: m, Tools: agent.ToolList{s.Tool}, Hooks: s.Hooks, Authorizers: s.Authorizers}
	if c.wait {
		opts.WaitFor = func(_ context.Context, req tool.Request) (tool.Answer, error) { return *answer(req), nil }
	}
	a, err := agent.New(&opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(ctx, "go")
	for err == nil && res.Status == agent.StatusPending {
		var answers []tool.Answer
		for _, req := range res.Pending {
			answers = append(answers, *answer(req))
		}
		b, merr := json.Marshal(res.State)
		if merr != nil {
			t.Fatal(merr)
		}
		var st agent.State
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatal(err)
		}
		res, err = a.Resume(ctx, &st, answers...)
	}
	if err != nil || res.Status != agent.StatusDone || len(res.ToolCalls) != 1 {
		t.Fatalf("run: %v, %+v", err, res)
	}
	return &res.ToolCalls[0]
}
