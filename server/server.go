package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store"
)

// Options configures a [Server]; nil means defaults, except that Agents and
// Tokens are needed for anything useful.
type Options struct {
	// Agents are the agents runs may start, by name, each a resolved run
	// configuration ([runs.RunConfig.Resolve]); POST /v1/runs names one.
	Agents map[string]runs.RunConfig
	// AgentProblem, if set, words the error of an agent that does not
	// build for the 422 of POST /v1/runs as the file the agent was loaded
	// from places it ("server.yaml:12:13: agents.payer.policy: ...", as
	// `tollgate serve` checks its agents at start). Nil words it as the
	// key of server.yaml the error is about ("policy: ...", for a
	// [runs.FieldError]), or as the error's text.
	AgentProblem func(agent string, err error) string
	// AgentTenants, by agent name, lists the tenants whose principals may
	// see and start the agent ("" is the default tenant); to any other
	// tenant the agent does not exist (GET /v1/agents leaves it out, POST
	// /v1/runs naming it is 404). An agent not listed, or listed with no
	// tenant, is open to every tenant. A name that is not in Agents is an
	// error of [New].
	AgentTenants map[string][]string
	// Tokens returns the principal of a bearer token, and false for a
	// token it does not know; every /v1 request is authenticated with it
	// (a token over 512 bytes is unknown without asking). Nil refuses
	// them all (401). It is called for every request, concurrently: keep
	// hashes of the tokens, never the tokens, and compare in constant
	// time or by hash.
	Tokens func(token string) (Principal, bool)
	// Tenants are the tenants of the Tokens' principals ("" the default
	// tenant): before it says it is ready, [Server.Run] builds each agent
	// open to every tenant once for each of them, so that their first runs
	// do not wait for the build. Nil leaves those builds to the first runs.
	Tenants []string
	// Page, if set, serves every GET outside /v1/, /healthz, /readyz and
	// /metrics: GET /, /assets/... and the page's own views (the approvals
	// page); without it those paths are 404.
	Page http.Handler
	// Host configures the [runs.Host] the server drives runs with (holder
	// name, lease TTL, middleware); nil for the defaults.
	Host *runs.Options
	// Heartbeat is how often an idle event stream gets a comment line
	// (default 15s).
	Heartbeat time.Duration
	// Tick is how often the server records expired approvals and looks for
	// runs whose host's lease expired (default 1s).
	Tick time.Duration
	// Webhooks receive their tenant's events, signed (Standard Webhooks),
	// while [Server.Run] runs.
	Webhooks []Webhook
	// Durable, if set, makes the runs this server starts durable runs
	// (runs.Durable, driven by workers: `tollgate worker`, or this process's
	// own engine): POST /v1/runs enqueues the run with
	// [runs.DurableQueue.Start] (the run ID is the workflow's ID; an
	// Idempotency-Key still names one run); a decision on a durable run's
	// request is recorded with [runs.DurableQueue.Answer], which wakes the
	// waiting run; a durable run is cancelled with [runs.DurableQueue.Cancel].
	// The server never resumes a durable run itself: its workflow does.
	// Events, approvals and metrics come from the store as for any run.
	Durable runs.DurableQueue
	// ClaudeCode, if set, serves POST /v1/hooks/claude-code: Claude Code's
	// hook events decided with its policies, each session a run (see
	// [ClaudeCodeOptions]); without it the path is 404.
	ClaudeCode *ClaudeCodeOptions
	// Codex, if set, serves POST /v1/hooks/codex: Codex CLI's hook
	// events, answered as ClaudeCode's are (in the JSON they share;
	// `tollgate codex hook` gives Codex's dialect), its sessions runs of
	// agent codex; without it the path is 404.
	Codex *ClaudeCodeOptions
	// MCPLogins, if set, lets a tenant's approvers log the tenant in to an
	// agent's OAuth MCP server (POST /v1/mcp/logins, the browser coming
	// back to GET /v1/mcp/oauth/callback); the tenant's runs use the
	// login, no other tenant's do. Nil: no such routes.
	MCPLogins *MCPLoginOptions
	// Gateway, if set, serves MCP clients' sessions as runs: a gateway
	// mounted at /mcp, and the routes of external gateways (see
	// [GatewayOptions]); without it those paths are 404.
	Gateway *GatewayOptions
	// Logger receives the server's logs (default discards). Tokens, prompts
	// and arguments are never logged.
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// MaxStreams caps the event streams (SSE and WebSocket) open at once on
	// this server (zero means 1024); MaxStreamsPerPrincipal caps those of
	// one token's principal (zero means 16). A stream over either cap is
	// refused with 429 and Retry-After: each stream holds a connection,
	// memory and store reads.
	MaxStreams, MaxStreamsPerPrincipal int
	// StreamWriteTimeout bounds each write to an event stream (an event, a
	// heartbeat; SSE and WebSocket alike); zero means 30 s. A client that
	// stops reading is dropped when a write does not finish within it,
	// and its place among
	// MaxStreams is free again, instead of being held, with a goroutine,
	// for as long as the client keeps the connection.
	StreamWriteTimeout time.Duration
	// BodyReadTimeout bounds the reading of a request's body (zero means
	// 30 s): a client that sends its headers and then the body slowly, or
	// not at all, gets 408 and its connection is closed, instead of
	// holding the request for as long as it likes.
	BodyReadTimeout time.Duration
	// MaxRunsPerTenant caps the runs of one tenant this server drives at
	// once (zero means 64): POST /v1/runs over it is 429 (problem type
	// https://tollgate.dev/problems/too-many-runs) with Retry-After, so
	// that one tenant's operators cannot take every goroutine, connection and process of the
	// server from the others. A run counts while this server drives it
	// (started or resumed, until it ends or halts); a run that resumes is
	// never refused, so it may take a tenant over the cap for a while.
	// Durable runs are bounded by their workers instead.
	MaxRunsPerTenant int
	// MaxTickets caps the stream tickets (POST /v1/events/ticket) alive at
	// once on this server (zero means 8192); MaxTicketsPerPrincipal those
	// of one principal (zero means 64). A ticket lasts 60 seconds. A mint
	// over either cap is refused with 429 and Retry-After, the time until
	// a ticket of that cap expires.
	MaxTickets, MaxTicketsPerPrincipal int
}

