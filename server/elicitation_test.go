package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/mcptool"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// elicitingTool is the tool deploy of an MCP server that asks the person
// for a region and a count before it acts, and returns what it was told.
func elicitingTool(t *testing.T) tool.Tool {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "ops", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "deploy", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r, ok := req.Params.InputResponses["where"]; ok {
			b, _ := json.Marshal(r)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "server got " + string(b)}}}, nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"where": &mcp.ElicitParams{Message: "Deploy where?", RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"region": map[string]any{"type": "string", "enum": []string{"eu", "us"}},
				"count":  map[string]any{"type": "integer", "default": 3},
			},
		}}}}, nil
	})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	set, err := mcptool.Open(context.Background(), &mcptool.Config{Servers: map[string]*mcptool.ServerConfig{"ops": {Transport: ct}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = set.Close() })
	return set.Tools()[0]
}

// A served run whose MCP server asks the person for input halts on it as
// questions (the form's fields); the answer given over the API reaches
// the server: accepted with the values, or declined.
func TestAnswerElicitation(t *testing.T) {
	for _, c := range []struct {
		name, answer, want string
	}{
		{"accept", `{"answers":[["5"],["us"]]}`, `server got {"action":"accept","content":{"count":5,"region":"us"}}`},
		{"decline", `{"action":"decline"}`, `server got {"action":"decline"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
				if testkit.Turn(req) == 0 {
					return model.Reply{ToolCalls: []model.FuncCall{testkit.Call("d1", "mcp__ops__deploy", map[string]string{"env": "prod"})}}, nil
				}
				return model.Reply{Content: "saw: " + req.Messages[len(req.Messages)-1].Content}, nil
			})
			f := newFixture(t, nil, m, nil, elicitingTool(t))
			id := f.startRun()
			a := f.pending(id)
			if a.Kind != tool.KindQuestion || len(a.Questions) != 2 || a.Questions[1].Header != "region" || !strings.Contains(a.Prompt, `"ops" asks: Deploy where?`) {
				t.Fatalf("elicitation view: %+v", a)
			}
			var prob serverapi.Problem
			if code := f.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest, Answer: []byte(`{"answers":[["5"],["mars"]]}`)}, &prob); code != http.StatusUnprocessableEntity {
				t.Fatalf("an answer out of the form: %d %+v", code, prob)
			}
			var got serverapi.ApprovalView
			if code := f.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest, Answer: []byte(c.answer)}, &got); code != http.StatusOK {
				t.Fatalf("answer: %d %+v", code, got)
			}
			f.waitRun(id, store.RunDone)
			var run serverapi.RunView
			f.do("GET", "/v1/runs/"+id, aliceToken, nil, &run)
			if !strings.Contains(run.Text, c.want) {
				t.Fatalf("the model saw %q, want %q", run.Text, c.want)
			}
		})
	}
}
