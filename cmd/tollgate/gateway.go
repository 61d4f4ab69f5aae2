package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/tollgate-dev/tollgate/internal/stdioconn"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/hooks/declarative"
	"github.com/tollgate-dev/tollgate/internal/ids"
	"github.com/tollgate-dev/tollgate/internal/runbuild"
	"github.com/tollgate-dev/tollgate/internal/serveconfig"
	"github.com/tollgate-dev/tollgate/mcpgateway"
	"github.com/tollgate-dev/tollgate/mcptool"
	"github.com/tollgate-dev/tollgate/records"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/sandbox"
	"github.com/tollgate-dev/tollgate/server"
	"github.com/tollgate-dev/tollgate/telemetry"
	"github.com/tollgate-dev/tollgate/tool"
)

// gatewayGCPercent is the garbage collector's target of `tollgate gateway`
// when GOGC is not set (runtime/debug.SetGCPercent; the default is 100).
const gatewayGCPercent = 400

// gatewayFlags are the flags of `tollgate gateway`.
type gatewayFlags struct {
	mcp     []string
	policy  string
	hooks   []string
	records string
	workdir string
	addr    string
	pins    string
	tokens  string
	// builtins: --workdir was given, so the builtin tools are served on it.
	builtins bool
	claude   []string
	// protect are further files the builtin tools and the hooks'
	// commands may not write.
	protect []string
	// hide are files the hooks' commands may not read (the state
	// directory's store, key and MCP logins).
	hide []string
	// hooksSandbox confines the --hooks files' commands as a run's
	// --hooks-sandbox does: workspace, read-only or off.
	hooksSandbox string
	// inServe: the gateway is server.yaml's gateway: section, whose keys
	// errors name instead of the flags.
	inServe bool
	// server and tokenFile: asks on the approvals page of that server.
	server    string
	tokenFile string
}

func newGatewayCmd(env *cliEnv) *cobra.Command {
	var f gatewayFlags
	cmd := &cobra.Command{
		Use:   "gateway (--mcp FILE | --workdir DIR) [flags]",
		Short: "Serve MCP servers to any MCP client, governing every tool call",
		Long: `Serve the MCP servers of an mcp.json to any MCP client (Claude Desktop,
Claude Code, Cursor, an agent framework), over stdio (the default) or
streamable HTTP at /mcp (--addr), and decide every tools/call as a
tollgate run decides its own: BeforeTool hooks, the policy, autonomy from
the tools' hints (an untrusted server's are the strictest), the hooks
files' PRE_TOOL_USE and POST_TOOL_USE, the hooks and permission rules of
Claude Code settings files (--claude-settings), the records.

The client sees an upstream's own tool names when the file has one server,
and SERVER__TOOL when it has several; policies, hooks and records see
mcp__SERVER__TOOL, as in 'tollgate run'. tools/list leaves out the tools the
policy denies outright. With --workdir, tollgate's builtin tools (bash,
read, write, edit, grep, glob, webfetch, apply_patch, todowrite) are served
too, on that workspace, under the names a tollgate run gives them, with the
upstreams' tools named SERVER__TOOL: bash runs in the sandbox of 'tollgate
run', the programs the policy denies outright are refused at exec, and the
file tools refuse the gateway's own files. A tool whose description or
input schema changes after the gateway first saw it (a "rug pull") is
refused; --pins keeps what was first seen across starts. A call the policy
asks about is put to the approvals page of 'tollgate serve' with --server
URL (the call waits for the person's answer until the request expires, 10
minutes, sending the client progress notifications, and the page's link
when the client takes URL-mode elicitation); else to the person at the
client through elicitation (stdio, when the client supports it); otherwise
it is refused with an error result that says why.

Stdio servers start in the sandbox of 'tollgate run' (their "sandbox" in
mcp.json, default workspace on --workdir). --addr serves loopback addresses
only, unless --tokens names a tokens file (as for 'tollgate serve'): then
every request needs a bearer token of it with the agent role and no role
that decides approvals (as a Claude Code hook's), and its name and tenant
ask for the calls. No token answers an ask: on HTTP without --server a
call that needs a person is refused.
Status lines and warnings go to stderr; on stdio, stdout is the MCP
connection. With OTEL_EXPORTER_OTLP_ENDPOINT set, every call is exported as
an execute_tool span, as for 'tollgate run'.

Exit status: 0 when the client closed the connection (or on SIGINT or
SIGTERM), 1 error, 2 usage.`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			f.builtins = c.Flags().Changed("workdir")
			return runGateway(c.Context(), env, &f)
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&f.mcp, "mcp", nil, "MCP servers file (mcp.json) whose servers the gateway serves; repeatable; required unless --workdir")
	fs.StringVar(&f.policy, "policy", "", "authorization policy file (YAML; see 'tollgate policy check')")
	fs.StringArrayVar(&f.hooks, "hooks", nil, "declarative tool call hooks file (YAML, see 'tollgate hooks check'); repeatable")
	fs.StringVar(&f.hooksSandbox, "hooks-sandbox", string(sandbox.Workspace), "confine the --hooks files' commands as 'tollgate run' does: workspace (write only in --workdir), read-only or off (they then run with your rights)")
	fs.StringArrayVar(&f.claude, "claude-settings", nil, "Claude Code settings file whose hooks (PreToolUse, PermissionRequest, PostToolUse: a result's replacement reaches the client) and permission rules govern the calls, as in 'tollgate run'; repeatable")
	fs.StringVar(&f.records, "records", "", "append one JSON line per tool call record to this file")
	fs.StringVarP(&f.workdir, "workdir", "C", ".", "workspace: relative paths in policies, the sandbox of stdio servers; given, the builtin tools are served on it")
	fs.StringVar(&f.pins, "pins", "", "keep the digest of every tool's description and schema here, across starts: a tool whose definition changes is refused until its entry is removed (default: from this start only)")
	fs.StringVar(&f.tokens, "tokens", "", "with --addr: bearer tokens by SHA-256, as for 'tollgate serve' (see 'tollgate serve token'); every request needs one, and any address may be served")
	fs.StringVar(&f.server, "server", "", "ask a person on the approvals page of 'tollgate serve' at this URL (with a gateway: section) about the calls that need one; an unreachable server refuses them")
	fs.StringVar(&f.tokenFile, "token-file", "", "with --server, the file holding the server's bearer token, an agent-role token ('tollgate serve token --role agent'); default $"+envToken)
	fs.StringVar(&f.addr, "addr", "", "serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (loopback only, unless --tokens)")
	return cmd
}

