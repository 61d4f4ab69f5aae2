package mcptool

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
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/internal/mcptoken"
	"github.com/tollgate-dev/tollgate/internal/toolcall"
)

// oauthWorld is an authorization server and an MCP server it protects
// (MCP specification 2025-11-25, "Authorization"), plus an open MCP server
// that must never see a token.
type oauthWorld struct {
	as, mcp, open *httptest.Server
	mcpURL        string
	expiresIn     int // seconds, of each token the AS issues

	mu         sync.Mutex
	authorizes int               // visits of /authorize
	refreshes  int               // refresh_token grants
	codes      map[string]string // code -> PKCE challenge
	valid      map[string]bool   // access tokens the MCP server accepts
	refresh    map[string]bool   // refresh tokens the AS accepts
	issued     int
	seenOpen   []string // Authorization headers the open server saw
	redirect   bool     // the MCP server redirects every request to the open one
	resources  []string // resource parameters of authorize and token requests
}

func newOAuthWorld(t *testing.T) *oauthWorld {
	w := &oauthWorld{expiresIn: 3600, codes: map[string]string{}, valid: map[string]bool{}, refresh: map[string]bool{}}
	w.as = httptest.NewServer(http.HandlerFunc(w.serveAS))
	t.Cleanup(w.as.Close)
	srv := newServer(nil)
	addTool(srv, "echo", nil, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(rw http.ResponseWriter, r *http.Request) {
		writeJSON(rw, map[string]any{"resource": w.mcpURL, "authorization_servers": []string{w.as.URL}, "scopes_supported": []string{"tools"}})
	})
	mux.HandleFunc("/mcp", func(rw http.ResponseWriter, r *http.Request) {
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		w.mu.Lock()
		ok, redirect := w.valid[tok], w.redirect
		w.mu.Unlock()
		if redirect {
			http.Redirect(rw, r, w.open.URL, http.StatusTemporaryRedirect)
			return
		}
		if !ok {
			rw.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, w.mcp.URL))
			http.Error(rw, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(rw, r)
	})
	w.mcp = httptest.NewServer(mux)
	t.Cleanup(w.mcp.Close)
	w.mcpURL = w.mcp.URL + "/mcp"
	openSrv := newServer(nil)
	addTool(openSrv, "echo", nil, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}})
	oh := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return openSrv }, nil)
	w.open = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		if a := r.Header.Get("Authorization"); a != "" {
			w.seenOpen = append(w.seenOpen, a)
		}
		w.mu.Unlock()
		oh.ServeHTTP(rw, r)
	}))
	t.Cleanup(w.open.Close)
	return w
}

func writeJSON(rw http.ResponseWriter, v any) {
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(v)
}

func (w *oauthWorld) serveAS(rw http.ResponseWriter, r *http.Request) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		writeJSON(rw, map[string]any{
			"issuer": w.as.URL, "authorization_endpoint": w.as.URL + "/authorize", "token_endpoint": w.as.URL + "/token",
			"registration_endpoint": w.as.URL + "/register", "code_challenge_methods_supported": []string{"S256"},
			"token_endpoint_auth_methods_supported": []string{"none"}, "response_types_supported": []string{"code"},
		})
	case "/register":
		rw.WriteHeader(http.StatusCreated)
		writeJSON(rw, map[string]any{"client_id": "client-1", "redirect_uris": []string{"http://127.0.0.1:1/callback"}, "token_endpoint_auth_method": "none"})
	case "/authorize":
		q := r.URL.Query()
		w.authorizes++
		w.resources = append(w.resources, q.Get("resource"))
		if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
			http.Error(rw, "PKCE S256 required", http.StatusBadRequest)
			return
		}
		code := fmt.Sprintf("code-%d", len(w.codes))
		w.codes[code] = q.Get("code_challenge")
		http.Redirect(rw, r, q.Get("redirect_uri")+"?code="+code+"&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
	case "/token":
		_ = r.ParseForm()
		w.resources = append(w.resources, r.Form.Get("resource"))
		switch r.Form.Get("grant_type") {
		case "authorization_code":
			sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
			if ch, ok := w.codes[r.Form.Get("code")]; !ok || ch != base64.RawURLEncoding.EncodeToString(sum[:]) {
				http.Error(rw, `{"error":"invalid_grant"}`, http.StatusBadRequest)
				return
			}
			delete(w.codes, r.Form.Get("code"))
		case "refresh_token":
			if !w.refresh[r.Form.Get("refresh_token")] {
				http.Error(rw, `{"error":"invalid_grant"}`, http.StatusBadRequest)
				return
			}
			w.refreshes++
		default:
			http.Error(rw, `{"error":"unsupported_grant_type"}`, http.StatusBadRequest)
			return
		}
		w.issued++
		at, rt := fmt.Sprintf("access-%d", w.issued), fmt.Sprintf("refresh-%d", w.issued)
		w.valid[at], w.refresh[rt] = true, true
		writeJSON(rw, map[string]any{"access_token": at, "token_type": "Bearer", "refresh_token": rt, "expires_in": w.expiresIn})
	default:
		http.NotFound(rw, r)
	}
}

