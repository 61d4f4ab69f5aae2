package mcpgateway_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/mcpgateway"
	"github.com/tollgate-dev/tollgate/mcptool"
)

// elicitingUpstream is an upstream whose tool ask, once started, waits
// for proceed and then asks its client for a name; hold waits for release.
type elicitingUpstream struct {
	askStarted, proceed, holdStarted, release chan struct{}
}

func newElicitingUpstream(t *testing.T) (*elicitingUpstream, mcp.Transport) {
	u := &elicitingUpstream{askStarted: make(chan struct{}, 8), proceed: make(chan struct{}), holdStarted: make(chan struct{}, 8), release: make(chan struct{})}
	s := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, _ noIn) (*mcp.CallToolResult, any, error) {
		u.askStarted <- struct{}{}
		<-u.proceed
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
		if err != nil {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "not asked: " + err.Error()}}}, nil, nil
		}
		if res.Action != "accept" {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "no answer: " + res.Action}}}, nil, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello " + res.Content["name"].(string)}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "hold"}, func(context.Context, *mcp.CallToolRequest, noIn) (*mcp.CallToolResult, any, error) {
		u.holdStarted <- struct{}{}
		<-u.release
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "held"}}}, nil, nil
	})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	return u, ct
}

// elicitedClient connects a client of protocol 2025-11-25 to gw that
// answers every elicitation with name, counting them.
func elicitedClient(t *testing.T, gw *mcpgateway.Gateway, name string, asked *atomic.Int32) *mcp.ClientSession {
	gst, gct := mcp.NewInMemoryTransports()
	gss, err := gw.Server().Connect(t.Context(), gst, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": name}}, nil
	}}).Connect(t.Context(), gct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// An upstream's elicitation goes to the client session whose call caused
// it, never to another session's: while calls of two sessions are in
// flight to the upstream, the gateway cannot tell whose call asks, and
// cancels the elicitation instead of asking either; with one session's
// call in flight, that session is asked.
func TestUpstreamElicitationNeverReachesAnotherSession(t *testing.T) {
	up, ct := newElicitingUpstream(t)
	relay := &mcpgateway.Relay{}
	set, err := mcptool.Open(t.Context(), &mcptool.Config{Servers: map[string]*mcptool.ServerConfig{"asker": {Transport: ct}}}, &mcptool.Options{Forward: relay.Forward()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = set.Close() })
	gw, err := mcpgateway.New(t.Context(), set, &mcpgateway.Options{Relay: relay})
	if err != nil {
		t.Fatal(err)
	}
	var askedA, askedB atomic.Int32
	a := elicitedClient(t, gw, "ada", &askedA)
	b := elicitedClient(t, gw, "bob", &askedB)

	// A's ask is in flight, then B's hold: the upstream asks while both are.
	aDone := make(chan *mcp.CallToolResult, 1)
	go func() { aDone <- callIn(t.Context(), a, "ask") }()
	<-up.askStarted
	bDone := make(chan *mcp.CallToolResult, 1)
	go func() { bDone <- callIn(t.Context(), b, "hold") }()
	<-up.holdStarted
	close(up.proceed)
	if res := <-aDone; text(res) != "no answer: cancel" {
		t.Errorf("ask with two sessions' calls in flight: %q, want the elicitation cancelled", text(res))
	}
	close(up.release)
	if res := <-bDone; text(res) != "held" {
		t.Errorf("hold: %q", text(res))
	}
	if n := askedB.Load(); n != 0 {
		t.Errorf("session B was asked %d times for session A's call", n)
	}
	if n := askedA.Load(); n != 0 {
		t.Errorf("session A was asked %d times while the gateway could not tell whose call asked", n)
	}

	// A alone in flight: A is asked, B still never.
	if res := call(t, a, "ask", nil); text(res) != "hello ada" {
		t.Errorf("ask with A's call alone in flight: %q, want hello ada", text(res))
	}
	if askedA.Load() != 1 || askedB.Load() != 0 {
		t.Errorf("asked A %d, B %d times; want A once, B never", askedA.Load(), askedB.Load())
	}
}

// callIn calls name on cs from any goroutine: a failed call is a result
// saying so.
func callIn(ctx context.Context, cs *mcp.ClientSession, name string) *mcp.CallToolResult {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name})
	if err != nil {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "tools/call failed: " + err.Error()}}}
	}
	return res
}