// runGateway serves until the client goes away or a signal comes.
func runGateway(ctx context.Context, env *cliEnv, f *gatewayFlags) error {
	if len(f.mcp) == 0 && !f.builtins {
		return usageErr("gateway: --mcp FILE or --workdir DIR is required: the MCP servers to serve, or a workspace for the builtin tools")
	}
	var tokens *serveconfig.Tokens
	if f.tokens != "" {
		if f.addr == "" {
			return usageErr("gateway: --tokens is for --addr (HTTP); a stdio client is the local user")
		}
		t, err := serveconfig.LoadTokens(f.tokens)
		if err != nil {
			return usageErr("gateway: --tokens %s: %w", f.tokens, err)
		}
		if t.Len() == 0 {
			return usageErr("gateway: --tokens %s holds no token", f.tokens)
		}
		tokens = t
	}
	if f.addr != "" && tokens == nil {
		if err := loopbackOnly(f.addr); err != nil {
			return usageErr("gateway: --addr %s: %w", f.addr, err)
		}
	}
	if f.tokenFile != "" && f.server == "" {
		return usageErr("gateway: --token-file is for --server")
	}
	if f.server != "" && tokens != nil {
		if err := oneTenantForServer(f.tokens, tokens); err != nil {
			return usageErr("gateway: %w", err)
		}
	}
	var inbox *remoteInbox
	if f.server != "" {
		token, err := claudeToken(env, f.tokenFile)
		if err != nil {
			return usageErr("gateway: --server: %w", err)
		}
		if inbox, err = newRemoteInbox(f.server, token, slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))); err != nil {
			return usageErr("gateway: %w", err)
		}
		defer inbox.Close()
		warning, err := inbox.check(ctx)
		if err != nil {
			return configErr("gateway: %w", err)
		}
		if warning != "" {
			fmt.Fprintln(env.stderr, "tollgate: gateway: warning: "+warning)
		}
	}
	workdir, err := filepath.Abs(f.workdir)
	if err != nil {
		return usageErr("gateway: --workdir %s: %w", f.workdir, err)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if os.Getenv("GOGC") == "" {
		// The MCP SDK's JSON decoding allocates a 32 KiB buffer for every
		// value it decodes, several per message: the gateway's live heap
		// stays small while it allocates about 0.5 MB per call, and the
		// collector, at the default target, took most of a call's time
		// (docs/gateway.md, "Cost"). GOGC, when set, decides.
		defer debug.SetGCPercent(debug.SetGCPercent(gatewayGCPercent))
	}
	logger := slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	notice := func(line string) { fmt.Fprintln(env.stderr, "tollgate: "+oneLine(line, 2000)) }

	// The default state directory's store, key and MCP logins are hidden
	// from bash and the hooks' commands, as from the servers
	// (toolsSandbox), and the directory is theirs and the file tools' to
	// leave alone, as in a run. A workspace that holds it (the gateway
	// started in ~) is refused: the sandbox hides those files in the trees
	// a command may read, not in the workspace it writes, so bash, a hook
	// command or a stdio server there could read the decision key.
	if dir, err := defaultStateDir(env); err == nil {
		if abs, err := env.abs(dir); err == nil && insideWorkspace(abs, workdir) {
			return usageErr("gateway: state directory %s is inside the workspace %s, where the builtin tools, hook commands and stdio servers could read its MCP logins and decision key; choose another with $%s, or another --workdir", abs, workdir, envStateDir)
		}
		f.hide = stateHidden(dir, "")
		f.protect = append(f.protect, dir)
	}
	gopts, closeGate, err := gatewayGate(ctx, f, workdir, notice, logger)
	if err != nil {
		return err
	}
	defer closeGate()
	if err := gatewayClaude(ctx, f, workdir, &gopts, notice, logger); err != nil {
		return err
	}
	tracer, closeTelemetry, err := gatewayTelemetry(ctx, logger)
	if err != nil {
		return err
	}
	defer closeTelemetry()
	confine, release, err := toolsSandbox(env, workdir, nil, nil, f.mcp)
	if err != nil {
		return err
	}
	defer release() // after the servers stop (set.Close)
	var builtins []tool.Tool
	if f.builtins {
		var closeBuiltins func() error
		if builtins, closeBuiltins, err = gatewayBuiltins(ctx, f, workdir, gopts, logger); err != nil {
			return err
		}
		defer closeBuiltins()
		names := make([]string, len(builtins))
		for i, t := range builtins {
			names[i] = t.Spec().Name
		}
		notice(fmt.Sprintf("builtin tools on %s: %s", workdir, strings.Join(names, ", ")))
	}
	relay := &mcpgateway.Relay{}
	var set *mcptool.Set
	if len(f.mcp) > 0 {
		cfg, err := runbuild.LoadMCP(f.mcp, notice)
		if err != nil {
			return usageErr("gateway: --mcp: %w", unwrapField(err))
		}
		set, err = mcptool.Open(ctx, cfg, &mcptool.Options{Logger: logger, LookupEnv: env.lookupEnv, Sandbox: confine, Forward: relay.Forward()})
		if err != nil {
			return withCode(exitError, fmt.Errorf("gateway: mcp: %w", err))
		}
		defer set.Close()
		for _, st := range set.Servers() {
			notice("mcp: " + runbuild.MCPStatusLine(st))
		}
	}
	var ib mcpgateway.Inbox
	if inbox != nil {
		ib = inbox
	}
	// The run of the stdio client's session, on the server's page.
	runID := ids.New("gw_")
	gw, err := mcpgateway.New(ctx, set, &mcpgateway.Options{
		Tools:     builtins,
		Tracer:    tracer,
		Inbox:     ib,
		RunID:     runID,
		Gate:      gopts,
		Workspace: workdir,
		// The person at a local client answers through elicitation; an
		// HTTP client's credentials may be an agent's, which never answers.
		Elicit:   f.addr == "",
		Answerer: currentUser(),
		Relay:    relay,
		PinsFile: f.pins,
		Logger:   logger,
	})
	if err != nil {
		return withCode(exitError, fmt.Errorf("gateway: %w", err))
	}
	if f.addr == "" {
		err := gw.Server().Run(ctx, stdioTransport(env))
		if inbox != nil {
			// The stdio client's one session ends with the connection,
			// whatever its protocol (one of 2026-07-28 never initializes).
			inbox.End(context.WithoutCancel(ctx), mcpgateway.Session{ID: runID, Workspace: workdir})
		}
		if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) && !errors.Is(err, mcp.ErrConnectionClosed) {
			return withCode(exitError, fmt.Errorf("gateway: %w", err))
		}
		return nil
	}
	return serveGateway(ctx, env, gw, f.addr, tokens)
}

