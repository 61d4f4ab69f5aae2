package server

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/tollgate-dev/tollgate/mcptool"
)

// MCPLoginOptions configures the tenants' OAuth logins to the MCP servers
// of the served agents (POST /v1/mcp/logins, GET /v1/mcp/oauth/callback).
type MCPLoginOptions struct {
	// Dir is the directory of the tenants' logins, one directory each
	// (mcptool.TenantTokenStore); the runs of a tenant use its logins
	// (runs/build's Options.MCPTenantLogins). Required.
	Dir string
	// RedirectURL is the URL of GET /v1/mcp/oauth/callback as the person's
	// browser reaches this server (http://127.0.0.1:PORT/v1/mcp/oauth/callback
	// on the loopback). Required.
	RedirectURL string
	// Timeout bounds one login, the person's time in the browser included;
	// zero means 10 minutes.
	Timeout time.Duration
}

// MaxPendingMCPLogins bounds the logins started and not yet finished.
const MaxPendingMCPLogins = 64

// MCPLoginRequest is the body of POST /v1/mcp/logins: the server of one
// of the tenant's agents' mcp.json files to log the tenant in to.
type MCPLoginRequest struct {
	Agent  string `json:"agent"`
	Server string `json:"server"`
}

// MCPLoginStarted is the answer of POST /v1/mcp/logins: the URL the person
// opens to authorize; the authorization server sends the browser back to
// GET /v1/mcp/oauth/callback, which lands the token in the tenant's logins.
type MCPLoginStarted struct {
	Agent            string    `json:"agent"`
	Server           string    `json:"server"`
	AuthorizationURL string    `json:"authorizationUrl"`
	ExpiresAt        time.Time `json:"expiresAt"`
}

// MCPLoginView is one OAuth-capable MCP server of an agent of the tenant
// (GET /v1/mcp/logins): a streamable-HTTP server of the agent's mcp.json
// files, and whether the tenant is logged in to it.
type MCPLoginView struct {
	Agent    string `json:"agent"`
	Server   string `json:"server"`
	URL      string `json:"url"`
	LoggedIn bool   `json:"loggedIn"`
}

// listMCPLogins is GET /v1/mcp/logins: the streamable-HTTP MCP servers of
// the tenant's agents, sorted by agent and server, each with whether the
// tenant holds a login to it (never the login itself).
func (s *Server) listMCPLogins(w http.ResponseWriter, r *http.Request, p Principal) {
	store := mcptool.TenantTokenStore(s.mcpLogins.opts.Dir, p.Tenant)
	names := make([]string, 0, len(s.agents))
	for name := range s.agents {
		names = append(names, name)
	}
	slices.Sort(names)
	out := []MCPLoginView{}
	for _, name := range names {
		cfg, ok := s.agent(name, p.Tenant)
		if !ok {
			continue
		}
		var servers []MCPLoginView
		for _, f := range cfg.MCPFiles {
			c, err := mcptool.Load(f)
			if err != nil {
				continue
			}
			for sname, sc := range c.Servers {
				if sc.URL == "" || sc.Disabled {
					continue
				}
				l, err := store.Load(sc.URL)
				servers = append(servers, MCPLoginView{Agent: name, Server: sname, URL: sc.URL, LoggedIn: err == nil && l != nil})
			}
		}
		slices.SortFunc(servers, func(a, b MCPLoginView) int { return strings.Compare(a.Server, b.Server) })
		out = append(out, servers...)
	}
	writeJSON(w, http.StatusOK, out)
}

// mcpLogins holds the logins started and not yet finished, by state.
type mcpLogins struct {
	opts    MCPLoginOptions
	mu      sync.Mutex
	pending map[string]*mcpLogin
}

type mcpLogin struct {
	p              *mcptool.PendingLogin
	tenant, server string
	ctx            context.Context
	cancel         context.CancelFunc
}

func newMCPLogins(o *MCPLoginOptions) (*mcpLogins, error) {
	if o == nil {
		return nil, nil
	}
	if o.Dir == "" || o.RedirectURL == "" {
		return nil, errors.New("server: MCPLogins needs Dir and RedirectURL")
	}
	l := &mcpLogins{opts: *o, pending: map[string]*mcpLogin{}}
	if l.opts.Timeout <= 0 {
		l.opts.Timeout = 10 * time.Minute
	}
	return l, nil
}

