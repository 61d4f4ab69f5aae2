package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/internal/dbosengine"
	"github.com/tollgate-dev/tollgate/internal/layerstore"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/internal/serveconfig"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/server"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// serveGrace bounds how long `tollgate serve` lets running runs finish or
// halt after SIGINT or SIGTERM (shutdownGrace in the configuration), within
// the process's own stopGrace.
const serveGrace = 10 * time.Second

// adminTokenFile is where `tollgate serve` without a tokens file keeps the
// admin token it makes (in the state directory, mode 0600).
const adminTokenFile = "serve.token"

func newServeCmd(env *cliEnv) *cobra.Command {
	var (
		configPath, addr string
		state            stateFlags
	)
	cmd := &cobra.Command{
		Use:   "serve --config server.yaml [--addr HOST:PORT]",
		Short: "Serve runs and approvals over HTTP (API, event streams, metrics)",
		Long: `Serve the agents of a configuration file over HTTP: start runs, list and
decide approvals, follow events (Server-Sent Events and a WebSocket), with
bearer tokens, tenants and roles. Runs are stored in the state directory
(SQLite), or in the PostgreSQL store of --store or $TOLLGATE_STORE_URL, which
several servers may share; a run that waits for an approval survives a restart: approved
runs resume by themselves, exactly once. People decide in a browser on the
approvals page at the server's address (/). With a durable: section the runs
are durable runs on a DBOS queue, driven by 'tollgate worker' processes (and
by this one when its concurrency is above zero); see "Many machines" in
docs/durable.md. See docs/server.md and package server for the API, and
'tollgate serve token' to make a token.

Without a tokens file the server listens on loopback only, and writes an admin
token for the default tenant to serve.token in the state directory.`,
		Example: `  tollgate serve token --name alice --role approver --role operator >> tokens.yaml
  tollgate serve --config server.yaml
  tollgate serve --config server.yaml --addr 127.0.0.1:8080`,
		Args: argsUsage(cobra.NoArgs),
	}
	f := cmd.Flags()
	f.StringVar(&configPath, "config", "", "server configuration file (YAML; required)")
	f.StringVar(&addr, "addr", "", "address to listen on, HOST:PORT (default: the configuration's addr, else "+serveconfig.DefaultAddr+")")
	state.add(f, env)
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if configPath == "" {
			return serveError(usageErr("--config is required"))
		}
		cfg, err := serveconfig.LoadConfig(configPath)
		if err != nil {
			return serveError(configErr("%w", err))
		}
		if addr != "" {
			if _, _, err := net.SplitHostPort(addr); err != nil {
				return serveError(usageErr("--addr %q: want HOST:PORT", addr))
			}
			cfg.Addr = addr
		}
		return serveError(serve(c.Context(), env, cfg, &state))
	}
	cmd.AddCommand(newServeTokenCmd(env))
	return cmd
}

