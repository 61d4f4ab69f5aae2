package runbuild_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/internal/mcptoken"
	"github.com/tollgate-dev/tollgate/internal/runbuild"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store/memory"
	"golang.org/x/oauth2"
)

// A server's or worker's run uses its tenant's OAuth login to an MCP
// server and no other tenant's: the run of the tenant logged in connects,
// the other tenant's run meets the 401.
func TestMCPTenantLogins(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var rs *httptest.Server
	rs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok-acme" {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+rs.URL+`/.well-known/oauth-protected-resource/mcp"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(rs.Close)
	dir := t.TempDir()
	mcpURL := rs.URL + "/mcp"
	logins := filepath.Join(dir, "logins")
	if err := (&mcptoken.Store{Dir: mcptoken.TenantDir(logins, "acme")}).Save(&mcptoken.Login{Resource: mcpURL, TokenURL: rs.URL + "/token", ClientID: "c1",
		Token: &oauth2.Token{AccessToken: "tok-acme", TokenType: "Bearer", Expiry: time.Now().Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "ws", "README"), "")
	mcpFile := write(t, filepath.Join(dir, "mcp.json"), `{"mcpServers": {"docs": {"url": "`+mcpURL+`"}}}`)
	var mu sync.Mutex
	var notices []string
	b := withModel(calls(), &runbuild.Options{MCPTenantLogins: logins, Notice: func(s string) {
		mu.Lock()
		defer mu.Unlock()
		notices = append(notices, s)
	}})
	cfg := config(t, dir, runs.RunConfig{AgentConfig: runs.AgentConfig{MCPFiles: []string{mcpFile}}})
	host, err := runs.New(memory.New(nil), b, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ tenant, want string }{
		{"acme", "mcp: server docs: ready"},
		{"globex", "OAuth login required"},
	} {
		mu.Lock()
		notices = nil
		mu.Unlock()
		if _, err := host.Start(t.Context(), runs.StartRequest{Tenant: c.tenant, Config: cfg, Prompt: "go"}); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		got := strings.Join(notices, "\n")
		mu.Unlock()
		if !strings.Contains(got, c.want) {
			t.Errorf("tenant %s: notices lack %q:\n%s", c.tenant, c.want, got)
		}
	}
}