// Default caps of the open event streams ([Options.MaxStreams]).
const (
	defaultMaxStreams             = 1024
	defaultMaxStreamsPerPrincipal = 16
)

// defaultStreamWriteTimeout is the default of [Options.StreamWriteTimeout].
const defaultStreamWriteTimeout = 30 * time.Second

// defaultMaxRunsPerTenant is the default of [Options.MaxRunsPerTenant].
const defaultMaxRunsPerTenant = 64

// defaultBodyReadTimeout is the default of [Options.BodyReadTimeout].
const defaultBodyReadTimeout = 30 * time.Second

// Server serves runs, approvals and their events over HTTP (an
// [http.Handler]; the caller owns the http.Server and its listener), and
// drives the runs it starts and resumes in the background. Call [Server.Run]
// to take stored runs up and resume answered ones, and [Server.Shutdown] to
// stop.
type Server struct {
	claude *claudeCode // nil without Options.ClaudeCode
	codex  *claudeCode // nil without Options.Codex
	store  store.Store
	// layers reads the tenants' rule layers; nil when the store keeps none.
	layers *runs.LayerSource
	host   *runs.Host

	// gate, gateTenants and mcp serve MCP clients' sessions (nil without
	// Options.Gateway; mcp nil without its New).
	gate        *gatewayRuns
	gateTenants []string
	mcp         http.Handler

	// buildCache builds each agent once for its runs and resumes.
	buildCache *runs.BuildCache
	// feed hands the events Run reads to every event stream.
	feed   *feed
	agents map[string]runs.RunConfig
	// agentProblem words an agent's build error (Options.AgentProblem).
	agentProblem func(agent string, err error) string
	// policies are the runs' policy files, read for what an approval shows
	// (a rule's line, declared risks).
	policies policyFiles
	tokens   func(token string) (Principal, bool)
	tenants  []string // Options.Tenants
	tickets  tickets
	page     http.Handler
	mux      *http.ServeMux
	log      *slog.Logger
	now      func() time.Time
	beat     time.Duration
	// writeTimeout bounds each write to an event stream.
	writeTimeout time.Duration
	// bodyTimeout bounds the reading of a request's body.
	bodyTimeout time.Duration
	tick        time.Duration
	hostTTL     time.Duration
	metrics     *metrics

	// agentTenants are the tenants of each agent not open to all.
	agentTenants map[string][]string
	// mcpLogins are the tenants' MCP logins under way; nil without
	// Options.MCPLogins.
	mcpLogins *mcpLogins

	autonomy autonomyTable
	webhooks []*webhook
	streams  streamSlots
	durable  runs.DurableQueue

	// runCtx is the context of every run this server drives; Shutdown
	// cancels it with runs.ErrHostStopping once its grace is over.
	runCtx  context.Context
	stopRun context.CancelCauseFunc
	// done is closed when Shutdown starts: streams end, new runs are refused.
	done     chan struct{}
	stopOnce sync.Once
	// closed is cancelled with done: event streams wait on contexts
	// derived from it (context.AfterFunc), with no goroutine of their own.
	closed   context.Context
	setClose context.CancelFunc

	mu       sync.Mutex
	inflight map[string]bool // runs driven by this server now
	// tenantRuns counts the runs of inflight by tenant; maxRuns caps
	// those a start may add to.
	tenantRuns map[string]int
	maxRuns    int
	// recheck lists runs that could not be resumed because they were still
	// driven here: they are looked at again when that ends.
	recheck map[string]bool
	runsWG  sync.WaitGroup
	ready   bool
}

