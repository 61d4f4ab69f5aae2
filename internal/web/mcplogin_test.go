package web_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/tollgate-dev/tollgate/internal/browsertest"
	"github.com/tollgate-dev/tollgate/internal/mcptoken"
	"github.com/tollgate-dev/tollgate/internal/oauthmcp"
	"github.com/tollgate-dev/tollgate/internal/serveconfig"
	"github.com/tollgate-dev/tollgate/internal/web"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/server"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// The page lists the agents' OAuth MCP servers to an approver; its login
// link takes the person through the authorization server and back to the
// server, which keeps the login for the tenant.
func TestPageLogsInToMCPServer(t *testing.T) {
	mcpURL := oauthmcp.Server(t)
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
