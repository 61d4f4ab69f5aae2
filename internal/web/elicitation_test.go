package web_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/mcptool"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// elicitingTool is the tool deploy of an MCP server that asks the person
// for a region before it acts, and returns what it was told.
func elicitingTool(t *testing.T) tool.Tool {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "ops", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "deploy", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r, ok := req.Params.InputResponses["where"]; ok {
			b, _ := json.Marshal(r)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "server got " + string(b)}}}, nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"where": &mcp.ElicitParams{Message: "Deploy where?", RequestedSchema: map[string]any{
			"type":       "object",
			"properties": map[string]any{"region": map[string]any{"type": "string", "enum": []string{"eu", "us"}}},
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

// An MCP server's request for input is a card with two more buttons than
// a question's: decline and cancel the server's request, which MCP keeps
// apart. Each tells the server what it says, and the card says so; Deny…
// (here "Stop the call…") stays for ending the call without the server.
func TestPageDeclinesAndCancelsAnElicitation(t *testing.T) {
	for _, c := range []struct{ button, told, want string }{
		{"elicit-decline", "The server is told decline", `server got {"action":"decline"}`},
		{"elicit-cancel", "The server is told cancel", `server got {"action":"cancel"}`},
	} {
		t.Run(c.button, func(t *testing.T) {
			m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
				if testkit.Turn(req) == 0 {
					return model.Reply{ToolCalls: []model.FuncCall{testkit.Call("d1", "mcp__ops__deploy", map[string]string{"env": "prod"})}}, nil
				}
				return model.Reply{Content: "saw: " + req.Messages[len(req.Messages)-1].Content}, nil
			})
			f := newFixtureWith(t, m, "", 10*time.Minute, "", elicitingTool(t))
			ctx := tab(t)
			signIn(t, ctx, f, aliceToken)
			id := f.startRun()
			card := `li.approval`
			run(t, ctx, chromedp.WaitVisible(chromedp.CSS(card+` button.`+c.button)))
			if got := text(t, ctx, card+` button.deny-open`); got != "Stop the call…" {
				t.Errorf("the deny button reads %q", got)
			}
			run(t, ctx, chromedp.Click(chromedp.CSS(card+` button.`+c.button)))
			run(t, ctx, chromedp.WaitVisible(chromedp.CSS(card+` p.outcome`)))
			if got := text(t, ctx, card+` p.outcome`); !strings.HasPrefix(got, c.told+": mcp__ops__deploy") {
				t.Errorf("the card says %q", got)
			}
			f.waitRun(id, store.RunDone)
			var v serverapi.RunView
			f.do("GET", "/v1/runs/"+id, aliceToken, nil, &v)
			if !strings.Contains(v.Text, c.want) {
				t.Fatalf("the model saw %q, want %q", v.Text, c.want)
			}
		})
	}
}
