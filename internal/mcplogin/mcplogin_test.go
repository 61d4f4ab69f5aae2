package mcplogin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/internal/mcptoken"
	"github.com/tollgate-dev/tollgate/internal/oauthmcp"
	"github.com/tollgate-dev/tollgate/mcptool"
)

// browser is a person who approves at once: it opens the authorization URL
// and reads the code from the redirect.
func browser(ctx context.Context, authURL string) (*auth.AuthorizationResult, error) {
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	_ = resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound {
		return nil, fmt.Errorf("no redirect: %d", resp.StatusCode)
	}
	return &auth.AuthorizationResult{Code: loc.Query().Get("code"), State: loc.Query().Get("state")}, nil
}

// openWith opens the server at mcpURL with the logins kept in dir, and
// nobody to log in; it returns the server's status.
func openWith(t *testing.T, mcpURL, dir string) mcptool.ServerStatus {
	t.Helper()
	set, err := mcptool.Open(context.Background(), &mcptool.Config{Servers: map[string]*mcptool.ServerConfig{"docs": {URL: mcpURL}}},
		&mcptool.Options{OAuth: func(name string, sc *mcptool.ServerConfig) (auth.OAuthHandler, error) {
			return mcptool.NewOAuthHandler(name, sc, &mcptool.OAuthOptions{Dir: dir})
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = set.Close() })
	if st := set.Servers()[0]; st.State != mcptool.StateReady {
		return st
	}
	res, err := set.Tools()[0].Call(context.Background(), json.RawMessage(`{}`))
	if err != nil || res.IsError || res.Output != "ok" {
		t.Fatalf("echo = %+v, %v", res, err)
	}
	return set.Servers()[0]
}

// A login whose browser comes back to a page the host serves: Start
// returns the authorization URL at once, Finish takes the redirect's code
// and the token lands in the tenant's logins only; a run of that tenant
// uses it, a run of another tenant meets the login it lacks.
func TestStartPerTenant(t *testing.T) {
	mcpURL, authorizes := oauthmcp.Counted(t)
	dir := t.TempDir()
	acme, globex := &mcptoken.Store{Dir: mcptoken.TenantDir(dir, "acme")}, &mcptoken.Store{Dir: mcptoken.TenantDir(dir, "globex")}
	if acme.Dir == globex.Dir || mcptoken.TenantDir(dir, "acme") != acme.Dir {
		t.Fatalf("tenant stores %s and %s", acme.Dir, globex.Dir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := Start(ctx, "docs", &mcptool.ServerConfig{URL: mcpURL}, &mcptool.OAuthOptions{Dir: acme.Dir, RedirectURL: "http://127.0.0.1:1/callback"})
	if err != nil {
		t.Fatal(err)
	}
	if p.State == "" || authorizes() != 0 {
		t.Fatalf("pending login %+v, authorizes %d: want a URL with a state, not yet visited", p, authorizes())
	}
	res, err := browser(ctx, p.URL)
	if err != nil || res.State != p.State {
		t.Fatalf("browser: %+v %v", res, err)
	}
	if err := p.Finish(ctx, res); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	if l, err := acme.Load(mcpURL); err != nil || l == nil {
		t.Fatalf("acme's login: %v %v", l, err)
	}
	if l, err := globex.Load(mcpURL); err != nil || l != nil {
		t.Fatalf("globex's login: %v %v", l, err)
	}
	if st := openWith(t, mcpURL, acme.Dir); st.State != mcptool.StateReady {
		t.Errorf("acme's run: server %s: %v", st.State, st.Err)
	}
	if st := openWith(t, mcpURL, globex.Dir); st.State != mcptool.StateFailed || !errors.Is(st.Err, mcptool.ErrLoginRequired) {
		t.Errorf("globex's run: server %s: %v; want failed, login required", st.State, st.Err)
	}
}

// Start refuses what it cannot log in to, and says when the server asked
// for no login.
func TestStartRefusals(t *testing.T) {
	ctx := context.Background()
	opts := &mcptool.OAuthOptions{Dir: t.TempDir(), RedirectURL: "http://127.0.0.1:1/callback"}
	if _, err := Start(ctx, "docs", &mcptool.ServerConfig{URL: "https://h/mcp"}, &mcptool.OAuthOptions{RedirectURL: opts.RedirectURL}); err == nil {
		t.Error("Start without a directory succeeded")
	}
	if _, err := Start(ctx, "fs", &mcptool.ServerConfig{Command: "true"}, opts); err == nil {
		t.Error("Start of a stdio server succeeded")
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "open", Version: "1"}, nil)
	open := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer open.Close()
	if _, err := Start(ctx, "open", &mcptool.ServerConfig{URL: open.URL}, opts); !errors.Is(err, ErrNoLoginNeeded) {
		t.Errorf("Start of a server without OAuth: %v, want ErrNoLoginNeeded", err)
	}
}