// New returns a server over the store s that builds each run's agent with
// b. The server's [runs.Host] wraps b so that the autonomy level set with
// PUT /v1/autonomy applies when a run's agent is built.
func New(s store.Store, b runs.Builder, opts *Options) (*Server, error) {
	if s == nil || b == nil {
		return nil, errors.New("server: New needs a store and a builder")
	}
	if opts == nil {
		opts = &Options{}
	}
	srv := &Server{
		store: s, agents: map[string]runs.RunConfig{}, agentProblem: opts.AgentProblem, tokens: opts.Tokens, tenants: slices.Clone(opts.Tenants), page: opts.Page,
		log: opts.Logger, now: opts.Now, beat: opts.Heartbeat, tick: opts.Tick,
		done: make(chan struct{}), inflight: map[string]bool{}, recheck: map[string]bool{}, tenantRuns: map[string]int{},
		maxRuns: opts.MaxRunsPerTenant,
		durable: opts.Durable,
		feed:    newFeed(feedSize),
	}
	if cc := opts.ClaudeCode; cc != nil {
		if cc.StateDir == "" {
			return nil, errors.New("server: ClaudeCodeOptions.StateDir is required")
		}
		srv.claude = &claudeCode{s: srv, opts: *cc, source: gate.SourceClaudeCode, runs: map[string]*sync.Mutex{}}
	}
	if cc := opts.Codex; cc != nil {
		if cc.StateDir == "" {
			return nil, errors.New("server: Options.Codex.StateDir is required")
		}
		srv.codex = &claudeCode{s: srv, opts: *cc, source: gate.SourceCodex, runs: map[string]*sync.Mutex{}}
	}
	if srv.log == nil {
		srv.log = slog.New(slog.DiscardHandler)
	}
	if srv.now == nil {
		srv.now = time.Now
	}
	if srv.beat <= 0 {
		srv.beat = 15 * time.Second
	}
	if srv.tick <= 0 {
		srv.tick = time.Second
	}
	if srv.maxRuns <= 0 {
		srv.maxRuns = defaultMaxRunsPerTenant
	}
	srv.bodyTimeout = opts.BodyReadTimeout
	if srv.bodyTimeout <= 0 {
		srv.bodyTimeout = defaultBodyReadTimeout
	}
	srv.writeTimeout = opts.StreamWriteTimeout
	if srv.writeTimeout <= 0 {
		srv.writeTimeout = defaultStreamWriteTimeout
	}
	srv.streams = streamSlots{max: opts.MaxStreams, perPrincipal: opts.MaxStreamsPerPrincipal, open: map[string]int{}}
	if srv.streams.max <= 0 {
		srv.streams.max = defaultMaxStreams
	}
	if srv.streams.perPrincipal <= 0 {
		srv.streams.perPrincipal = defaultMaxStreamsPerPrincipal
	}
	srv.tickets = tickets{max: opts.MaxTickets, perPrincipal: opts.MaxTicketsPerPrincipal}
	if srv.tickets.max <= 0 {
		srv.tickets.max = defaultMaxTickets
	}
	if srv.tickets.perPrincipal <= 0 {
		srv.tickets.perPrincipal = defaultMaxTicketsPerPrincipal
	}
	for name, cfg := range opts.Agents {
		if err := cfg.Check(); err != nil {
			return nil, fmt.Errorf("server: agent %q: %w", name, err)
		}
		if cfg.Agent == "" {
			cfg.Agent = name
		}
		srv.agents[name] = cfg
	}
	srv.agentTenants = map[string][]string{}
	for name, ts := range opts.AgentTenants {
		if _, ok := srv.agents[name]; !ok {
			return nil, fmt.Errorf("server: AgentTenants names agent %q, which is not in Agents", name)
		}
		if len(ts) > 0 {
			srv.agentTenants[name] = slices.Clone(ts)
		}
	}
	for _, w := range opts.Webhooks {
		wh, err := newWebhook(w)
		if err != nil {
			return nil, err
		}
		srv.webhooks = append(srv.webhooks, wh)
	}
	m, err := newMetrics(srv)
	if err != nil {
		return nil, err
	}
	srv.metrics = m
	var ho runs.Options
	if opts.Host != nil {
		ho = *opts.Host
	}
	srv.hostTTL = ho.LeaseTTL
	if ho.Logger == nil {
		ho.Logger = srv.log
	}
	if ho.Now == nil {
		ho.Now = srv.now
	}
	ho.Middleware = append([]agent.Middleware{m.middleware()}, ho.Middleware...)
	srv.buildCache = runs.NewBuildCache(b)
	var built runs.Builder = runs.BuilderFunc(func(ctx context.Context, cfg runs.RunConfig) (*runs.Built, error) {
		if lvl := srv.autonomy.effective(runFrom(ctx)); lvl != "" {
			cfg.Autonomy = lvl
		}
		return srv.buildCache.Build(ctx, cfg)
	})
	if ls, ok := s.(store.Layers); ok {
		// Each tenant's runs and sessions are decided with its rule layer.
		built = runs.WithLayer(built, ls)
		srv.layers = runs.NewLayerSource(ls)
	}
	h, err := runs.New(s, built, &ho)
	if err != nil {
		return nil, err
	}
	srv.host = h
	srv.runCtx, srv.stopRun = context.WithCancelCause(context.Background())
	srv.closed, srv.setClose = context.WithCancel(context.Background())
	if srv.mcpLogins, err = newMCPLogins(opts.MCPLogins); err != nil {
		return nil, err
	}
	if opts.Gateway != nil {
		if err := srv.mountGateway(opts.Gateway); err != nil {
			return nil, fmt.Errorf("server: gateway: %w", err)
		}
	}
	srv.routes()
	return srv, nil
}