func serve(ctx context.Context, env *cliEnv, cfg *serveconfig.Config, state *stateFlags) error {
	if cfg.StateDir != "" && state.dir == "" {
		state.dir = cfg.StateDir
	}
	if cfg.StoreKeyFile != "" && state.key == "" {
		state.key = cfg.StoreKeyFile
	}
	stateDir, err := state.resolve("")
	if err != nil {
		return err
	}
	for name, a := range cfg.Agents {
		// Links resolved on both sides: a state directory reached through a
		// link from outside is still inside the workspace it lies in.
		if insideWorkspace(stateDir, a.Workdir) {
			return configErr("state directory %s is inside the workspace of agent %s, where its tools could change it; choose another with stateDir or --state-dir", stateDir, name)
		}
	}
	// The state directory holds serve.token and the builder's files
	// whichever store is used.
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return configErr("state directory %s: %v", stateDir, err)
	}
	var tokens *serveconfig.Tokens
	// adminToken, without a tokens file, is written to tokenPath once the
	// server listens: a start that is refused leaves no token behind.
	var adminToken, tokenPath string
	protect := []string{cfg.File}
	switch {
	case cfg.TokensFile != "":
		if tokens, err = serveconfig.LoadTokens(cfg.TokensFile); err != nil {
			return configErr("%w", err)
		}
		protect = append(protect, cfg.TokensFile)
		if ts := tokens.Tenants(); len(ts) > 1 {
			for _, name := range slices.Sorted(maps.Keys(cfg.Agents)) {
				if len(cfg.AgentTenants[name]) == 0 {
					fmt.Fprintf(env.stderr, "tollgate serve: warning: agent %s has no tenants: list, so every tenant of %s (%s) may start it in its workspace %s; add tenants: [...] to it in %s\n",
						name, cfg.TokensFile, strings.Join(quoteAll(ts), ", "), cfg.Agents[name].Workdir, cfg.File)
				}
			}
		}
	case !serveconfig.Loopback(cfg.Addr):
		return configErr("refusing to listen on %s without a tokens file: anyone who reaches it could approve calls; add tokens: to %s (see 'tollgate serve token') or listen on 127.0.0.1", cfg.Addr, cfg.File)
	default:
		tok, hash, err := serveconfig.NewToken()
		if err != nil {
			return withCode(exitError, err)
		}
		adminToken, tokenPath = tok, filepath.Join(stateDir, adminTokenFile)
		if tokens, err = serveconfig.NewTokens([]serveconfig.TokenEntry{{SHA256: hash, Name: currentUser(), Roles: []server.Role{server.RoleAdmin}}}); err != nil {
			return withCode(exitError, err)
		}
	}
	ttl, err := leaseTTL(env)
	if err != nil {
		return err
	}
	if cfg.LeaseTTL > 0 {
		ttl = cfg.LeaseTTL
	}
	storeURL, err := state.storeURL()
	if err != nil {
		return err
	}
	var st store.Store
	var keyFile string
	switch {
	case storeURL != "" && cfg.Store == "memory":
		return configErr("%s says store: memory, but a PostgreSQL store is named (--store or $%s)", cfg.File, envStoreURL)
	case storeURL == "" && cfg.Store == "postgres":
		return configErr("%s says store: postgres; give its URL in $%s (or --store)", cfg.File, envStoreURL)
	case storeURL == "" && cfg.Store == "memory":
		st = memory.New(nil)
	default:
		if keyFile, err = state.keyFile(stateDir, ""); err != nil {
			return err
		}
		for name, a := range cfg.Agents {
			if insideWorkspace(keyFile, a.Workdir) {
				return configErr("store key file %s is inside the workspace of agent %s, where its tools could read it; keep it outside (storeKeyFile, --store-key-file)", keyFile, name)
			}
		}
		if st, err = openStoreAt(ctx, storeURL, stateDir, keyFile, true); err != nil {
			return err
		}
	}
	defer st.Close()
	logger := slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	b := serveBuilder{&cliBuilder{env: env, stateDir: stateDir, keyFile: keyFile, exts: runExtensions(), protect: protect, tenantLogins: true}}
	// Each agent is built once now: a missing file or one that does not
	// load stops the start, where it is seen, not the first run.
	if err := cfg.CheckAgents(ctx, b); err != nil {
		return configErr("%w", err)
	}
	opts := &server.Options{Agents: cfg.Agents, AgentProblem: cfg.AgentProblem, AgentTenants: cfg.AgentTenants, Tokens: tokens.Lookup, Tenants: tokens.Tenants(), Webhooks: cfg.Webhooks, Logger: logger, Host: &runs.Options{LeaseTTL: ttl}, Page: server.ApprovalsPage()}
	// The sections' hooks' commands write only in their workdir, never the
	// server's own files nor its state directory.
	for _, sec := range []struct {
		name string
		cc   *serveconfig.ClaudeCodeConfig
		dst  **server.ClaudeCodeOptions
	}{{"codex", cfg.Codex, &opts.Codex}, {"claudeCode", cfg.ClaudeCode, &opts.ClaudeCode}} {
		if sec.cc == nil {
			continue
		}
		o, release, err := claudeServeOptions(ctx, sec.cc, sec.name, stateDir, append(slices.Clip(protect), stateDir), b.hidden(), env.stderr)
		if err != nil {
			return configErr("%s: %s: %w", cfg.File, sec.name, err)
		}
		defer release()
		*sec.dst = o
	}
	durable := "off"
	if d := cfg.Durable; d != nil {
		// The durable runs this process drives build each agent once
		// (closed after the engine).
		var ab runs.Builder = b
		if ls, ok := st.(layerstore.Layers); ok {
			ab = runcore.WithLayer(b, ls)
		}
		agents := runcore.NewBuildCache(ab)
		defer agents.Close()
		if d.Concurrency > 0 {
			levels, err := tenantAutonomy(ctx, st)
			if err != nil {
				logger.Warn("reading the tenants' autonomy levels failed; their agents are built at their first runs", "error", err)
			}
			warmAgents(ctx, agents, cfg, tokens.Tenants(), levels, logger)
		}
		eo := durableOptions(d)
		eo.Store, eo.Builder, eo.Logger = st, agents, logger
		e, err := dbosengine.New(ctx, eo)
		if err != nil {
			return withCode(exitError, fmt.Errorf("durable runs: %v", err))
		}
		// Closed after the server: a decision in flight still wakes its run.
		defer func() {
			if err := e.Close(workerDrain); err != nil {
				logger.Warn("closing the durable engine", "error", err)
			}
		}()
		opts.Durable = e
		durable = "enqueued for workers"
		if d.Concurrency > 0 {
			durable = fmt.Sprintf("enqueued; this process drives up to %d as worker %s", d.Concurrency, e.ExecutorID())
		}
	}
	// The listener comes first: the gateway's links to the page name its
	// address.
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return withCode(exitError, err)
	}
	defer ln.Close()
	// The tenants' MCP logins land in the state directory; the browser
	// comes back to this listener.
	opts.MCPLogins = &server.MCPLoginOptions{Dir: mcpLoginsDir(stateDir), RedirectURL: callbackURL(ln.Addr())}
	if g := cfg.Gateway; g != nil {
		var closeGateway func()
		if opts.Gateway, closeGateway, err = serveGatewayOptions(ctx, env, g, "http://"+ln.Addr().String()+"/", st, append(protect, stateDir), b.hidden(), logger); err != nil {
			if !strings.HasPrefix(err.Error(), "gateway: ") {
				err = fmt.Errorf("gateway: %w", err)
			}
			return configErr("%s: %w", cfg.File, err) // the section's errors are the gateway command's
		}
		defer closeGateway()
	}
	srv, err := server.New(st, b, opts)
	if err != nil {
		_ = ln.Close()
		return withCode(exitError, err)
	}
	if adminToken != "" {
		if err := writeSecretFile(tokenPath, []byte(adminToken+"\n")); err != nil {
			_ = ln.Close()
			return withCode(exitError, fmt.Errorf("writing the admin token: %v", err))
		}
		fmt.Fprintf(env.stderr, "tollgate serve: no tokens file; an admin token for this process is in %s\n", tokenPath)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	runDone := make(chan error, 1)
	go func() { runDone <- srv.Run(context.WithoutCancel(ctx)) }()
	serveDone := make(chan error, 1)
	go func() { serveDone <- hs.Serve(ln) }()
	names := make([]string, 0, len(cfg.Agents))
	for n := range cfg.Agents {
		names = append(names, n)
	}
	slices.Sort(names)
	fmt.Fprintf(env.stderr, "tollgate serve: listening on http://%s (agents: %s; store: %s; durable runs: %s)\n", ln.Addr(), strings.Join(names, ", "), storeWhere(storeURL, stateDir), durable)
	fmt.Fprintf(env.stderr, "tollgate serve: the approvals page is at http://%s/\n", ln.Addr())
	select {
	case <-ctx.Done():
	case err := <-serveDone:
		return withCode(exitError, err)
	case err := <-runDone:
		if err != nil {
			return withCode(exitError, err)
		}
	}
	grace := cfg.ShutdownGrace
	if grace <= 0 || grace > serveGrace {
		grace = serveGrace
	}
	fmt.Fprintf(env.stderr, "tollgate serve: stopping; running runs get %s to finish or halt, then are stored for the next server\n", grace)
	gctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- srv.Shutdown(gctx) }()
	herr := hs.Shutdown(gctx)
	serr := <-errc
	if errors.Is(serr, context.DeadlineExceeded) {
		fmt.Fprintln(env.stderr, "tollgate serve: some runs were still running; they are stored and the next server takes them over")
	}
	if herr != nil && !errors.Is(herr, context.DeadlineExceeded) {
		return withCode(exitError, herr)
	}
	return nil
}

