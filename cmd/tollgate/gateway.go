package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/hooks/declarative"
	"github.com/tollgate-dev/tollgate/mcpgateway"
	"github.com/tollgate-dev/tollgate/mcptool"
	"github.com/tollgate-dev/tollgate/records"
	"github.com/tollgate-dev/tollgate/runs/build"
	"github.com/tollgate-dev/tollgate/server"
	"github.com/tollgate-dev/tollgate/tool"
)

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
}

func newGatewayCmd(env *cliEnv) *cobra.Command {
	var f gatewayFlags
	cmd := &cobra.Command{
		Use:   "gateway --mcp FILE [flags]",
		Short: "Serve MCP servers to any MCP client, governing every tool call",
		Long: `Serve the MCP servers of an mcp.json to any MCP client (Claude Desktop,
Claude Code, Cursor, an agent framework), over stdio (the default) or
streamable HTTP at /mcp (--addr), and decide every tools/call as a
tollgate run decides its own: BeforeTool hooks, the policy, autonomy from
the tools' hints (an untrusted server's are the strictest), the hooks
files' PRE_TOOL_USE and POST_TOOL_USE, AfterTool hooks, the records.

The client sees an upstream's own tool names when the file has one server,
and SERVER__TOOL when it has several; policies, hooks and records see
mcp__SERVER__TOOL, as in 'tollgate run'. tools/list leaves out the tools the
policy denies outright. A tool whose description or input schema changes
after the gateway first saw it (a "rug pull") is refused; --pins keeps
what was first seen across starts. A call the policy asks about is put to
the person at the client through elicitation (stdio, when the client
supports it), and otherwise refused with an error result that says why.

Stdio servers start in the sandbox of 'tollgate run' (their "sandbox" in
mcp.json, default workspace on --workdir). --addr serves loopback addresses
only, unless --tokens names a tokens file (as for 'tollgate serve'): then
every request needs a bearer token of it, and its name asks for the calls.
No token answers an ask: on HTTP a call that needs a person is refused.
Status lines and warnings go to stderr; on stdio, stdout is the MCP
connection.

Exit status: 0 when the client closed the connection (or on SIGINT or
SIGTERM), 1 error, 2 usage.`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error { return runGateway(c.Context(), env, &f) },
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&f.mcp, "mcp", nil, "MCP servers file (mcp.json) whose servers the gateway serves; repeatable; required")
	fs.StringVar(&f.policy, "policy", "", "authorization policy file (YAML; see 'tollgate policy check')")
	fs.StringArrayVar(&f.hooks, "hooks", nil, "declarative tool call hooks file (YAML, see 'tollgate hooks check'); repeatable")
	fs.StringVar(&f.records, "records", "", "append one JSON line per tool call record to this file")
	fs.StringVarP(&f.workdir, "workdir", "C", ".", "workspace: relative paths in policies, and the sandbox of stdio servers")
	fs.StringVar(&f.pins, "pins", "", "keep the digest of every tool's description and schema here, across starts: a tool whose definition changes is refused until its entry is removed (default: from this start only)")
	fs.StringVar(&f.tokens, "tokens", "", "with --addr: bearer tokens by SHA-256, as for 'tollgate serve' (see 'tollgate serve token'); every request needs one, and any address may be served")
	fs.StringVar(&f.addr, "addr", "", "serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (loopback only, unless --tokens)")
	return cmd
}

