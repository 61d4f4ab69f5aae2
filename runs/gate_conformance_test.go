package runs_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/gate/gatetest"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// The durable engine is a user of the gate: a durable run's calls, each
// decided in a "decide" step and run in an "execute" step with the answer
// a person stored meanwhile, pass the gate's conformance suite.
func TestGateConformanceDurable(t *testing.T) { gatetest.Run(t, durableCaller{}) }

type durableCaller struct{}

func (durableCaller) Call(t *testing.T, s gatetest.Setup, name string, args json.RawMessage, answer gatetest.Answerer) *gate.Record {
	ctx := context.Background()
	st := memory.New(nil)
	m := model.Func(func(_ context.Context, req *model.Request) (model.Reply, error) {
		if req.Messages[len(req.Messages)-1].Role == model.RoleTool {
			return model.Reply{Content: "done"}, nil
		}
		return model.Reply{ToolCalls: []model.FuncCall{{Name: name, Arguments: args}}}, nil
	})
	b := runs.BuilderFunc(func(context.Context, runs.RunConfig) (*runs.Built, error) {
		return &runs.Built{Options: agent.Options{Model: m, Tools: agent.ToolList{s.Tool}, Hooks: s.Hooks, Authorizers: s.Authorizers}}, nil
	})
	d, err := runcore.NewDurable(st, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	eng := newFakeEngine()
	asked := false
	eng.onWait = func(topic string) {
		asked = true
		id := strings.TrimPrefix(topic, "answer:")
		a, err := st.GetApproval(ctx, "run_g", id)
		if err != nil {
			t.Errorf("the request %s is not stored: %v", id, err)
			return
		}
		ans := answer(a.Request)
		sa := store.Answer{Approve: ans.OK, Reason: ans.Reason, By: ans.Who(), Data: ans.Data}
		if _, err := st.Decide(ctx, "run_g", id, sa); err != nil && !errors.Is(err, store.ErrDecided) {
			t.Errorf("answer %s: %v", id, err)
		}
	}
	in := runcore.DurableRun{RunID: "run_g", Config: runs.RunConfig{Version: runcore.ConfigVersion, AgentConfig: runs.AgentConfig{Workdir: t.TempDir()}}, Prompt: "go"}
	if err := runcore.PrepareDurable(ctx, st, &in); err != nil {
		t.Fatal(err)
	}
	eng.execution(-1)
	res, err := d.Drive(ctx, eng, in)
	if err != nil || res.Status != agent.StatusDone || len(res.ToolCalls) != 1 {
		t.Fatalf("durable run: %v %+v", err, res)
	}
	// The call went through the engine's steps: decided in a step of its
	// own, and taken up again in an execute step when it was asked.
	steps := strings.Join(eng.names, ", ")
	if !strings.Contains(steps, "decide ") || asked != strings.Contains(steps, "execute ") {
		t.Errorf("the durable steps were %s (asked: %v)", steps, asked)
	}
	return &res.ToolCalls[0]
}
