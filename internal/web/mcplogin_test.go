package web_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/internal/browsertest"
	"github.com/tollgate-dev/tollgate/internal/mcptoken"
	"github.com/tollgate-dev/tollgate/internal/serveconfig"
	"github.com/tollgate-dev/tollgate/internal/web"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/server"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// oauthMCP is an authorization server that approves at once and an MCP
// server it protects; it returns the MCP server's URL.
func oauthMCP(t *testing.T) string {
	var mu sync.Mutex
	challenges, tokens := map[string]string{}, map[string]bool{}
	var as, rs *httptest.Server
	js := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	as = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			js(w, map[string]any{"issuer": as.URL, "authorization_endpoint": as.URL + "/authorize", "token_endpoint": as.URL + "/token",
				"registration_endpoint": as.URL + "/register", "code_challenge_methods_supported": []string{"S256"}})
		case "/register":
			w.WriteHeader(http.StatusCreated)
			js(w, map[string]any{"client_id": "c1", "token_endpoint_auth_method": "none"})
		case "/authorize":
			q := r.URL.Query()
			code := fmt.Sprintf("code%d", len(challenges))
			challenges[code] = q.Get("code_challenge")
			http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+q.Get("state"), http.StatusFound)
		case "/token":
			_ = r.ParseForm()
			sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
			if challenges[r.Form.Get("code")] != base64.RawURLEncoding.EncodeToString(sum[:]) {
				http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
				return
			}
			tok := fmt.Sprintf("tok%d", len(tokens))
			tokens[tok] = true
			js(w, map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(as.Close)
	srv := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	rs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			js(w, map[string]any{"resource": rs.URL + "/mcp", "authorization_servers": []string{as.URL}})
			return
		}
		mu.Lock()
		ok := tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		mu.Unlock()
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+rs.URL+`/.well-known/oauth-protected-resource/mcp"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(rs.Close)
	return rs.URL + "/mcp"
}

// The page lists the agents' OAuth MCP servers to an approver; its login
// link takes the person through the authorization server and back to the
// server, which keeps the login for the tenant.
func TestPageLogsInToMCPServer(t *testing.T) {
	mcpURL := oauthMCP(t)
	dir := t.TempDir()
	mcpFile := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(mcpFile, []byte(`{"mcpServers": {"docs": {"url": "`+mcpURL+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := runs.RunConfig{AgentConfig: runs.AgentConfig{Model: runs.ModelRef{Provider: "script", Name: "s.yaml"}, Workdir: ".", MCPFiles: []string{mcpFile}}}.Resolve(dir)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := serveconfig.NewTokens([]serveconfig.TokenEntry{
		{SHA256: serveconfig.HashToken(aliceToken), Name: "alice", Tenant: "acme", Roles: []server.Role{server.RoleOperator, server.RoleApprover}},
	})
	if err != nil {
		t.Fatal(err)
	}
	logins := filepath.Join(dir, "logins")
	ts := httptest.NewUnstartedServer(nil)
	srv, err := server.New(memory.New(nil), &builder{}, &server.Options{
		Agents: map[string]runs.RunConfig{"docs-agent": cfg}, Tokens: tokens.Lookup, Page: web.Handler(),
		Tick: 20 * time.Millisecond, Heartbeat: 200 * time.Millisecond,
		MCPLogins: &server.MCPLoginOptions{Dir: logins, RedirectURL: "http://" + ts.Listener.Addr().String() + "/v1/mcp/oauth/callback"},
	})
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = srv
	ts.Start()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = srv.Run(ctx); close(done) }()
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		_ = srv.Shutdown(sctx)
		cancel()
		<-done
		ts.CloseClientConnections()
		ts.Close()
	})

	tctx := tab(t)
	browsertest.SignIn(t, tctx, ts.URL, aliceToken)
	run(t, tctx, chromedp.WaitVisible(chromedp.CSS(`#mcp-logins a.mcp-login`)))
	if got := text(t, tctx, `#mcp-logins-list li`); !strings.Contains(got, "docs (agent docs-agent, "+mcpURL+"): not logged in.") {
		t.Errorf("the page lists %q", got)
	}
	// The click leaves the page for the authorization server, which sends
	// the browser back to the server's callback.
	run(t, tctx, chromedp.Click(chromedp.CSS(`#mcp-logins a.mcp-login`)), chromedp.WaitVisible(chromedp.CSS(`p.mcp-login-done`)))
	if got := text(t, tctx, `p.mcp-login-done`); !strings.Contains(got, "Logged in to MCP server docs for tenant acme") {
		t.Errorf("the callback page says %q", got)
	}
	if l, err := (&mcptoken.Store{Dir: mcptoken.TenantDir(logins, "acme")}).Load(mcpURL); err != nil || l == nil {
		t.Fatalf("acme's login: %v %v", l, err)
	}
	// Back on the page (still signed in, in this tab), the server shows as
	// logged in.
	run(t, tctx, chromedp.Navigate(ts.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`#mcp-logins a.mcp-login`)))
	waitText(t, tctx, `#mcp-logins-list li`, "logged in. Log in again")
}