// stdioTransport is the client's connection over the process's standard
// input and output: a [stdioconn.Conn] when standard input is a pipe or a
// socket (each message decoded once, in the SDK's reading goroutine), the
// SDK's own otherwise (a terminal, a file, or one socket that is standard
// output or error too: its mode is theirs as well, and a blocking write to
// it would fail with EAGAIN once it is non-blocking).
func stdioTransport(env *cliEnv) mcp.Transport {
	if f, ok := env.stdin.(*os.File); ok && !sharedWith(f, env.stdout, env.stderr) {
		if in, closer, ok := stdioconn.Pollable(f); ok {
			return stdioconn.Transport{Conn: stdioconn.New(in, env.stdout, closer, 0)}
		}
	}
	return &mcp.IOTransport{Reader: io.NopCloser(env.stdin), Writer: nopWriteCloser{env.stdout}}
}

// sharedWith reports whether f is the same file as one of ws.
func sharedWith(f *os.File, ws ...io.Writer) bool {
	fi, err := f.Stat()
	if err != nil {
		return true
	}
	for _, w := range ws {
		if g, ok := w.(*os.File); ok {
			if gi, err := g.Stat(); err == nil && os.SameFile(fi, gi) {
				return true
			}
		}
	}
	return false
}

// gatewayGate is the gate's configuration from the flags: the policy with
// the workspace's path spellings, the hooks files' listener (their
// commands confined as a run's, gatewayHooks), the records file. The
// function returned closes what was opened.
func gatewayGate(ctx context.Context, f *gatewayFlags, workdir string, notice func(string), logger *slog.Logger) (gate.Options, func(), error) {
	var o gate.Options
	var closers []func() error
	closeAll := func() {
		for _, c := range closers {
			_ = c()
		}
	}
	if f.policy != "" {
		pol, err := runbuild.LoadPolicy(f.policy, "", notice)
		if err == nil {
			pol, err = runbuild.WorkspacePolicy(pol, workdir)
		}
		if err != nil {
			return o, closeAll, usageErr("gateway: --policy %s: %w", f.policy, unwrapField(err))
		}
		o.Authorizers = []approval.Authorizer{pol}
	}
	if len(f.hooks) > 0 {
		reg, release, err := gatewayHooks(ctx, f, workdir, notice, logger)
		if err != nil {
			return o, closeAll, err
		}
		closers = append(closers, release)
		o.Listener = func() hooks.ToolCallListener { return reg.Listener() }
	}
	if f.records != "" {
		w, err := records.OpenFile(f.records, &records.Options{Logger: logger})
		if err != nil {
			return o, closeAll, usageErr("gateway: --records %s: %w", f.records, err)
		}
		closers = append(closers, w.Close)
		o.OnRecord = func(ctx context.Context, rec gate.Record) { w.Record(ctx, rec) }
	}
	return o, closeAll, nil
}