// runGateway serves until the client goes away or a signal comes.
func runGateway(ctx context.Context, env *cliEnv, f *gatewayFlags) error {
	if len(f.mcp) == 0 {
		return usageErr("gateway: --mcp FILE is required")
	}
	var tokens *server.Tokens
	if f.tokens != "" {
		if f.addr == "" {
			return usageErr("gateway: --tokens is for --addr (HTTP); a stdio client is the local user")
		}
		t, err := server.LoadTokens(f.tokens)
		if err != nil {
			return usageErr("gateway: --tokens %s: %v", f.tokens, err)
		}
		if t.Len() == 0 {
			return usageErr("gateway: --tokens %s holds no token", f.tokens)
		}
		tokens = t
	}
	if f.addr != "" && tokens == nil {
		if err := loopbackOnly(f.addr); err != nil {
			return usageErr("gateway: --addr %s: %v", f.addr, err)
		}
	}
	workdir, err := filepath.Abs(f.workdir)
	if err != nil {
		return usageErr("gateway: --workdir %s: %v", f.workdir, err)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	notice := func(line string) { fmt.Fprintln(env.stderr, "tollgate: "+oneLine(line, 2000)) }

	gopts, closeGate, err := gatewayGate(f, workdir, notice, logger)
	if err != nil {
		return err
	}
	defer closeGate()
	confine, release, err := toolsSandbox(env, workdir, nil, nil, f.mcp)
	if err != nil {
		return err
	}
	defer release() // after the servers stop (set.Close)
	cfg, err := build.LoadMCP(f.mcp, notice)
	if err != nil {
		return usageErr("gateway: --mcp: %v", unwrapField(err))
	}
	relay := mcpgateway.NewRelay()
	set, err := mcptool.Open(ctx, cfg, &mcptool.Options{Logger: logger, LookupEnv: env.lookupEnv, Sandbox: confine, Forward: relay.Forward()})
	if err != nil {
		return withCode(exitError, fmt.Errorf("gateway: mcp: %w", err))
	}
	defer set.Close()
	for _, st := range set.Servers() {
		notice("mcp: " + build.MCPStatusLine(st))
	}
	gw, err := mcpgateway.New(ctx, set, &mcpgateway.Options{
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
		err := gw.Server().Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(env.stdin), Writer: nopWriteCloser{env.stdout}})
		if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) && !errors.Is(err, mcp.ErrConnectionClosed) {
			return withCode(exitError, fmt.Errorf("gateway: %w", err))
		}
		return nil
	}
	return serveGateway(ctx, env, gw, f.addr, tokens)
}

// gatewayGate is the gate's configuration from the flags: the policy with
// the workspace's path spellings, the hooks files' listener, the records
// file. The function returned closes what was opened.
func gatewayGate(f *gatewayFlags, workdir string, notice func(string), logger *slog.Logger) (gate.Options, func(), error) {
	var o gate.Options
	var closers []func() error
	closeAll := func() {
		for _, c := range closers {
			_ = c()
		}
	}
	if f.policy != "" {
		pol, err := build.LoadPolicy(f.policy, "", notice)
		if err == nil {
			pol, err = build.WorkspacePolicy(pol, workdir)
		}
		if err != nil {
			return o, closeAll, usageErr("gateway: --policy %s: %v", f.policy, unwrapField(err))
		}
		o.Authorizers = []approval.Authorizer{pol}
	}
	if len(f.hooks) > 0 {
		reg, err := build.LoadHookFiles(f.hooks, notice, &declarative.Options{Logger: logger, Dir: workdir})
		if err != nil {
			return o, closeAll, usageErr("gateway: --hooks: %v", err)
		}
		o.Listener = func() hooks.ToolCallListener { return reg }
	}
	if f.records != "" {
		w, err := records.OpenFile(f.records, &records.Options{Logger: logger})
		if err != nil {
			return o, closeAll, usageErr("gateway: --records %s: %v", f.records, err)
		}
		closers = append(closers, w.Close)
		o.OnRecord = func(ctx context.Context, rec gate.Record) { w.Record(ctx, rec) }
	}
	return o, closeAll, nil
}

// unwrapField is the error inside a field error of runs/build.
func unwrapField(err error) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	return err
}

// serveGateway serves gw over streamable HTTP at addr's /mcp until ctx
// ends (mcpgateway.Gateway.Handler: tokens when given, Host and Origin
// checks, bounded bodies, idle sessions closed).
func serveGateway(ctx context.Context, env *cliEnv, gw *mcpgateway.Gateway, addr string, tokens *server.Tokens) error {
	var verify func(string) (tool.Principal, bool)
	if tokens != nil {
		verify = func(token string) (tool.Principal, bool) {
			p, ok := tokens.Lookup(token)
			return p.Decider(), ok
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", gw.Handler(&mcpgateway.HTTPOptions{Verify: verify}))
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