// agent returns the agent name if the tenant may use it: an agent of
// another tenant is as absent as an unknown one.
func (s *Server) agent(name, tenant string) (runs.RunConfig, bool) {
	cfg, ok := s.agents[name]
	if !ok {
		return cfg, false
	}
	if ts, limited := s.agentTenants[name]; limited && !slices.Contains(ts, tenant) {
		return runs.RunConfig{}, false
	}
	return cfg, true
}

// Host returns the [runs.Host] the server drives runs with.
func (s *Server) Host() *runs.Host { return s.host }

// ServeHTTP implements [http.Handler].
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

func (s *Server) routes() {
	mux := http.NewServeMux()
	s.mux = mux
	mux.HandleFunc("POST /v1/runs", s.auth(RoleOperator, s.startRun))
	mux.HandleFunc("GET /v1/runs", s.auth(RoleViewer, s.listRuns))
	mux.HandleFunc("GET /v1/runs/{id}", s.auth(RoleViewer, s.getRun))
	mux.HandleFunc("POST /v1/runs/{id}/cancel", s.auth(RoleOperator, s.cancelRun))
	mux.HandleFunc("GET /v1/approvals", s.auth(RoleViewer, s.listApprovals))
	mux.HandleFunc("GET /v1/approvals/{id}", s.auth(RoleViewer, s.getApproval))
	mux.HandleFunc("POST /v1/approvals/{id}/decision", s.auth(RoleApprover, s.decide))
	mux.HandleFunc("GET /v1/autonomy", s.auth(RoleViewer, s.getAutonomy))
	mux.HandleFunc("PUT /v1/autonomy", s.auth(RoleViewer, s.putAutonomy))
	mux.HandleFunc("POST /v1/events/ticket", s.auth(RoleViewer, s.mintTicket))
	mux.HandleFunc("GET /v1/events", s.streamAuth(s.events))
	mux.HandleFunc("GET /v1/ws", s.streamAuth(s.websocket))
	mux.HandleFunc("GET /v1/agents", s.auth(RoleViewer, s.listAgents))
	mux.HandleFunc("GET /v1/agents/{name}/policy", s.auth(RoleViewer, s.agentPolicy))
	mux.HandleFunc("POST /v1/hooks/claude-code", s.auth(RoleAgent, s.claudeHook))
	mux.HandleFunc("GET /v1/shadow", s.auth(RoleViewer, s.shadowCounts))
	mux.HandleFunc("GET /v1/audit", s.auth(RoleViewer, s.audit))
	mux.HandleFunc("POST /v1/policy/replay", s.auth(RoleApprover, s.replayPolicy))
	mux.HandleFunc("POST /v1/hooks/codex", s.auth(RoleAgent, s.codexHook))
	mux.HandleFunc("GET /v1/rules", s.auth(RoleViewer, s.getRules))
	mux.HandleFunc("POST /v1/rules/proposals", s.auth(RoleApprover, s.proposeRule))
	mux.HandleFunc("POST /v1/rules/{id}/accept", s.auth(RoleAdmin, s.acceptRule))
	mux.HandleFunc("DELETE /v1/rules/{id}", s.auth(RoleAdmin, s.removeRule))
	if s.mcpLogins != nil {
		mux.HandleFunc("GET /v1/mcp/logins", s.auth(RoleApprover, s.listMCPLogins))
		mux.HandleFunc("POST /v1/mcp/logins", s.auth(RoleApprover, s.startMCPLogin))
		mux.HandleFunc("GET /v1/mcp/oauth/callback", s.mcpCallback)
		mux.HandleFunc("POST /v1/mcp/oauth/callback", s.mcpCallback) // the confirmation of another browser
	}
	mux.HandleFunc("POST /v1/gate/asks", s.auth(RoleAgent, s.gateAsk))
	mux.HandleFunc("GET /v1/gate/asks/{run}/{id}", s.auth(RoleAgent, s.gateAnswer))
	mux.HandleFunc("DELETE /v1/gate/asks/{run}/{id}", s.auth(RoleAgent, s.gateWithdraw))
	mux.HandleFunc("POST /v1/gate/records", s.auth(RoleAgent, s.gateRecord))
	mux.HandleFunc("POST /v1/gate/sessions/end", s.auth(RoleAgent, s.gateEnd))
	mux.HandleFunc("/mcp", s.gatewayRoute)
	mux.HandleFunc("GET /v1/me", s.auth(RoleViewer, func(w http.ResponseWriter, r *http.Request, p Principal) {
		writeJSON(w, http.StatusOK, p)
	}))
	// A path no pattern has is 404; one that other methods have is 405
	// with Allow (RFC 9110, 15.5.6): both as problem details.
	mux.HandleFunc("/v1/", s.noRoute)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.Handle("GET /metrics", s.metrics.handler)
	if s.page != nil {
		// Every other GET is the page's (/, /assets/..., its own views).
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				w.Header().Set("Allow", "GET, HEAD")
				problemf(w, r, http.StatusMethodNotAllowed, "the page answers GET only")
				return
			}
			s.page.ServeHTTP(w, r)
		})
	} else {
		mux.HandleFunc("/", s.noRoute)
	}
}