// serveError says "serve: " before every error of serve (once), as Main
// prints it after "tollgate: ": one prefix, whichever part failed.
func serveError(err error) error {
	var ce *exitCodeError
	if errors.As(err, &ce) && ce.err != nil && strings.HasPrefix(ce.err.Error(), "server: ") {
		// server.New's own prefix
		err = &exitCodeError{code: ce.code, config: ce.config, err: errors.New(strings.TrimPrefix(ce.err.Error(), "server: "))}
	}
	return commandError("serve", err)
}

// serveBuilder builds the agents of server.yaml with the command's builder,
// its errors naming the configuration's fields (runs.FieldError, which
// package server reports at the agent's key: "policy: ..." is at the
// policy: line), so that no flag name reaches an API client.
type serveBuilder struct{ *cliBuilder }

// Build implements runs.Builder.
func (sb serveBuilder) Build(ctx context.Context, cfg runs.RunConfig) (*runs.Built, error) {
	return sb.cliBuilder.build(ctx, cfg, false)
}

// quoteAll quotes each tenant name, so that the default tenant shows as "".
func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

func newServeTokenCmd(env *cliEnv) *cobra.Command {
	var name, tenant string
	var roles []string
	cmd := &cobra.Command{
		Use:   "token --name NAME [--tenant TENANT] --role ROLE...",
		Short: "Make a bearer token and the tokens-file entry that stands for it",
		Long: `Make a new random bearer token. The token is printed once on stderr, for
its holder; the tokens file keeps only its SHA-256: the entry printed on
stdout, which >> appends to the tokens file (an empty file or one under
tokens:).
Roles: viewer (read), approver (decide approvals), operator (start and cancel
runs), admin (everything in the tenant), agent (an MCP client's or a Claude
Code or Codex hook's: asks and waits, never decides or reads; alone).`,
		Example: `  tollgate serve token --name alice --tenant acme --role approver --role operator >> tokens.yaml
  tollgate serve token --name ide --role agent >> tokens.yaml 2> ide.token.txt   # the token: the line's end`,
		Args: argsUsage(cobra.NoArgs),
	}
	f := cmd.Flags()
	f.StringVar(&name, "name", "", "the principal's name: decisions record person:NAME (required)")
	f.StringVar(&tenant, "tenant", "", "the tenant (default: the default tenant)")
	f.StringArrayVar(&roles, "role", nil, "a role: viewer, approver, operator, admin or agent (a Claude Code hook's: asks and waits, never decides or reads); repeatable (required)")
	cmd.RunE = func(c *cobra.Command, args []string) error {
		tok, hash, err := serveconfig.NewToken()
		if err != nil {
			return withCode(exitError, err)
		}
		e := serveconfig.TokenEntry{SHA256: hash, Name: name, Tenant: tenant}
		for _, r := range roles {
			e.Roles = append(e.Roles, server.Role(r))
		}
		if _, err := serveconfig.NewTokens([]serveconfig.TokenEntry{e}); err != nil {
			return usageErr("serve token: %v", strings.TrimPrefix(err.Error(), "tokens[0]: "))
		}
		// The token goes to its holder, never into the file the entry is
		// appended to: stderr for the token, stdout for the entry.
		fmt.Fprintf(env.stderr, "token for %s (shown once, not stored): %s\n", name, tok)
		fmt.Fprintf(env.stdout, "  - name: %q\n    tenant: %q\n    roles: [%s]\n    sha256: %s\n", name, tenant, strings.Join(roles, ", "), hash)
		return nil
	}
	return cmd
}

