package mcpgateway_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/mcpgateway"
	"github.com/tollgate-dev/tollgate/tool"
)

// With Authenticate, an unknown token is 401, one it refuses is 403 with
// its reason, and a known one's principal and tenant ask for the calls:
// the records name the principal, and a session is bound to its tenant
// and principal, so that the same name in another tenant cannot take it
// up.
func TestHandlerAuthenticatesTenants(t *testing.T) {
	f := setup(t, nil, nil, nil)
	clients := map[string]mcpgateway.Client{
		"tg_acme": {Principal: tool.Principal{Kind: tool.PrincipalPerson, Name: "ci"}, Tenant: "acme"},
		"tg_beta": {Principal: tool.Principal{Kind: tool.PrincipalPerson, Name: "ci"}, Tenant: "beta"},
	}
	authn := func(token string) (mcpgateway.Client, error) {
		if token == "tg_approver" {
			return mcpgateway.Client{}, errors.New("this token may decide approvals")
		}
		c, ok := clients[token]
		if !ok {
			return c, mcpgateway.ErrUnknownToken
		}
		return c, nil
	}
	srv := httptest.NewServer(f.gw.Handler(&mcpgateway.HTTPOptions{Authenticate: authn}))
	t.Cleanup(srv.Close)
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	post := func(token, session, body string) (*http.Response, string) {
		req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		return resp, string(b)
	}
	for token, want := range map[string]int{"": 401, "tg_unknown": 401, "tg_approver": 403} {
		resp, body := post(token, "", initialize)
		if resp.StatusCode != want {
			t.Errorf("token %q: %d %s, want %d", token, resp.StatusCode, body, want)
		}
		if token == "tg_approver" && !strings.Contains(body, "may decide approvals") {
			t.Errorf("the 403 says %q, not why", body)
		}
	}
	resp, body := post("tg_acme", "", initialize)
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("initialize as acme's ci: %d %s", resp.StatusCode, body)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`
	if resp, body := post("tg_beta", session, list); resp.StatusCode < 400 {
		t.Errorf("beta's ci took acme's session up: %d %s", resp.StatusCode, body)
	}
	if resp, body := post("tg_acme", session, list); resp.StatusCode != http.StatusOK {
		t.Errorf("acme's ci in its own session: %d %s", resp.StatusCode, body)
	}

	hc := &http.Client{Transport: bearer{"tg_beta"}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if res := call(t, cs, "echo", map[string]any{"text": "t"}); text(res) != "echo: t" {
		t.Errorf("echo: %q", text(res))
	}
	if rec := f.records.last(t, "mcp__up__echo"); rec.Principal.String() != "person:ci" {
		t.Errorf("the record's principal is %s, want person:ci", rec.Principal)
	}
}
