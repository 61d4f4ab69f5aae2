package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/tollgate-dev/tollgate/internal/mcplogin"
	"github.com/tollgate-dev/tollgate/internal/mcptoken"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/mcptool"
)

// MCPLoginOptions configures the tenants' OAuth logins to the MCP servers
// of the served agents (POST /v1/mcp/logins, GET /v1/mcp/oauth/callback).
type MCPLoginOptions struct {
	// Dir is the directory of the tenants' logins, one directory each
	// (mcptoken.TenantDir); the runs of a tenant use its logins
	// (internal/runbuild's Options.MCPTenantLogins). Required.
	Dir string
	// RedirectURL is the URL of GET /v1/mcp/oauth/callback as the person's
	// browser reaches this server (http://127.0.0.1:PORT/v1/mcp/oauth/callback
	// on the loopback). Required.
	RedirectURL string
	// Timeout bounds one login, the person's time in the browser included;
	// zero means 10 minutes.
	Timeout time.Duration
}

// maxPendingMCPLogins bounds the logins started and not yet finished.
const maxPendingMCPLogins = 64

// maxPendingMCPLoginsPerTenant bounds the logins one tenant has started
// and not yet finished, so that one tenant cannot take every place of
// maxPendingMCPLogins.
const maxPendingMCPLoginsPerTenant = 8

// listMCPLogins is GET /v1/mcp/logins: the streamable-HTTP MCP servers of
// the tenant's agents, sorted by agent and server, each with whether the
// tenant holds a login to it (never the login itself).
func (s *Server) listMCPLogins(w http.ResponseWriter, r *http.Request, p Principal) {
	store := &mcptoken.Store{Dir: mcptoken.TenantDir(s.mcpLogins.opts.Dir, p.Tenant)}
	names := make([]string, 0, len(s.agents))
	for name := range s.agents {
		names = append(names, name)
	}
	slices.Sort(names)
	out := []serverapi.MCPLoginView{}
	for _, name := range names {
		cfg, ok := s.agent(name, p.Tenant)
		if !ok {
			continue
		}
		var servers []serverapi.MCPLoginView
		for _, f := range cfg.MCPFiles {
			c, err := s.mcpLogins.files.load(f)
			if err != nil {
				continue
			}
			for sname, sc := range c.Servers {
				if sc.URL == "" || sc.Disabled {
					continue
				}
				l, err := store.Load(sc.URL)
				servers = append(servers, serverapi.MCPLoginView{Agent: name, Server: sname, URL: sc.URL, LoggedIn: err == nil && l != nil})
			}
		}
		slices.SortFunc(servers, func(a, b serverapi.MCPLoginView) int { return strings.Compare(a.Server, b.Server) })
		out = append(out, servers...)
	}
	writeJSON(w, http.StatusOK, out)
}

// mcpLogins holds the logins started and not yet finished, by state.
type mcpLogins struct {
	opts    MCPLoginOptions
	mu      sync.Mutex
	pending map[string]*mcpLogin
	// files are the agents' MCP servers files as GET /v1/mcp/logins last
	// read them.
	files mcpFiles
}

// mcpFiles keeps each MCP servers file as last loaded, keyed by the
// SHA-256 of its content: a file is parsed again only once it changed. The
// paths are the served agents' (the server's configuration), so the cache
// is bounded by it.
type mcpFiles struct {
	mu sync.Mutex
	m  map[string]mcpFile
}

// mcpFile is one file of mcpFiles: the hash of its content and what
// parsing that content gave.
type mcpFile struct {
	sha256 [sha256.Size]byte
	cfg    *mcptool.Config
	err    error
}

// parseMCP parses the content of an MCP servers file (a variable for tests
// that count or watch what it parses).
var parseMCP = mcptool.Parse

// load returns the configuration in the file path, parsed again only when
// its content changed. The file is read once (within mcp.json's size
// limit, mcptool.ReadConfig), and the bytes hashed are the bytes parsed,
// so that what is kept under a hash is always that content's: reading it
// again to parse could see a newer content than the one hashed. The
// configuration returned is shared: read it only.
func (fs *mcpFiles) load(path string) (*mcptool.Config, error) {
	data, err := mcptool.ReadConfig(path)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	fs.mu.Lock()
	f, ok := fs.m[path]
	fs.mu.Unlock()
	if ok && f.sha256 == sum {
		return f.cfg, f.err
	}
	cfg, err := parseMCP(path, data)
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.m == nil {
		fs.m = map[string]mcpFile{}
	}
	fs.m[path] = mcpFile{sha256: sum, cfg: cfg, err: err}
	return cfg, err
}

