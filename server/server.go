package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/layerstore"
	"github.com/tollgate-dev/tollgate/internal/runcore"
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
	// /metrics: GET /, /assets/... and the page's own views ([ApprovalsPage]
	// gives tollgate's approvals page); without it those paths are 404.
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
	// (runcore.Durable, driven by workers: `tollgate worker`, or this process's
	// own engine): POST /v1/runs enqueues the run with
	// [runcore.DurableQueue.Start] (the run ID is the workflow's ID; an
	// Idempotency-Key still names one run); a decision on a durable run's
	// request is recorded with [runcore.DurableQueue.Answer], which wakes the
	// waiting run; a durable run is cancelled with [runcore.DurableQueue.Cancel].
	// The server never resumes a durable run itself: its workflow does.
	// Events, approvals and metrics come from the store as for any run.
	Durable runcore.DurableQueue
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
	// heartbeat; SSE and WebSocket alike; an SSE write gets at least three
	// quarters of it); zero means 30 s. A client that
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
	layers *runcore.LayerSource
	host   *runs.Host
	// sessionLogs indexes the logs of agent and MCP client sessions'
	// runs, so that their asks and views read only what they need.
	sessionLogs *sessionLogs

	// gate, gateTenants and mcp serve MCP clients' sessions (nil without
	// Options.Gateway; mcp nil without its New).
	gate        *gatewayRuns
	gateTenants []string
	mcp         http.Handler

	// buildCache builds each agent once for its runs and resumes.
	buildCache *runcore.BuildCache
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
	durable  runcore.DurableQueue

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
	// tenantRuns counts the runs of inflight by tenant whose agent is not
	// done yet (counted, by run); maxRuns caps those a start may add to.
	tenantRuns map[string]int
	counted    map[string]string
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
		done: make(chan struct{}), inflight: map[string]bool{}, recheck: map[string]bool{}, tenantRuns: map[string]int{}, counted: map[string]string{},
		maxRuns: opts.MaxRunsPerTenant,
		durable: opts.Durable,
		feed:    newFeed(feedSize),
	}
	srv.sessionLogs = newSessionLogs()
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
		if err := runcore.CheckConfig(cfg); err != nil {
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
	srv.buildCache = runcore.NewBuildCache(b)
	var built runs.Builder = runs.BuilderFunc(func(ctx context.Context, cfg runs.RunConfig) (*runs.Built, error) {
		if lvl := srv.autonomy.effective(runFrom(ctx)); lvl != "" {
			cfg.Autonomy = lvl
		}
		return srv.buildCache.Build(ctx, cfg)
	})
	if ls, ok := s.(layerstore.Layers); ok {
		// Each tenant's runs and sessions are decided with its rule layer.
		built = runcore.WithLayer(built, ls)
		srv.layers = runcore.NewLayerSource(ls)
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
