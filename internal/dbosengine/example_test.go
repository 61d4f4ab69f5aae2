package dbosengine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/internal/dbosengine"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/sqlite"
	"github.com/tollgate-dev/tollgate/tool"
)

// A durable run on SQLite, in one process: the run halts on an approval,
// the answer is recorded and wakes it, and it ends. A server does the same
// with Worker false, and `tollgate worker` processes drive the runs.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "tollgate-dbos-example-")
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "store.db"), nil)
	if err != nil {
		panic(err)
	}
	defer st.Close()

	// The agent of every run: a model that deploys once, then says so; a
	// deploy needs a person's approval.
	build := runs.BuilderFunc(func(ctx context.Context, cfg runs.RunConfig) (*runs.Built, error) {
		m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
			if last := req.Messages[len(req.Messages)-1]; last.Role == model.RoleTool {
				return model.Reply{Content: "deployed: " + last.Content}, nil
			}
			return model.Reply{ToolCalls: []model.FuncCall{{Name: "deploy", Arguments: map[string]any{"env": "prod"}}}}, nil
		})
		type in struct {
			Env string `json:"env"`
		}
		deploy := tool.Must("deploy", "deploys", func(ctx context.Context, a in) (string, error) { return "ok " + a.Env, nil }, nil)
		ask := approval.AuthorizerFunc(func(ctx context.Context, c approval.Call) (approval.Verdict, error) {
			return approval.Verdict{Decision: approval.Ask, Reason: "deploys need a person", By: tool.Principal{Kind: tool.PrincipalRule, Name: "deploys"}}, nil
		})
		return &runs.Built{Options: agent.Options{Model: m, Tools: agent.ToolList{deploy}, Authorizers: []approval.Authorizer{ask}}}, nil
	})
	e, err := dbosengine.New(ctx, dbosengine.Options{DatabaseURL: "sqlite:" + filepath.Join(dir, "dbos.db"), Store: st, Builder: build, Worker: true})
	if err != nil {
		panic(err)
	}
	defer e.Close(0)

	id, err := e.Start(ctx, runcore.DurableRun{Config: runs.RunConfig{Version: runcore.ConfigVersion, AgentConfig: runs.AgentConfig{Workdir: dir}}, Prompt: "deploy to prod"})
	if err != nil {
		panic(err)
	}
	// The run halts: its request is in the store, as for any run.
	var req store.Approval
	for {
		page, err := st.ListApprovals(ctx, store.ApprovalFilter{RunID: id, Status: store.StatusPending})
		if err != nil {
			panic(err)
		}
		if len(page.Approvals) > 0 {
			req = page.Approvals[0]
			break
		}
		_ = st.WaitEvents(ctx, store.EventFilter{RunID: id})
	}
	fmt.Println(req.Tool, req.Prompt)
	if _, err := e.Answer(ctx, id, req.ID, store.Answer{Approve: true, By: tool.PrincipalOf("person:alice")}); err != nil {
		panic(err)
	}
	r, err := e.Wait(ctx, id)
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Status)
	// Output:
	// deploy Allow deploy {"env":"prod"}? (rule:deploys: deploys need a person)
	// done
}
