package runs_test

import (
	"context"
	"fmt"
	"os"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/tool"
)

// A run halts on a policy's ask, is stored, answered by a person and resumed
// by another host sharing the store; the approved call runs once.
func ExampleHost() {
	ctx := context.Background()
	transfer := tool.Must("transfer_funds", "Move money.", func(ctx context.Context, in struct {
		Amount int `json:"amount"`
	}) (string, error) {
		return fmt.Sprintf("moved %d", in.Amount), nil
	}, nil)
	m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		for _, msg := range req.Messages {
			if msg.Role == model.RoleTool {
				return model.Reply{Content: "done: " + msg.Content}, nil
			}
		}
		return model.Reply{ToolCalls: []model.FuncCall{{ID: "c1", Name: "transfer_funds", Arguments: map[string]int{"amount": 5}}}}, nil
	})
	builder := runs.BuilderFunc(func(ctx context.Context, cfg runs.RunConfig) (*runs.Built, error) {
		pol, err := policy.NewPolicy(policy.PolicySpec{Name: "pay", Rules: []policy.Rule{{ID: "ask-pay", Tools: []string{"transfer_funds"}, Decision: approval.Ask}}})
		if err != nil {
			return nil, err
		}
		return &runs.Built{Options: agent.Options{Model: m, Tools: agent.ToolList{transfer}, Authorizers: []approval.Authorizer{pol}}}, nil
	})
	st := memory.New(nil)
	cfg, err := runs.RunConfig{AgentConfig: runs.AgentConfig{Model: runs.ModelRef{Provider: "script", Name: "pay.yaml"}, Workdir: "."}}.Resolve(os.TempDir())
	if err != nil {
		panic(err)
	}
	first, _ := runs.New(st, builder, &runs.Options{Holder: "host-1"})
	res, err := first.Start(ctx, runs.StartRequest{RunID: "run_1", Config: cfg, Prompt: "pay 5", Owner: tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}})
	if err != nil {
		panic(err)
	}
	fmt.Println("started:", res.Status, len(res.Pending), "request")

	second, _ := runs.New(st, builder, &runs.Options{Holder: "host-2"})
	if _, err := second.Answer(ctx, "run_1", res.Pending[0].ID, store.Answer{Approve: true, By: tool.PrincipalOf("person:bob")}); err != nil {
		panic(err)
	}
	res, err = second.Resume(ctx, runs.ResumeRequest{RunID: "run_1"})
	if err != nil {
		panic(err)
	}
	fmt.Println("resumed:", res.Status, "-", res.Text)
	fmt.Println("decided by:", res.ToolCalls[0].Decision.By)
	// Output:
	// started: pending 1 request
	// resumed: done - done: moved 5
	// decided by: person:bob
}