// gatewayHooks loads the --hooks files as 'tollgate run' runs them
// (runbuild.HookFiles): each command in the hooks sandbox of
// --hooks-sandbox (workspace: it writes only in workdir), never writing
// the gateway's own files nor reading the state directory's, with the
// environment scrubbed to the allowlist. Where no sandbox can be made,
// the gateway does not start unless --hooks-sandbox is off, as a run.
func gatewayHooks(ctx context.Context, f *gatewayFlags, workdir string, notice func(string), logger *slog.Logger) (*declarative.Registry, func() error, error) {
	c := &hookFilesConfig{files: f.hooks, workdir: workdir, mode: f.hooksSandbox, setting: "--hooks-sandbox", workdirSetting: "--workdir",
		protect: f.governing(), hide: f.hide, notice: notice, logger: logger}
	if f.inServe {
		c.setting, c.workdirSetting = "gateway.hooksSandbox", "gateway.workdir"
	}
	reg, release, err := confinedHooks(ctx, c)
	if err != nil {
		return nil, nil, commandError("gateway", err)
	}
	return reg, release, nil
}

// governing are the files that govern the gateway (policy, records, pins,
// tokens, hooks, MCP and Claude Code settings files, and f.protect),
// which neither the builtin tools nor the hooks' commands may write.
func (f *gatewayFlags) governing() []string {
	files := append(append(append(append([]string{f.policy, f.records, f.pins, f.tokens}, f.hooks...), f.mcp...), f.claude...), f.protect...)
	return slices.DeleteFunc(files, func(p string) bool { return p == "" })
}

// unwrapField is the error inside a field error of internal/runbuild.
func unwrapField(err error) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	return err
}

