package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/internal/serveconfig"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/server"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/tool"
)

// A server with one agent whose policy asks before transfer: a run is
// started over the API, halts, alice approves what she was shown, and the
// server resumes the run by itself; the event stream shows it all.
func Example() {
	ws, _ := os.MkdirTemp("", "ws")
	defer os.RemoveAll(ws)
	cfg, _ := runs.RunConfig{AgentConfig: runs.AgentConfig{Model: runs.ModelRef{Provider: "script", Name: "script.yaml"}, Workdir: ws}}.Resolve(ws)
	var transfers atomic.Int64
	transfer := tool.Must("transfer", "Move money.", func(ctx context.Context, in struct {
		Amount int `json:"amount"`
	}) (string, error) {
		transfers.Add(1)
		return fmt.Sprintf("moved %d", in.Amount), nil
	}, nil)
	// The model asks for one transfer, then answers with its result.
	m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		if last := req.Messages[len(req.Messages)-1]; last.Role == model.RoleTool {
			return model.Reply{Content: "done: " + last.Content}, nil
		}
		return model.Reply{ToolCalls: []model.FuncCall{{ID: "c1", Name: "transfer", Arguments: map[string]int{"amount": 5}}}}, nil
	})
	// Package internal/runbuild builds agents from their configuration as `tollgate
	// serve` does; this one is built by hand, with the policy in code.
	builder := runs.BuilderFunc(func(ctx context.Context, cfg runs.RunConfig) (*runs.Built, error) {
		pol, err := policy.NewPolicy(policy.PolicySpec{Rules: []policy.Rule{{ID: "ask-transfer", Tools: []string{"transfer"}, Decision: approval.Ask, Reason: "money moves"}}})
		if err != nil {
			return nil, err
		}
		return &runs.Built{Options: agent.Options{Model: m, Tools: agent.ToolList{transfer}, Authorizers: []approval.Authorizer{pol}}}, nil
	})
	tokens, _ := serveconfig.NewTokens([]serveconfig.TokenEntry{{SHA256: serveconfig.HashToken("tg_alice"), Name: "alice", Tenant: "acme", Roles: []server.Role{server.RoleOperator, server.RoleApprover}}})
	srv, err := server.New(memory.New(nil), builder, &server.Options{Agents: map[string]runs.RunConfig{"payer": cfg}, Tokens: tokens.Lookup})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go srv.Run(ctx)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	defer srv.Shutdown(context.Background())

	call := func(method, path, body string, out any) {
		req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer tg_alice")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		_ = json.NewDecoder(resp.Body).Decode(out)
	}
	var run serverapi.RunView
	call("POST", "/v1/runs", `{"agent":"payer","prompt":"pay 5"}`, &run)

	// Follow the run's events until it halts, then approve, and on until it ends.
	req, _ := http.NewRequest("GET", ts.URL+"/v1/events?run="+run.ID, nil)
	req.Header.Set("Authorization", "Bearer tg_alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		typ, ok := strings.CutPrefix(sc.Text(), "event: ")
		if !ok || typ == "turn.usage" {
			continue
		}
		fmt.Println(typ)
		switch typ {
		case "run.halted":
			var page serverapi.ApprovalPage
			call("GET", "/v1/approvals?status=pending", "", &page)
			a := page.Approvals[0]
			var args bytes.Buffer
			_ = json.Compact(&args, a.Arguments)
			fmt.Printf("  %s %s asked by %s: %s\n", a.Tool, args.String(), a.AskedBy, a.Reason)
			var got serverapi.ApprovalView
			call("POST", "/v1/approvals/"+a.ID+"/decision", `{"decision":"approve","argsDigest":"`+a.ArgsDigest+`"}`, &got)
			fmt.Println("  decided by", got.DecidedBy)
		case "run.finished":
			fmt.Println("transfer ran", transfers.Load(), "time(s)")
			return
		}
	}
	// Output:
	// run.started
	// tool.call
	// tool.decided
	// approval.requested
	// run.halted
	//   transfer {"amount":5} asked by rule:ask-transfer: money moves
	//   decided by person:alice
	// approval.decided
	// run.resumed
	// tool.call
	// tool.decided
	// tool.finished
	// run.finished
	// transfer ran 1 time(s)
}