type mcpLogin struct {
	p              *mcplogin.Pending
	tenant, server string
	ctx            context.Context
	cancel         context.CancelFunc
	// binding is the value of the cookie (loginCookie) set in the browser
	// that started the login: the callback finishes at once only in that
	// browser. confirm is the token of the confirmation form that any
	// other browser is shown, naming the tenant and the server.
	binding, confirm string
}

// loginCookie is the name of the cookie that binds the login of state to
// the browser that started it.
func loginCookie(state string) string {
	sum := sha256.Sum256([]byte(state))
	return "tollgate_mcp_login_" + hex.EncodeToString(sum[:8])
}

// randomToken returns 32 random hex digits.
func randomToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
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
	if slices.Contains(p.Roles, RoleAgent) {
		// What an agent's shell can read never logs the tenant in.
		writeProblem(w, r, serverapi.Problem{Type: serverapi.ProblemForbidden, Title: "Forbidden", Status: http.StatusForbidden,
			Detail: "a token with the agent role may not start an MCP login"})
		return
	}
	var req serverapi.MCPLoginRequest
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
	if l.full(p.Tenant) {
		problemf(w, r, http.StatusTooManyRequests, "too many logins under way; finish one or wait")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.opts.Timeout)
	pl, err := mcplogin.Start(ctx, req.Server, sc, &mcptool.OAuthOptions{Dir: mcptoken.TenantDir(l.opts.Dir, p.Tenant),
		RedirectURL: l.opts.RedirectURL, LookupEnv: os.LookupEnv, Logger: s.log})
	if err != nil {
		cancel()
		status := http.StatusBadGateway
		if errors.Is(err, mcplogin.ErrNoLoginNeeded) {
			status = http.StatusConflict
		}
		problemf(w, r, status, fmt.Sprintf("server %s: %v", req.Server, err))
		return
	}
	ml := &mcpLogin{p: pl, tenant: p.Tenant, server: req.Server, ctx: ctx, cancel: cancel, binding: randomToken(), confirm: randomToken()}
	// Checked again where the login is kept: logins started at once all
	// passed the first check while their servers were asked.
	l.mu.Lock()
	full := l.fullLocked(p.Tenant)
	if !full {
		l.pending[pl.State] = ml
	}
	l.mu.Unlock()
	if full {
		cancel()
		problemf(w, r, http.StatusTooManyRequests, "too many logins under way; finish one or wait")
		return
	}
	// The browser that started the login (the approvals page's) finishes
	// it at the callback at once; another is asked first (mcpCallback).
	path := "/"
	if u, err := url.Parse(l.opts.RedirectURL); err == nil && u.Path != "" {
		path = u.Path
	}
	http.SetCookie(w, &http.Cookie{Name: loginCookie(pl.State), Value: ml.binding, Path: path, MaxAge: int(l.opts.Timeout / time.Second),
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode})
	go func() {
		<-ctx.Done()
		l.mu.Lock()
		delete(l.pending, pl.State)
		l.mu.Unlock()
	}()
	s.log.Info("mcp login started", "tenant", p.Tenant, "by", p.Name, "agent", req.Agent, "server", req.Server)
	deadline, _ := ctx.Deadline()
	writeJSON(w, http.StatusCreated, serverapi.MCPLoginStarted{Agent: req.Agent, Server: req.Server, AuthorizationURL: pl.URL, ExpiresAt: deadline.UTC()})
}

