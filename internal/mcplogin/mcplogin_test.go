package mcplogin

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/internal/mcptoken"
	"github.com/tollgate-dev/tollgate/mcptool"
)

// oauthMCP is an authorization server (dynamic registration, PKCE S256)
// and an MCP server it protects, with one tool, echo; it returns the MCP
// server's URL and a count of the visits to the authorization endpoint.
func oauthMCP(t *testing.T) (mcpURL string, authorizes func() int) {
	var mu sync.Mutex
	challenges, tokens, visits := map[string]string{}, map[string]bool{}, 0
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
			visits++
			q := r.URL.Query()
			code := fmt.Sprintf("code%d", len(challenges))
			challenges[code] = q.Get("code_challenge")
			http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
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
	return rs.URL + "/mcp", func() int { mu.Lock(); defer mu.Unlock(); return visits }
}

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
	mcpURL, authorizes := oauthMCP(t)
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
