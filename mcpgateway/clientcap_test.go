package mcpgateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/mcpgateway"
	"github.com/tollgate-dev/tollgate/tool"
)

// capServer serves f's gateway over HTTP for the tokens tg_a and tg_b
// (clients a and b of tenant acme), with room for the calls at once the
// caps' tests make.
func capServer(t *testing.T, f *fixture) *httptest.Server {
	t.Helper()
	authn := func(token string) (mcpgateway.Client, error) {
		switch token {
		case "tg_a", "tg_b":
			return mcpgateway.Client{Principal: tool.Principal{Kind: tool.PrincipalPerson, Name: strings.TrimPrefix(token, "tg_")}, Tenant: "acme"}, nil
		}
		return mcpgateway.Client{}, mcpgateway.ErrUnknownToken
	}
	srv := httptest.NewServer(f.gw.Handler(&mcpgateway.HTTPOptions{Authenticate: authn, MaxRequests: 1024}))
	t.Cleanup(srv.Close)
	return srv
}

// connectHTTP opens a session of token on srv, or returns the error.
func connectHTTP(t *testing.T, srv *httptest.Server, token string) (*mcp.ClientSession, error) {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).
		Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: httptestClient(token)}, nil)
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

// One token's sessions may have at most 64 calls waiting for a person
// together, however many sessions it opens: the 65th, in a third
// session, is refused at once saying so; another token is still asked.
func TestPendingApprovalsPerTokenAreCapped(t *testing.T) {
	asked := make(chan struct{}, 4*pendingCap)
	release := make(chan struct{})
	in := &fakeInbox{answer: func(ctx context.Context, p *gate.Pending, _ func(string)) (*tool.Answer, error) {
		asked <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return &tool.Answer{ID: p.Request.ID, OK: false, By: "alice", Reason: "not now"}, nil
	}}
	f := setup(t, nil, &mcpgateway.Options{Inbox: in}, nil)
	srv := capServer(t, f)
	defer close(release) // before the cleanups, which wait for the calls
	var sessions []*mcp.ClientSession
	for range 3 {
		cs, err := connectHTTP(t, srv, "tg_a")
		if err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, cs)
	}
	for i := range 2 {
		callsIn(t.Context(), sessions[i], "push", pendingCap)
		for range pendingCap {
			<-asked
		}
	}
	res := overCap(t, sessions[2], asked)
	if !res.IsError || !strings.Contains(text(res), "64 calls of this client's sessions wait for one already") {
		t.Errorf("call 65 of one token: %q (error %v), want refused as too many waiting", text(res), res.IsError)
	}
	other, err := connectHTTP(t, srv, "tg_b")
	if err != nil {
		t.Fatal(err)
	}
	callsIn(t.Context(), other, "push", 1)
	<-asked // another token is asked
}

// One token may have at most 32 sessions open: the 33rd initialize is
// refused (429, saying so); once one of its sessions ends, it may open
// another; another token is not affected.
func TestHTTPSessionsPerTokenAreCapped(t *testing.T) {
	f := setup(t, nil, nil, nil)
	srv := capServer(t, f)
	var sessions []*mcp.ClientSession
	for i := range 32 {
		cs, err := connectHTTP(t, srv, "tg_a")
		if err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		sessions = append(sessions, cs)
	}
	if _, err := connectHTTP(t, srv, "tg_a"); err == nil || !strings.Contains(err.Error(), "Too Many Requests") {
		t.Errorf("session 33 of one token: %v, want refused (429)", err)
	}
	// The initialize as the SDK reads it (its keys case-sensitive), also
	// with a "Method" key that a case-blind decoder would take instead.
	for _, initialize := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","Method":"ping","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
	} {
		req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(initialize))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := httptestClient("tg_a").Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), "32 MCP sessions open already, the most one token may have") {
			t.Errorf("session 33's initialize %s: %d %s, want 429 saying the cap", initialize, resp.StatusCode, body)
		}
	}
	if _, err := connectHTTP(t, srv, "tg_b"); err != nil {
		t.Errorf("another token's session: %v", err)
	}
	if err := sessions[0].Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := connectHTTP(t, srv, "tg_a"); err != nil {
		t.Errorf("a session once one ended: %v", err)
	}
}

// httptestClient sends token as the bearer token of every request.
func httptestClient(token string) *http.Client { return &http.Client{Transport: bearer{token}} }