// mcpCallback is GET /v1/mcp/oauth/callback, where the authorization
// server sends the person's browser back: the state names the login
// (unguessable, made for it), and the code is exchanged with its PKCE
// verifier. It takes no token: the browser has none. A browser that did
// not start the login (it lacks the login's cookie: someone sent the
// person the authorization URL, so that the person's login would land in
// the sender's tenant) is shown a confirmation page naming the tenant and
// the server instead, whose form (POST to the same path, with the login's
// confirmation token) finishes the login once the person accepts.
func (s *Server) mcpCallback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
		if err := r.ParseForm(); err != nil {
			http.Error(w, "bad form", http.StatusBadRequest)
			return
		}
		q = r.PostForm
	}
	state := q.Get("state")
	l := s.mcpLogins
	l.mu.Lock()
	ml := l.pending[state]
	ok := false
	if ml != nil {
		c, err := r.Cookie(loginCookie(state))
		ok = (err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(ml.binding)) == 1) ||
			(r.Method == http.MethodPost && subtle.ConstantTimeCompare([]byte(q.Get("confirm")), []byte(ml.confirm)) == 1)
		if ok {
			delete(l.pending, state)
		}
	}
	l.mu.Unlock()
	page := func(status int, class, body string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; form-action 'self'; frame-ancestors 'none'")
		w.WriteHeader(status)
		fmt.Fprintf(w, "<!doctype html><title>tollgate</title><div class=%q>%s</div><p><a href=\"/\">Back to the approvals page</a></p>", class, body)
	}
	msg := func(status int, text string) {
		class := "mcp-login-failed"
		if status == http.StatusOK {
			class = "mcp-login-done"
		}
		page(status, class, fmt.Sprintf("<p class=%q>%s</p>", class, html.EscapeString(text)))
	}
	if ml == nil || state == "" {
		msg(http.StatusBadRequest, "No login is waiting for this answer (it expired, or was finished). Start the login again.")
		return
	}
	if !ok {
		var b strings.Builder
		fmt.Fprintf(&b, "<p>This browser did not start this login. It logs <strong>tenant %s</strong> in to MCP server <strong>%s</strong>: the runs of tenant %s will act with your account on that server.</p>",
			html.EscapeString(ml.tenant), html.EscapeString(ml.server), html.EscapeString(ml.tenant))
		b.WriteString("<p>If someone sent you this link, or you are not a member of that tenant, close this window.</p>")
		fmt.Fprintf(&b, "<form method=\"post\" action=\"%s\">", html.EscapeString(r.URL.Path))
		for _, k := range []string{"state", "code", "iss", "error"} {
			if v := q.Get(k); v != "" {
				fmt.Fprintf(&b, "<input type=\"hidden\" name=\"%s\" value=\"%s\">", k, html.EscapeString(v))
			}
		}
		fmt.Fprintf(&b, "<input type=\"hidden\" name=\"confirm\" value=\"%s\"><button type=\"submit\">Log in tenant %s to %s</button></form>",
			ml.confirm, html.EscapeString(ml.tenant), html.EscapeString(ml.server))
		page(http.StatusOK, "mcp-login-confirm", b.String())
		return
	}
	defer ml.cancel()
	http.SetCookie(w, &http.Cookie{Name: loginCookie(state), Value: "", Path: r.URL.Path, MaxAge: -1, HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode})
	var res *auth.AuthorizationResult
	if q.Get("error") == "" {
		res = &auth.AuthorizationResult{Code: q.Get("code"), State: state, Iss: q.Get("iss")}
	}
	if err := ml.p.Finish(ml.ctx, res); err != nil {
		s.log.Warn("mcp login failed", "tenant", ml.tenant, "server", ml.server, "error", err)
		msg(http.StatusBadGateway, fmt.Sprintf("The login to MCP server %s failed: %v", ml.server, err))
		return
	}
	s.log.Info("mcp login done", "tenant", ml.tenant, "server", ml.server)
	msg(http.StatusOK, fmt.Sprintf("Logged in to MCP server %s for tenant %s. The tenant's runs use this login; you may close this window.", ml.server, ml.tenant))
}

// full reports whether no login may start now, in all or for tenant
// (maxPendingMCPLogins, maxPendingMCPLoginsPerTenant).
func (l *mcpLogins) full(tenant string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fullLocked(tenant)
}

// fullLocked is full with l.mu held.
func (l *mcpLogins) fullLocked(tenant string) bool {
	mine := 0
	for _, ml := range l.pending {
		if ml.tenant == tenant {
			mine++
		}
	}
	return len(l.pending) >= maxPendingMCPLogins || mine >= maxPendingMCPLoginsPerTenant
}