// serveGateway serves gw over streamable HTTP at addr's /mcp until ctx
// ends (mcpgateway.Gateway.Handler: tokens when given, Host and Origin
// checks, bounded bodies, idle sessions closed).
func serveGateway(ctx context.Context, env *cliEnv, gw *mcpgateway.Gateway, addr string, tokens *serveconfig.Tokens) error {
	var authn func(string) (mcpgateway.Client, error)
	if tokens != nil {
		authn = func(token string) (mcpgateway.Client, error) {
			p, ok := tokens.Lookup(token)
			if !ok {
				return mcpgateway.Client{}, mcpgateway.ErrUnknownToken
			}
			if err := server.MayCallTools(p); err != nil {
				return mcpgateway.Client{}, err
			}
			return mcpgateway.Client{Principal: tool.Principal{Kind: tool.PrincipalPerson, Name: p.Name}, Tenant: p.Tenant}, nil
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", gw.Handler(&mcpgateway.HTTPOptions{Authenticate: authn}))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return withCode(exitError, fmt.Errorf("gateway: %w", err))
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10}
	fmt.Fprintf(env.stderr, "tollgate: gateway: serving MCP at http://%s/mcp\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		return nil
	case err := <-errc:
		return withCode(exitError, fmt.Errorf("gateway: %w", err))
	}
}

// loopbackOnly refuses an address whose host is not a loopback address or
// "localhost": without tokens, anyone who reaches the port could call the
// tools.
func loopbackOnly(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return errors.New("without --tokens the gateway serves loopback addresses only (127.0.0.1, [::1], localhost): anyone who reached the port could call the tools")
}

// nopWriteCloser is a writer whose Close does nothing: stdout stays the
// process's.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// gatewayBuiltins returns the builtin tools on workdir as a run wires
// them (runbuild.Builtins): bash in the workspace sandbox with the policy's
// denied programs refused at exec, the file tools judged by the policy
// again and refusing the gateway's own files. question is left out: its
// questions would have no one to answer them.
func gatewayBuiltins(ctx context.Context, f *gatewayFlags, workdir string, gopts gate.Options, logger *slog.Logger) ([]tool.Tool, func() error, error) {
	protect := f.governing()
	tk, closeTools, err := runbuild.Builtins(ctx, &runbuild.BuiltinOptions{Workdir: workdir, Authorizers: gopts.Authorizers,
		Protect: protect, Hide: f.hide, Disable: []string{"question"}, Logger: logger})
	if err != nil {
		var fe *runs.FieldError
		if errors.As(err, &fe) && fe.Field == "workdir" {
			return nil, nil, usageErr("gateway: --workdir %s: %w", f.workdir, fe.Err)
		}
		return nil, nil, withCode(exitError, fmt.Errorf("gateway: builtin tools: %w", err))
	}
	return tk.Tools(), closeTools, nil
}

// gatewayClaude adds the hooks and permission rules of the --claude-settings
// files to o, as 'tollgate run' runs them (runbuild.ClaudeHooks: their
// commands, like the --hooks files', never write the gateway's own files
// nor read the state directory's), and the files to those the builtin
// tools may not write.
func gatewayClaude(ctx context.Context, f *gatewayFlags, workdir string, o *gate.Options, notice func(string), logger *slog.Logger) error {
	if len(f.claude) == 0 {
		return nil
	}
	h, auths, protected, err := runbuild.ClaudeHooks(ctx, &runbuild.HookFilesOptions{Files: f.claude, Workdir: workdir,
		Protect: f.governing(), Hide: f.hide, Notice: notice, Logger: logger})
	if err != nil {
		var fe *runs.FieldError
		if errors.As(err, &fe) {
			return usageErr("gateway: --claude-settings: %w", fe.Err)
		}
		return withCode(exitError, fmt.Errorf("gateway: --claude-settings: %w", err))
	}
	o.Hooks = h
	o.Authorizers = append(o.Authorizers, auths...)
	f.protect = append(f.protect, protected...)
	return nil
}

// gatewayTelemetry is the tracer of the gateway's calls when the standard
// OTEL_* variables ask for an OTLP export (as for 'tollgate run'), else
// nil; the function returned flushes and stops the exporters.
func gatewayTelemetry(ctx context.Context, logger *slog.Logger) (*telemetry.Tracer, func(), error) {
	opts, closers, err := otlpTelemetry(ctx, logger, "gateway")
	if err != nil || opts == nil {
		return nil, func() {}, err
	}
	return telemetry.NewTracer(opts), func() {
		for _, c := range closers {
			_ = c()
		}
	}, nil
}