// writeSecretFile writes data to path as a new file of mode 0600 that
// replaces whatever path named: it is written under a fresh name in the same
// directory and renamed over path, so a link planted at path is replaced,
// never followed, and no other file's mode is kept.
func writeSecretFile(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// callbackURL is the URL of the MCP logins' OAuth callback on the
// listener at addr, as a browser on this machine reaches it (an
// unspecified address is the loopback).
func callbackURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String() + "/v1/mcp/oauth/callback"
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/v1/mcp/oauth/callback"
}

// durableOptions are the durable engine's options that server.yaml's
// durable: section sets, every key of it; the caller adds the store, the
// builder and the logger.
func durableOptions(d *serveconfig.DurableConfig) dbosengine.Options {
	return dbosengine.Options{
		DatabaseURL: d.DatabaseURL, Worker: d.Concurrency > 0,
		Queue: d.Queue, Concurrency: d.Concurrency, ExecutorID: d.ExecutorID,
		Heartbeat: d.Heartbeat, DeadAfter: d.DeadAfter, AnswerPoll: d.AnswerPoll, QueuePoll: d.QueuePoll,
	}
}

// maxWarmAgents bounds the agents warmAgents builds: the build cache keeps
// 64 idle.
const maxWarmAgents = 32

// warmAgents builds, before this process takes durable runs, the agent of
// each agent of cfg for each tenant that may start it (those of
// cfg.AgentTenants, else tenants), as a run's first build would, so that
// the first durable run of each does not wait for it; under the tenant's
// autonomy level of levels, when it set one (the server stores it in the
// run's configuration). A build that fails is logged and left to the first
// run, which reports it.
func warmAgents(ctx context.Context, agents *runcore.BuildCache, cfg *serveconfig.Config, tenants []string, levels map[string]approval.Autonomy, log *slog.Logger) {
	n := 0
	for _, name := range slices.Sorted(maps.Keys(cfg.Agents)) {
		ac := cfg.Agents[name]
		if ac.Agent == "" {
			ac.Agent = name // as the server stores it
		}
		ts := tenants
		if limited := cfg.AgentTenants[name]; len(limited) > 0 {
			ts = limited
		}
		for _, t := range ts {
			if n == maxWarmAgents || ctx.Err() != nil {
				return
			}
			n++
			tc := ac
			if lvl := levels[t]; lvl != "" {
				tc.Autonomy = string(lvl)
			}
			if err := agents.Warm(ctx, t, tc); err != nil {
				log.Warn("building an agent before its first durable run failed; its first run will try again", "agent", name, "tenant", t, "error", err)
			}
		}
	}
}

// tenantAutonomy returns the autonomy level each tenant set (PUT
// /v1/autonomy), as the store's event log holds it: the last tenant-wide
// change of each, a removal leaving none. Errors: the store's.
func tenantAutonomy(ctx context.Context, st store.Store) (map[string]approval.Autonomy, error) {
	levels := map[string]approval.Autonomy{}
	var after int64
	for {
		evs, err := st.ListEvents(ctx, store.EventFilter{AllTenants: true, AfterSeq: after, Limit: store.MaxLimit})
		if err != nil {
			return levels, err
		}
		for _, ev := range evs {
			after = ev.Seq
			var c serverapi.AutonomyChange
			if ev.Type != serverapi.EventAutonomyChanged || ev.RunID != "" || json.Unmarshal(ev.Data, &c) != nil {
				continue
			}
			if c.Level == "" {
				delete(levels, ev.Tenant)
			} else {
				levels[ev.Tenant] = c.Level
			}
		}
		if len(evs) < store.MaxLimit {
			return levels, nil
		}
	}
}
