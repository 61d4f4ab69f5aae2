package mcptool_test

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/mcptool"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

var objSchema = map[string]any{"type": "object"}

// openOne opens one in-process server under the name "app".
func openOne(t *testing.T, srv *mcp.Server, opts *mcptool.Options) *mcptool.Set {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	set, err := mcptool.Open(t.Context(), &mcptool.Config{Servers: map[string]*mcptool.ServerConfig{"app": {Transport: ct}}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = set.Close() })
	return set
}

// A server's notifications/progress for a call (every tools/call carries a
// progress token) become progress events of that call in the agent's stream.
func TestProgressBecomesEvents(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "p", Version: "0"}, nil)
	proceed := make(chan struct{})
	var tokens []any
	srv.AddTool(&mcp.Tool{Name: "work", InputSchema: objSchema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		tok := req.Params.GetProgressToken()
		tokens = append(tokens, tok)
		for i, msg := range []string{"reading", "writing \x1b[2J"} {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i + 1), Total: 2, Message: msg}); err != nil {
				return nil, err
			}
		}
		// Another call's token, and one nobody issued, reach no call.
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: "forged", Progress: 9})
		select { // answer once the agent has shown both reports
		case <-proceed:
		case <-time.After(10 * time.Second):
		}
		return textResult("done"), nil
	})
	set := openOne(t, srv, nil)
	a, err := agent.New(&agent.Options{Tools: set, Model: testkit.Script(
		[]model.FuncCall{testkit.Call("c1", "mcp__app__work", nil)},
		[]model.FuncCall{testkit.Call("c2", "mcp__app__work", nil)},
	)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for ev, err := range a.Stream(t.Context(), "go") {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == agent.EventProgress {
			got = append(got, ev.CallID+" "+ev.Progress.Message)
			if ev.Progress.Total != 2 || ev.Progress.Progress < 1 {
				t.Errorf("progress %+v", ev.Progress)
			}
			if len(got)%2 == 0 {
				proceed <- struct{}{}
			}
		}
	}
	want := []string{"c1 reading", "c1 writing \x1b[2J", "c2 reading", "c2 writing \x1b[2J"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("progress events (-want +got):\n%s", diff)
	}
	if len(tokens) != 2 || tokens[0] == nil || tokens[0] == tokens[1] {
		t.Fatalf("progress tokens sent %v; want one per call, each its own", tokens)
	}
}

// notifySeen is a slog.Handler that closes a channel when the set logs that
// a server's tools changed (the client got notifications/tools/list_changed).
type notifySeen struct {
	slog.Handler
	ch chan struct{}
}

func (h notifySeen) Enabled(context.Context, slog.Level) bool { return true }

func (h notifySeen) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "mcp server says its tools changed" {
		select {
		case h.ch <- struct{}{}:
		default:
		}
	}
	return nil
}

// notifications/tools/list_changed refreshes the tools between turns: a new
// tool is offered from the next turn, under the same naming and hints (an
// untrusted server's claims changing nothing), a removed one vanishes and a
// call to it gets an error result.
func TestToolListChangedRefreshesBetweenTurns(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "c", Version: "0"}, nil)
	seen := make(chan struct{}, 1)
	srv.AddTool(&mcp.Tool{Name: "old", InputSchema: objSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult("old ran"), nil
	})
	srv.AddTool(&mcp.Tool{Name: "install", InputSchema: objSchema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		srv.AddTool(&mcp.Tool{Name: "fresh", InputSchema: objSchema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return textResult("fresh ran"), nil
			})
		srv.RemoveTools("old")
		select { // answer once the client has the notification
		case <-seen:
		case <-time.After(10 * time.Second):
		}
		return textResult("installed"), nil
	})
	set := openOne(t, srv, &mcptool.Options{Logger: slog.New(notifySeen{slog.DiscardHandler, seen})})
	var offered [][]string
	var hints []*tool.Hints
	m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		var names []string
		for _, d := range req.Tools {
			names = append(names, d.Name)
		}
		offered = append(offered, names)
		switch testkit.Turn(req) {
		case 0:
			return model.Reply{ToolCalls: []model.FuncCall{testkit.Call("c1", "mcp__app__install", nil)}}, nil
		case 1:
			for _, tl := range set.Tools() {
				hints = append(hints, tl.Spec().Hints)
			}
			return model.Reply{ToolCalls: []model.FuncCall{testkit.Call("c2", "mcp__app__fresh", nil), testkit.Call("c3", "mcp__app__old", nil)}}, nil
		}
		return model.Reply{Content: "done"}, nil
	})
	a, err := agent.New(&agent.Options{Tools: agent.JoinToolsets(agent.ToolList{}, set), Model: m})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(t.Context(), "go")
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"mcp__app__install", "mcp__app__old"}, {"mcp__app__fresh", "mcp__app__install"}, {"mcp__app__fresh", "mcp__app__install"}}
	if diff := cmp.Diff(want, offered); diff != "" {
		t.Fatalf("tools offered per turn (-want +got):\n%s", diff)
	}
	recs := res.ToolCalls
	if recs[1].Output != "fresh ran" || recs[2].Decision.Outcome != gate.OutcomeUnknownTool || !recs[2].IsError {
		t.Fatalf("fresh: %q; old: %+v", recs[1].Output, recs[2].Decision)
	}
	if strict := mcptool.HintsFor(nil, false); len(hints) != 2 || *hints[0] != strict {
		t.Fatalf("hints after the refresh %v; want the untrusted server's strict hints", hints)
	}
	var st mcptool.ServerStatus
	for _, s := range set.Servers() {
		st = s
	}
	if st.Tools != 2 {
		t.Fatalf("status after the refresh: %d tools, want 2", st.Tools)
	}
	if changed, err := set.Refresh(t.Context()); changed || err != nil {
		t.Fatalf("a second refresh without news: changed %v, err %v", changed, err)
	}
	if !slices.ContainsFunc(set.Tools(), func(tl tool.Tool) bool { return tl.Spec().Name == "mcp__app__fresh" }) {
		t.Fatal("the new tool is not in the set")
	}
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}