// revokeAll makes every token issued so far invalid, access and refresh.
func (w *oauthWorld) revokeAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.valid, w.refresh = map[string]bool{}, map[string]bool{}
}

// browser is a person who approves at once: it opens the authorization URL
// and reads the code from the redirect.
func browser(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
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

// openOAuth opens the servers of cfg with OAuth from store; login says
// whether a person can log in (a browser), as `tollgate mcp login` can, or
// not, as a run cannot.
func openOAuth(t *testing.T, cfg *Config, store *mcptoken.Store, login bool) *Set {
	t.Helper()
	return open(t, cfg, &Options{OAuth: func(name string, sc *ServerConfig) (auth.OAuthHandler, error) {
		o := &OAuthOptions{Dir: store.Dir}
		if login {
			o.Fetch, o.RedirectURL = browser, "http://127.0.0.1:1/callback"
		}
		return NewOAuthHandler(name, sc, o)
	}})
}

func callEcho(t *testing.T, s *Set, name string) {
	t.Helper()
	tl := toolsByName(s)[name]
	if tl == nil {
		t.Fatalf("no tool %s; servers %+v", name, s.Servers())
	}
	res, err := tl.Call(context.Background(), json.RawMessage(`{}`))
	if err != nil || res.IsError || res.Output != "ok" {
		t.Fatalf("%s = %+v, %v", name, res, err)
	}
}

// A login goes through discovery, registration and PKCE with the server's
// URL as resource; the token is stored 0600 and a later run uses it
// without a new login; the open server beside it never sees a token.
func TestOAuthLoginStoredAndReused(t *testing.T) {
	w := newOAuthWorld(t)
	store := &mcptoken.Store{Dir: filepath.Join(t.TempDir(), "oauth")}
	cfg := &Config{Servers: map[string]*ServerConfig{"docs": {URL: w.mcpURL}, "open": {URL: w.open.URL}}}
	callEcho(t, openOAuth(t, cfg, store, true), "mcp__docs__echo")
	if w.authorizes != 1 {
		t.Fatalf("authorizes = %d, want 1", w.authorizes)
	}
	for _, r := range w.resources {
		if r != w.mcpURL {
			t.Errorf("resource parameter %q, want %q (RFC 8707)", r, w.mcpURL)
		}
	}
	fi, err := os.Stat(store.Path(w.mcpURL))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, %v; want mode 0600", fi, err)
	}
	if di, err := os.Stat(store.Dir); err != nil || di.Mode().Perm() != 0o700 {
		t.Fatalf("token dir: %v, %v; want mode 0700", di, err)
	}

	s := openOAuth(t, cfg, store, false)
	callEcho(t, s, "mcp__docs__echo")
	callEcho(t, s, "mcp__open__echo")
	if w.authorizes != 1 {
		t.Errorf("authorizes = %d after a run with the stored login, want 1", w.authorizes)
	}
	if len(w.seenOpen) > 0 {
		t.Errorf("the open server saw Authorization %q", w.seenOpen)
	}
}

// A stored login is found only under the URL it was issued for: a server at
// another URL gets no token from it.
func TestOAuthTokenOnlyForItsServer(t *testing.T) {
	w := newOAuthWorld(t)
	store := &mcptoken.Store{Dir: t.TempDir()}
	callEcho(t, openOAuth(t, &Config{Servers: map[string]*ServerConfig{"docs": {URL: w.mcpURL}}}, store, true), "mcp__docs__echo")
	l, err := store.Load(w.mcpURL)
	if err != nil || l == nil {
		t.Fatalf("Load = %v, %v", l, err)
	}
	// The same name, now pointing at another server: it must not get the token.
	callEcho(t, openOAuth(t, &Config{Servers: map[string]*ServerConfig{"docs": {URL: w.open.URL}}}, store, false), "mcp__docs__echo")
	if len(w.seenOpen) > 0 {
		t.Errorf("the other server saw Authorization %q", w.seenOpen)
	}
	if l, err := store.Load(w.open.URL); l != nil || err != nil {
		t.Errorf("Load(other) = %v, %v; want none", l, err)
	}
}