// routeMethods are the methods noRoute looks for other routes of a path
// with; a GET route answers HEAD too (net/http.ServeMux).
var routeMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// noRoute answers a request no route takes: 405 Method Not Allowed with
// an Allow header listing the methods the path has (RFC 9110, 15.5.6 and
// 10.2.1), or 404 when it has none; both as problem details (RFC 9457).
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range routeMethods {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "" && pattern != "/v1/" && pattern != "/" {
			allow = append(allow, m)
		}
	}
	if len(allow) == 0 {
		problemf(w, r, http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
		return
	}
	w.Header().Set("Allow", strings.Join(allow, ", "))
	problemf(w, r, http.StatusMethodNotAllowed, fmt.Sprintf("%s %s: this endpoint answers %s", r.Method, r.URL.Path, strings.Join(allow, ", ")))
}

// principalHandler is an API handler with the authenticated principal.
type principalHandler func(w http.ResponseWriter, r *http.Request, p Principal)

// auth authenticates a request by its Authorization header and checks role.
func (s *Server) auth(role Role, h principalHandler) http.HandlerFunc {
	return s.authWith(role, false, h)
}

// streamAuth authenticates an event stream by header or ticket.
func (s *Server) streamAuth(h principalHandler) http.HandlerFunc {
	return s.authWith(RoleViewer, true, func(w http.ResponseWriter, r *http.Request, p Principal) {
		release, ok := s.streams.take(p)
		if !ok {
			w.Header().Set("Retry-After", "10")
			writeProblem(w, r, serverapi.Problem{Type: serverapi.ProblemTooManyStreams, Title: "Too Many Requests", Status: http.StatusTooManyRequests,
				Detail: fmt.Sprintf("too many event streams open (at most %d per principal, %d in all); close one or retry later", s.streams.perPrincipal, s.streams.max)})
			return
		}
		defer release()
		h(w, r, p)
	})
}

