// Package oauthmcp is a test double the module's tests share: an MCP
// server behind an OAuth authorization server, on loopback. It is for tests
// only; no library package or command imports it.
package oauthmcp

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Server starts an OAuth authorization server that approves every
// authorization at once (dynamic client registration, RFC 7591; PKCE S256,
// RFC 7636; metadata, RFC 8414) and an MCP server it protects (protected
// resource metadata, RFC 9728), with one tool, echo, answering "ok". It
// returns the MCP server's URL ("http://127.0.0.1:PORT/mcp"); both servers
// close when the test ends.
func Server(t testing.TB) string {
	u, _ := Counted(t)
	return u
}

// Counted is [Server], and a count of the visits to the authorization
// endpoint (how many times a person was sent to log in).
func Counted(t testing.TB) (mcpURL string, authorizes func() int) {
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