// A token about to expire is refreshed before it is used, and the new
// token is stored.
func TestOAuthRefreshBeforeExpiry(t *testing.T) {
	w := newOAuthWorld(t)
	w.expiresIn = 5 // within golang.org/x/oauth2's 10 s early refresh
	store := &mcptoken.Store{Dir: t.TempDir()}
	cfg := &Config{Servers: map[string]*ServerConfig{"docs": {URL: w.mcpURL}}}
	callEcho(t, openOAuth(t, cfg, store, true), "mcp__docs__echo")
	before, _ := store.Load(w.mcpURL)
	w.mu.Lock()
	w.valid = map[string]bool{} // the old access token no longer works; its refresh token does
	w.mu.Unlock()
	callEcho(t, openOAuth(t, cfg, store, false), "mcp__docs__echo")
	after, _ := store.Load(w.mcpURL)
	if w.refreshes == 0 || w.authorizes != 1 {
		t.Errorf("refreshes = %d, authorizes = %d; want a refresh and no new login", w.refreshes, w.authorizes)
	}
	if before.Token.AccessToken == after.Token.AccessToken {
		t.Errorf("the stored token is still %q after the refresh", after.Token.AccessToken)
	}
}

// A revoked token fails a run with ErrLoginRequired (no authorization is
// attempted without a person), and a new login works.
func TestOAuthRevokedNeedsNewLogin(t *testing.T) {
	w := newOAuthWorld(t)
	store := &mcptoken.Store{Dir: t.TempDir()}
	cfg := &Config{Servers: map[string]*ServerConfig{"docs": {URL: w.mcpURL}}}
	callEcho(t, openOAuth(t, cfg, store, true), "mcp__docs__echo")
	w.revokeAll()
	s := openOAuth(t, cfg, store, false)
	st := status(t, s, "docs")
	if st.State != StateFailed || !errors.Is(st.Err, ErrLoginRequired) || !strings.Contains(st.Err.Error(), "tollgate mcp login docs") {
		t.Fatalf("status %s: %v; want failed with ErrLoginRequired", st.State, st.Err)
	}
	if w.authorizes != 1 {
		t.Errorf("authorizes = %d; a run must not start a login", w.authorizes)
	}
	callEcho(t, openOAuth(t, cfg, store, true), "mcp__docs__echo")
	if w.authorizes != 2 {
		t.Errorf("authorizes = %d, want a second login", w.authorizes)
	}
}

// OAuth is refused over plain http beyond the loopback, for the MCP server
// and for every request to the authorization server and its metadata.
func TestOAuthHTTPSOnly(t *testing.T) {
	if _, err := NewOAuthHandler("x", &ServerConfig{URL: "http://mcp.example.com/mcp"}, nil); err == nil || !strings.Contains(err.Error(), "https") {
		t.Errorf("http MCP server: %v", err)
	}
	for u, ok := range map[string]bool{
		"https://as.example.com/token": true, "http://127.0.0.1:8080/token": true, "http://[::1]/x": true,
		"http://localhost/x": true, "http://as.example.com/token": false, "http://10.0.0.1/x": false, "ftp://h/x": false,
	} {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		_, err := httpsOnly{roundTripFunc(func(*http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
		})}.RoundTrip(req)
		if (err == nil) != ok {
			t.Errorf("%s: %v, want allowed %v", u, err, ok)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A server that redirects elsewhere (another port of the same host, here)
// does not take its token there: the redirect is not followed.
func TestOAuthTokenNotRedirected(t *testing.T) {
	w := newOAuthWorld(t)
	store := &mcptoken.Store{Dir: t.TempDir()}
	cfg := &Config{Servers: map[string]*ServerConfig{"docs": {URL: w.mcpURL}}}
	s := openOAuth(t, cfg, store, true)
	callEcho(t, s, "mcp__docs__echo")
	// From now on the server sends every request to the open server.
	w.mu.Lock()
	w.redirect = true
	w.mu.Unlock()
	_, _ = toolsByName(s)["mcp__docs__echo"].Call(context.Background(), json.RawMessage(`{}`))
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.seenOpen) > 0 {
		t.Errorf("the token went to the other server: %q", w.seenOpen)
	}
}

// A token revoked during a run fails the next call with the login it
// needs, and the call's notice says so (an event in the run's log).
func TestOAuthRevokedDuringRunIsANotice(t *testing.T) {
	w := newOAuthWorld(t)
	store := &mcptoken.Store{Dir: t.TempDir()}
	cfg := &Config{Servers: map[string]*ServerConfig{"docs": {URL: w.mcpURL}}}
	callEcho(t, openOAuth(t, cfg, store, true), "mcp__docs__echo")
	s := openOAuth(t, cfg, store, false)
	callEcho(t, s, "mcp__docs__echo")
	w.revokeAll()
	rec := &noticeRecorder{}
	_, err := toolsByName(s)["mcp__docs__echo"].Call(toolcall.WithReporter(context.Background(), rec), json.RawMessage(`{}`))
	if !errors.Is(err, ErrLoginRequired) {
		t.Fatalf("call after the revocation: %v, want ErrLoginRequired", err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.notices) != 1 || rec.notices[0].Kind != "login" || !strings.Contains(rec.notices[0].Message, "tollgate mcp login docs") {
		t.Errorf("notices %+v", rec.notices)
	}
}