// streamSlots counts the open event streams, in all and per principal.
type streamSlots struct {
	mu                sync.Mutex
	max, perPrincipal int
	total             int
	open              map[string]int // by tenant and name
}

// take reserves a stream for p; release gives it back.
func (t *streamSlots) take(p Principal) (release func(), ok bool) {
	key := p.Tenant + "\x00" + p.Name
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.total >= t.max || t.open[key] >= t.perPrincipal {
		return nil, false
	}
	t.total++
	t.open[key]++
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.total--
		if t.open[key]--; t.open[key] == 0 {
			delete(t.open, key)
		}
	}, true
}

func (s *Server) authWith(role Role, ticketOK bool, h principalHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := s.authenticate(r, ticketOK)
		if err != nil {
			detail := err.Error()
			if errors.Is(err, errNoToken) {
				detail = "this endpoint needs an Authorization: Bearer token"
			}
			writeProblem(w, r, serverapi.Problem{Status: http.StatusUnauthorized, Detail: detail})
			return
		}
		if !p.Has(role) {
			writeProblem(w, r, serverapi.Problem{Type: serverapi.ProblemForbidden, Title: "Forbidden", Status: http.StatusForbidden,
				Detail: fmt.Sprintf("this needs the %s role; the token of %s has %v", role, p.Name, p.Roles)})
			return
		}
		h(w, r, p)
	}
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ready := s.ready
	s.mu.Unlock()
	select {
	case <-s.done:
		problemf(w, r, http.StatusServiceUnavailable, "the server is shutting down")
		return
	default:
	}
	if !ready {
		problemf(w, r, http.StatusServiceUnavailable, "the server has not taken its stored runs up yet")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if _, err := s.store.ListRuns(ctx, store.RunFilter{AllTenants: true, Limit: 1}); err != nil {
		problemf(w, r, http.StatusServiceUnavailable, "the store does not answer")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// durableRun reports whether r is a durable run that has not ended: its
// record is held by the durable engine (runs.DurableHolder) for as long as
// it runs or waits, and only its workflow drives it.
func durableRun(r store.Run) bool {
	return r.Lease != nil && r.Lease.Holder == runs.DurableHolder
}

// runRef names the run an agent is built for, on the builder's context.
type runRef struct{ tenant, runID string }

type runRefKey struct{}

func withRun(ctx context.Context, tenant, runID string) context.Context {
	return context.WithValue(ctx, runRefKey{}, runRef{tenant, runID})
}

func runFrom(ctx context.Context) runRef {
	r, _ := ctx.Value(runRefKey{}).(runRef)
	return r
}

// closing reports whether Shutdown has started.
func (s *Server) closing() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// drive runs f (a Start or a Resume of runID) in the background under the
// server's run context, unless the run is driven here already or the server
// is closing. It reports whether f was started.
func (s *Server) drive(runID, tenant string, f func(ctx context.Context) error) bool {
	ok, _ := s.driveCapped(runID, tenant, false, f)
	return ok
}

// driveCapped is drive for a run of tenant; with capped, a run the tenant's
// count of driven runs has no room for is not started, and full is true.
func (s *Server) driveCapped(runID, tenant string, capped bool, f func(ctx context.Context) error) (started, full bool) {
	s.mu.Lock()
	if s.inflight[runID] || s.closing() {
		if s.inflight[runID] {
			// The part of the run driven now may have ended (halted)
			// already: look again when its goroutine is done.
			s.recheck[runID] = true
		}
		s.mu.Unlock()
		return false, false
	}
	if capped && s.tenantRuns[tenant] >= s.maxRuns {
		s.mu.Unlock()
		return false, true
	}
	s.inflight[runID] = true
	s.tenantRuns[tenant]++
	s.runsWG.Add(1)
	s.mu.Unlock()
	go func() {
		defer func() {
			s.mu.Lock()
			delete(s.inflight, runID)
			if s.tenantRuns[tenant]--; s.tenantRuns[tenant] <= 0 {
				delete(s.tenantRuns, tenant)
			}
			again := s.recheck[runID]
			delete(s.recheck, runID)
			s.mu.Unlock()
			if again && !s.closing() {
				s.tryResume(context.WithoutCancel(s.runCtx), runID)
			}
			s.runsWG.Done()
		}()
		if err := f(s.runCtx); err != nil && !errors.Is(err, runs.ErrHostStopping) {
			s.log.Info("run part ended with an error", "run", runID, "error", err)
		}
	}()
	return true, false
}

// Shutdown stops the server: event streams end and new runs are refused at
// once; the runs it drives get until ctx ends to finish or halt, and are then
// stopped without being ended (their latest checkpoint stays stored, their
// lease is released: runs.ErrHostStopping), so that the next server takes
// them over. It returns when every run it drove is stored, with ctx's error
// if the grace ran out. The caller shuts its http.Server down too.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		close(s.done)
		s.mu.Unlock()
		s.setClose()
	})
	idle := make(chan struct{})
	go func() { s.runsWG.Wait(); s.buildCache.Close(); close(idle) }()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
	}
	s.stopRun(runs.ErrHostStopping)
	<-idle
	return ctx.Err()
}