// startMCPLogin is POST /v1/mcp/logins: the principal's tenant is logged in
// to a server of one of its agents.
func (s *Server) startMCPLogin(w http.ResponseWriter, r *http.Request, p Principal) {
	var req MCPLoginRequest
	if !s.readJSON(w, r, 4<<10, &req) {
		return
	}
	cfg, ok := s.agent(req.Agent, p.Tenant)
	if !ok {
		problemf(w, r, http.StatusNotFound, fmt.Sprintf("agent: no agent %q", req.Agent))
		return
	}
	var sc *mcptool.ServerConfig
	for _, f := range cfg.MCPFiles {
		c, err := mcptool.Load(f)
		if err != nil {
			problemf(w, r, http.StatusInternalServerError, fmt.Sprintf("agent %s: its MCP servers do not load", req.Agent))
			return
		}
		if c.Servers[req.Server] != nil {
			sc = c.Servers[req.Server]
		}
	}
	switch {
	case sc == nil:
		problemf(w, r, http.StatusNotFound, fmt.Sprintf("server: agent %s has no MCP server %q", req.Agent, req.Server))
		return
	case sc.URL == "":
		problemf(w, r, http.StatusBadRequest, fmt.Sprintf("server: %q is not a streamable-HTTP server; only those log in with OAuth", req.Server))
		return
	}
	l := s.mcpLogins
	l.mu.Lock()
	full := len(l.pending) >= MaxPendingMCPLogins
	l.mu.Unlock()
	if full {
		problemf(w, r, http.StatusTooManyRequests, "too many logins under way; finish one or wait")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.opts.Timeout)
	pl, err := mcptool.StartLogin(ctx, req.Server, sc, &mcptool.OAuthOptions{Store: mcptool.TenantTokenStore(l.opts.Dir, p.Tenant),
		RedirectURL: l.opts.RedirectURL, LookupEnv: os.LookupEnv, Logger: s.log})
	if err != nil {
		cancel()
		status := http.StatusBadGateway
		if errors.Is(err, mcptool.ErrNoLoginNeeded) {
			status = http.StatusConflict
		}
		problemf(w, r, status, fmt.Sprintf("server %s: %v", req.Server, err))
		return
	}
	l.mu.Lock()
	l.pending[pl.State] = &mcpLogin{p: pl, tenant: p.Tenant, server: req.Server, ctx: ctx, cancel: cancel}
	l.mu.Unlock()
	go func() {
		<-ctx.Done()
		l.mu.Lock()
		delete(l.pending, pl.State)
		l.mu.Unlock()
	}()
	s.log.Info("mcp login started", "tenant", p.Tenant, "by", p.Name, "agent", req.Agent, "server", req.Server)
	deadline, _ := ctx.Deadline()
	writeJSON(w, http.StatusCreated, MCPLoginStarted{Agent: req.Agent, Server: req.Server, AuthorizationURL: pl.URL, ExpiresAt: deadline.UTC()})
}

// mcpCallback is GET /v1/mcp/oauth/callback, where the authorization
// server sends the person's browser back: the state names the login
// (unguessable, made for it), and the code is exchanged with its PKCE
// verifier. It takes no token: the browser has none.
func (s *Server) mcpCallback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	l := s.mcpLogins
	l.mu.Lock()
	ml := l.pending[q.Get("state")]
	delete(l.pending, q.Get("state"))
	l.mu.Unlock()
	page := func(status int, msg string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Security-Policy", "default-src 'none'")
		w.WriteHeader(status)
		class := "mcp-login-failed"
		if status == http.StatusOK {
			class = "mcp-login-done"
		}
		fmt.Fprintf(w, "<!doctype html><title>tollgate</title><p class=%q>%s</p><p><a href=\"/\">Back to the approvals page</a></p>", class, html.EscapeString(msg))
	}
	if ml == nil || q.Get("state") == "" {
		page(http.StatusBadRequest, "No login is waiting for this answer (it expired, or was finished). Start the login again.")
		return
	}
	defer ml.cancel()
	var res *auth.AuthorizationResult
	if q.Get("error") == "" {
		res = &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}
	}
	if err := ml.p.Finish(ml.ctx, res); err != nil {
		s.log.Warn("mcp login failed", "tenant", ml.tenant, "server", ml.server, "error", err)
		page(http.StatusBadGateway, fmt.Sprintf("The login to MCP server %s failed: %v", ml.server, err))
		return
	}
	s.log.Info("mcp login done", "tenant", ml.tenant, "server", ml.server)
	page(http.StatusOK, fmt.Sprintf("Logged in to MCP server %s for tenant %s. The tenant's runs use this login; you may close this window.", ml.server, ml.tenant))
}
