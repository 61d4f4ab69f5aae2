package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/internal/proc"
	"github.com/tollgate-dev/tollgate/tool"
)

// Options configures [Open]. A nil *Options means all defaults.
type Options struct {
	// Logger receives what happens to the servers (started, failed, killed).
	// It never receives header or environment values. Nil discards.
	Logger *slog.Logger
	// LookupEnv resolves ${NAME} in header, env, args and cwd values; nil
	// means os.LookupEnv.
	LookupEnv func(name string) (string, bool)
	// Client is the implementation name and version sent in initialize; nil
	// means {Name: "tollgate", Version: "dev"}.
	Client *mcp.Implementation
	// HTTPClient carries the requests to streamable HTTP servers; nil means a
	// client of its own with default settings. Configured headers are added to
	// every request on top of it.
	HTTPClient *http.Client
	// Sandbox, if set, is called with the command of every stdio server
	// before it starts, with the server's name and configuration (its
	// Sandbox, SandboxRead and SandboxConnect), and may rewrite the command
	// to run confined (the tollgate command wires package sandbox here). An
	// error fails that server's start. Nil starts servers unconfined.
	Sandbox func(cmd *exec.Cmd, server string, sc *ServerConfig) error
	// ShutdownGrace is how long closing a stdio server waits at each step
	// (after closing its stdin, after SIGTERM, after SIGKILL); zero means
	// 2 s. Closing takes at most about three of it.
	ShutdownGrace time.Duration
	// MaxMessageBytes bounds one message from a server; zero means 4 MiB
	// (under the SDK's own limit of 16 MiB). A tool result over it is cut
	// to its first 256 KiB of text, with a note, and marked with the
	// metadata "mcpCutFrom" (see the package documentation); any
	// other answer over it becomes an error for its request. Either way the
	// connection and the server stay, where a message over the SDK's own
	// limit would close them. From a streamable-HTTP server it bounds a
	// JSON response body and each event of an SSE stream while they are
	// read: more fails the request ([ErrHTTPMessageTooLarge]).
	MaxMessageBytes int
	// Elicit, if set, is asked when a server sends elicitation/create (MCP
	// specification 2025-11-25, "Client features: Elicitation"): the
	// request is a [tool.Request] of kind [tool.KindInput] (form mode, the
	// schema in its [ElicitData]) or [tool.KindAuthorization] (URL mode),
	// and a person answers it. An answer with OK accepts (its Data is the
	// form's content, a JSON object of at most 64 KiB; empty takes the
	// schema's defaults), OK false declines, and an error (no answer, ctx
	// ended) cancels. Nil, or an Elicit that returns [ErrAskLater], means
	// nobody can answer now: the call during which the server asked halts
	// on a pending request (see [Tool.Call]), answered later. Elicit may be
	// called from several goroutines at once.
	Elicit tool.WaitFunc
	// ElicitPolicy, if set, is asked first whether the server (by its name
	// and its trust) may ask the person for input at all (a policy's
	// elicitation rules): when ok is false the server is told decline, by
	// (a rule, "rule:<ID>") and reason are logged and shown on the call's
	// notice and in its result's metadata ("mcpElicitations"), and nobody
	// is asked. Nil allows every server.
	ElicitPolicy func(server string, trusted bool) (ok bool, by, reason string)
	// OAuth, if set, is called once per streamable-HTTP server (its name
	// and configuration) for the OAuth handler that authorizes its requests
	// (MCP specification 2025-11-25, "Authorization"): the handler's token
	// goes in every request to the server's URL, and a 401 or 403 from it
	// calls the handler's Authorize before the request is tried once more.
	// Nil, or a nil handler, means no OAuth: a 401 fails the server. See
	// [NewOAuthHandler] for the handler that stored logins give.
	OAuth func(server string, sc *ServerConfig) (auth.OAuthHandler, error)
	// Forward, if set, receives what a server asks of its client beyond
	// tools: sampling, elicitation and log messages, for a host that
	// hands them on to MCP clients of its own (an MCP gateway). The
	// client then declares sampling and elicitation in initialize. Nil:
	// it declares neither, and drops log messages.
	Forward *Forward
}

// Forward receives what a server asks of its client beyond tools (see
// [Options].Forward), with the server's name. A nil function declines:
// the server gets an error for a request, and a notification is dropped.
type Forward struct {
	// CreateMessage answers sampling/createMessage (MCP specification
	// 2025-11-25, "Client: Sampling").
	CreateMessage func(ctx context.Context, server string, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)
	// Elicit answers elicitation/create ("Client: Elicitation").
	Elicit func(ctx context.Context, server string, req *mcp.ElicitRequest) (*mcp.ElicitResult, error)
	// Log receives notifications/message ("Utilities: Logging").
	Log func(ctx context.Context, server string, req *mcp.LoggingMessageRequest)
	// ResourceUpdated receives notifications/resources/updated for a
	// resource the host subscribed to ("Server: Resources").
	ResourceUpdated func(ctx context.Context, server string, req *mcp.ResourceUpdatedNotificationRequest)
}

// State is where a server stands after [Open].
type State string

// The states of a server.
const (
	// StateReady: connected, initialized, tools listed; its tools are in the set.
	StateReady State = "ready"
	// StateFailed: start, initialize or listing failed, or its tools collide;
	// [ServerStatus].Err says why. None of its tools is in the set.
	StateFailed State = "failed"
	// StateDisabled: "disabled": true in the configuration; not started.
	StateDisabled State = "disabled"
)

// ServerStatus says how one configured server fared in [Open].
type ServerStatus struct {
	// Name is the server's name in the configuration.
	Name string
	// State is ready, failed or disabled.
	State State
	// Err says why the server failed (nil otherwise). It names the phase
	// ("start", "initialize", "list tools") and, for a stdio server, ends with
	// the last lines the server wrote to stderr.
	Err error
	// Transport is "stdio", "http" or "custom" (a transport set in code).
	Transport string
	// Trusted repeats the configuration's trust (see [HintsFor]).
	Trusted bool
	// Tools is the number of tools the server contributes.
	Tools int
	// ServerInfo is the name and version the server gave in initialize, or nil.
	ServerInfo *mcp.Implementation
	// Stderr is the last bytes (at most 4 KiB) a stdio server wrote to stderr
	// up to the end of Open.
	Stderr string
	// Skipped lists the tools of the server that cannot be used (see
	// [SkippedTool]), in the order the server listed them. Each is left out
	// alone: the server and its other tools stay. At most 100 are kept;
	// SkippedMore counts the rest.
	Skipped     []SkippedTool
	SkippedMore int
	// Renewals counts the new sessions started since Open because the
	// previous one was gone: a streamable-HTTP server that answered 404 for
	// its session (it restarted), or a stdio server that exited.
	Renewals int
}

// maxSkipped is how many skipped tools a [ServerStatus] lists (and the log
// names) at most, so that a server listing many broken tools cannot flood
// either.
const maxSkipped = 100

// SkippedTool is a tool a server listed that is not offered, and why: an input
// schema that cannot be used for validation (a $ref to a definition the
// schema lacks, a type other than object), or a name that is empty, not
// UTF-8, or holds control characters.
type SkippedTool struct {
	// Tool is the tool's name on the server, as it listed it (it may hold
	// anything; quote it with %q before showing it).
	Tool string
	// Reason says what is wrong with the tool, in one sentence.
	Reason string
}

// CollisionError reports two tools that end up with the same name (see
// [ToolName]); neither shadows the other. Rename a server in the configuration
// (or disable one) to resolve it.
type CollisionError struct {
	// Name is the name both tools map to.
	Name string
	// First and Second are the two tools, each as server and name on the server.
	First, Second ToolRef
}

// ToolRef names a tool on a server.
type ToolRef struct {
	// Server is the server's name in the configuration.
	Server string
	// Tool is the tool's name on the server, as it listed it.
	Tool string
}

// Error names both tools.
func (e *CollisionError) Error() string {
	return fmt.Sprintf("tools %q of server %q and %q of server %q both become %q",
		e.First.Tool, e.First.Server, e.Second.Tool, e.Second.Server, e.Name)
}

// Set is the tools of a set of MCP servers, and the connections to them.
// Its methods are safe for concurrent use.
type Set struct {
	mu       sync.RWMutex // guards statuses and each conn's tools
	statuses []ServerStatus
	conns    []*conn
	grace    time.Duration

	closeOnce sync.Once
	closeErr  error
}

// Open connects every enabled server of cfg, concurrently, and lists its tools
// (all pages). Each phase is bounded by the server's Timeout: starting and
// initializing (MCP specification 2025-06-18, "Lifecycle: Initialization"),
// then listing. A server that fails any phase is closed and isolated: its
// [ServerStatus] says why and the other servers load.
//
// Tools of one server that end up with the same name make that server fail
// with a *[CollisionError]. Tools of two servers that end up with the same name
// make Open fail with a *[CollisionError] naming both (after closing every
// server), since which one should win is not Open's to guess.
//
// Open returns an error, and leaves nothing running, when cfg is invalid (see
// [Config]; a *configfile.Error of one [configfile.Problem]), on such a collision, or when ctx ends before all servers
// are up. The servers are not bound to ctx afterwards; [Set.Close] stops them.
func Open(ctx context.Context, cfg *Config, opts *Options) (*Set, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	if o.Client == nil {
		o.Client = &mcp.Implementation{Name: "tollgate", Version: "dev"}
	}
	if o.ShutdownGrace <= 0 {
		o.ShutdownGrace = defaultShutdownGrace
	}
	if o.MaxMessageBytes <= 0 || o.MaxMessageBytes > mcp.DefaultMaxLineLength/2 {
		o.MaxMessageBytes = min(defaultMaxMessageBytes, mcp.DefaultMaxLineLength/2)
	}
	names := make([]string, 0, len(cfg.Servers))
	for name := range cfg.Servers {
		names = append(names, name)
	}
	sort.Strings(names)

	type outcome struct {
		status ServerStatus
		conn   *conn
		tools  []*Tool
	}
	outs := make([]outcome, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		sc := cfg.Servers[name]
		outs[i].status = ServerStatus{Name: name, Transport: sc.transportKind(), Trusted: sc.Trusted}
		if sc.Disabled {
			outs[i].status.State = StateDisabled
			continue
		}
		wg.Go(func() {
			st := &outs[i].status
			c, tools, err := connect(ctx, name, sc, &o, st)
			if err != nil {
				st.State, st.Err = StateFailed, err
				o.Logger.Warn("mcp server failed", "server", name, "error", err)
				return
			}
			st.State, st.Tools = StateReady, len(tools)
			outs[i].conn, outs[i].tools = c, tools
			o.Logger.Info("mcp server ready", "server", name, "tools", len(tools))
		})
	}
	wg.Wait()

	s := &Set{grace: o.ShutdownGrace}
	byName := map[string]*Tool{}
	var collision error
	for _, out := range outs {
		s.statuses = append(s.statuses, out.status)
		if out.conn == nil {
			continue
		}
		s.conns = append(s.conns, out.conn)
		for _, t := range out.tools {
			if prev, ok := byName[t.spec.Name]; ok && collision == nil {
				collision = &CollisionError{Name: t.spec.Name,
					First: ToolRef{prev.server, prev.remote}, Second: ToolRef{t.server, t.remote}}
			}
			byName[t.spec.Name] = t
		}
	}
	if collision != nil {
		_ = s.Close()
		return nil, collision
	}
	if err := ctx.Err(); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("mcptool.Open: %w", err)
	}
	return s, nil
}

// connect starts, initializes and lists one server. On error nothing of it is
// left running.
func connect(ctx context.Context, name string, sc *ServerConfig, o *Options, st *ServerStatus) (*conn, []*Tool, error) {
	var stderr *tailBuffer
	withStderr := func(err error) error {
		if stderr == nil {
			return err
		}
		st.Stderr = stderr.String()
		if tail := lastLines(st.Stderr, 5); tail != "" {
			return fmt.Errorf("%w; stderr: %s", err, tail)
		}
		return err
	}
	c := &conn{name: name, sc: sc, o: o}
	if sc.URL != "" && sc.Transport == nil && o.OAuth != nil {
		h, err := o.OAuth(name, sc)
		if err != nil {
			return nil, nil, fmt.Errorf("oauth: %w", err)
		}
		c.oauth = h
	}
	session, err := dial(ctx, c, &stderr)
	if err != nil {
		return nil, nil, withStderr(err)
	}
	c.set(session)
	abort := func() { _ = closeWithin(session, 3*o.ShutdownGrace+time.Second) }
	if res := session.InitializeResult(); res != nil && res.ServerInfo != nil {
		info := *res.ServerInfo
		st.ServerInfo = &info
	}
	fail := func(err error) (*conn, []*Tool, error) {
		_ = closeWithin(session, 3*o.ShutdownGrace+time.Second)
		return nil, nil, withStderr(err)
	}
	l, err := c.listTools(ctx, session, abort, nil)
	if err != nil {
		return fail(err)
	}
	st.Skipped, st.SkippedMore = l.skipped, l.skippedMore
	if stderr != nil {
		st.Stderr = stderr.String()
	}
	c.tools = l.tools
	return c, l.tools, nil
}

// listing is what listing one server's tools found.
type listing struct {
	tools       []*Tool
	skipped     []SkippedTool
	skippedMore int
}

// listTools lists the tools of session (all pages), bounded by the server's
// Timeout (abort releases a listing stuck past it), and makes each a *Tool.
// A tool that cannot be used, or whose name taken(name) reports as another
// server's, is skipped alone. Two tools of the server with one name are a
// *CollisionError.
func (c *conn) listTools(ctx context.Context, session *mcp.ClientSession, abort func(), taken func(string) (ToolRef, bool)) (listing, error) {
	var l listing
	skip := func(name, reason string) {
		if len(l.skipped) == maxSkipped {
			l.skippedMore++
			return
		}
		l.skipped = append(l.skipped, SkippedTool{Tool: name, Reason: reason})
		c.o.Logger.Warn("mcp tool skipped", "server", c.name, "tool", fmt.Sprintf("%q", name), "reason", reason)
	}
	seen := map[string]*Tool{}
	err := bounded(ctx, c.sc.timeout(), abort, func(ctx context.Context) error {
		for t, err := range session.Tools(ctx, nil) {
			if err != nil {
				return err
			}
			mt, err := newTool(c.name, c.sc, t, c)
			if err != nil {
				// One unusable tool is left out alone; its siblings and
				// its server stay.
				skip(t.Name, err.Error())
				continue
			}
			if prev, ok := seen[mt.spec.Name]; ok {
				return &CollisionError{Name: mt.spec.Name, First: ToolRef{c.name, prev.remote}, Second: ToolRef{c.name, mt.remote}}
			}
			if taken != nil {
				if other, ok := taken(mt.spec.Name); ok {
					skip(t.Name, fmt.Sprintf("its name %s is taken by tool %q of server %q", mt.spec.Name, other.Tool, other.Server))
					continue
				}
			}
			seen[mt.spec.Name] = mt
			l.tools = append(l.tools, mt)
		}
		return nil
	})
	if err != nil {
		var ce *CollisionError
		if !errors.As(err, &ce) {
			err = fmt.Errorf("list tools: %w", err)
		}
		return listing{}, err
	}
	return l, nil
}

// dial starts (for stdio) and initializes one server, bounded by its
// Timeout, and returns the session. For stdio it sets *stderr to the buffer
// that collects the server's stderr. On error nothing of it is left running.
func dial(ctx context.Context, c *conn, stderr **tailBuffer) (*mcp.ClientSession, error) {
	sc, o := c.sc, c.o
	transport, err := newTransport(c.name, sc, o, stderr, c.oversized.Store, c.oauth)
	if err != nil {
		return nil, err
	}
	client := mcp.NewClient(o.Client, c.clientOptions())
	tracked := &trackingTransport{Transport: transport}
	abort := func() {
		// A transport may block in a write that ignores ctx (an in-memory
		// pipe nobody reads, say); closing the connection releases it.
		if c := tracked.connection(); c != nil {
			_ = closeWithin(c, 3*o.ShutdownGrace+time.Second)
		}
		if t, ok := transport.(*stdioTransport); ok && t.child != nil {
			_ = t.child.Close()
		}
	}
	var session *mcp.ClientSession
	err = bounded(ctx, sc.timeout(), abort, func(ctx context.Context) error {
		var err error
		session, err = client.Connect(ctx, tracked, c.sessionOptions())
		return err
	})
	if err != nil {
		// The SDK closes the connection when initialize fails; make sure of it
		// for a process (Close is idempotent).
		if t, ok := transport.(*stdioTransport); ok && t.child != nil {
			_ = t.child.Close()
		}
		return nil, fmt.Errorf("start and initialize: %w", err)
	}
	return session, nil
}

// newTransport builds the transport of one server. For stdio it sets *stderr
// to the buffer that collects the server's stderr.
// onOver, when set, is told of an HTTP message over the size limit; oauth,
// when set, authorizes the requests of an HTTP server.
func newTransport(name string, sc *ServerConfig, o *Options, stderr **tailBuffer, onOver func(*error), oauth auth.OAuthHandler) (mcp.Transport, error) {
	switch {
	case sc.Transport != nil:
		return sc.Transport, nil
	case sc.URL != "":
		headers := make(http.Header, len(sc.Headers))
		for k, v := range sc.Headers {
			ev, err := expand(v, o.LookupEnv)
			if err != nil {
				return nil, fmt.Errorf("headers.%s: %w", k, err)
			}
			headers.Set(k, ev)
		}
		base := o.HTTPClient
		if base == nil {
			base = &http.Client{}
		}
		hc := *base
		rt := hc.Transport
		if rt == nil {
			rt = http.DefaultTransport
		}
		hc.Transport = &boundTransport{base: &headerTransport{base: rt, headers: headers}, server: name, max: int64(o.MaxMessageBytes), onOver: onOver}
		if len(headers) > 0 || oauth != nil {
			hc.CheckRedirect = refuseCrossHost(name, base.CheckRedirect)
		}
		return &mcp.StreamableClientTransport{Endpoint: sc.URL, HTTPClient: &hc, OAuthHandler: oauth}, nil
	}
	env := proc.Env(os.Environ(), nil)
	keys := make([]string, 0, len(sc.Env))
	for k := range sc.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ev, err := expand(sc.Env[k], o.LookupEnv)
		if err != nil {
			return nil, fmt.Errorf("env.%s: %w", k, err)
		}
		env = append(env, k+"="+ev)
	}
	args := make([]string, len(sc.Args))
	for i, a := range sc.Args {
		ea, err := expand(a, o.LookupEnv)
		if err != nil {
			return nil, fmt.Errorf("args[%d]: %w", i, err)
		}
		args[i] = ea
	}
	dir, err := expand(sc.Cwd, o.LookupEnv)
	if err != nil {
		return nil, fmt.Errorf("cwd: %w", err)
	}
	if dir != "" && !filepath.IsAbs(dir) && sc.cwdBase != "" {
		dir = filepath.Join(sc.cwdBase, dir)
	}
	cmd := exec.Command(sc.Command, args...)
	if cmd.Err != nil {
		return nil, fmt.Errorf("start: %w", cmd.Err)
	}
	cmd.Env = env
	cmd.Dir = dir
	if o.Sandbox != nil {
		if err := o.Sandbox(cmd, name, sc); err != nil {
			return nil, fmt.Errorf("start: sandbox: %w", err)
		}
	}
	*stderr = &tailBuffer{n: stderrKeep}
	return &stdioTransport{cmd: cmd, grace: o.ShutdownGrace, logger: o.Logger, server: name, stderr: *stderr, maxMsg: o.MaxMessageBytes}, nil
}

// bounded runs fn with a context that ends after d (or with ctx). When that
// context ends first, bounded calls abort, to release an fn stuck in a call
// that ignores its context, and returns once fn has (or, should fn still not
// return, a second after abort) with an error saying the phase timed out.
func bounded(ctx context.Context, d time.Duration, abort func(), fn func(context.Context) error) error {
	phaseCtx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- fn(phaseCtx) }()
	timedOut := func(err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil {
			err = context.DeadlineExceeded
		}
		return fmt.Errorf("no answer within %s (timeout): %w", d, err)
	}
	select {
	case err := <-done:
		if err != nil && phaseCtx.Err() != nil {
			return timedOut(err)
		}
		return err
	case <-phaseCtx.Done():
	}
	abort()
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case err := <-done:
		return timedOut(err)
	case <-t.C:
		return timedOut(nil)
	}
}

// trackingTransport remembers the connection its transport made.
type trackingTransport struct {
	mcp.Transport
	mu   sync.Mutex
	conn mcp.Connection
}

func (t *trackingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	t.mu.Lock()
	t.conn = c
	t.mu.Unlock()
	return c, err
}

func (t *trackingTransport) connection() mcp.Connection {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.conn
}

// headerTransport adds configured headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, vs := range t.headers {
		req.Header[k] = vs
	}
	return t.base.RoundTrip(req)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, " | "))
}

// closeWithin closes c, giving up (with an error) after d.
func closeWithin(c io.Closer, d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- c.Close() }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return fmt.Errorf("not closed within %s", d)
	}
}

// Tools returns the tools of every ready server: servers in name order, each
// server's tools in the order it listed them, as of the last [Set.Refresh].
// Each element is a *[Tool].
func (s *Set) Tools() []tool.Tool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []tool.Tool
	for _, c := range s.conns {
		for _, t := range c.tools {
			out = append(out, t)
		}
	}
	return out
}

// Refresh lists the tools again of every server that said its tool list
// changed (notifications/tools/list_changed; MCP specification 2025-06-18,
// "Tools: List changed notification") or that got a new session since the
// last listing (a restarted server may list other tools), and reports whether
// [Set.Tools] changed. New tools get the same naming, hints and trust rules
// as at [Open]; a tool whose schema or name cannot be used, or whose name is
// another server's tool's, is skipped alone ([ServerStatus].Skipped); a tool
// the server no longer lists is gone. A server whose listing fails keeps its
// tools, and its error is returned, joined with the others'. Each listing is
// bounded by its server's Timeout. Refresh implements
// agent.RefreshingToolset; the agent calls it before every model turn.
func (s *Set) Refresh(ctx context.Context) (bool, error) {
	var changed bool
	var errs []error
	for _, c := range s.conns {
		if !c.listChanged.Swap(false) {
			continue
		}
		session, _, dead := c.current()
		if dead {
			c.listChanged.Store(true) // listed when a call has started a new session
			continue
		}
		abort := func() { _ = closeWithin(session, 3*s.grace+time.Second) }
		taken := func(name string) (ToolRef, bool) {
			s.mu.RLock()
			defer s.mu.RUnlock()
			for _, o := range s.conns {
				if o == c {
					continue
				}
				for _, t := range o.tools {
					if t.spec.Name == name {
						return ToolRef{o.name, t.remote}, true
					}
				}
			}
			return ToolRef{}, false
		}
		l, err := c.listTools(ctx, session, abort, taken)
		if err != nil {
			errs = append(errs, fmt.Errorf("mcp server %q: %w", c.name, err))
			continue
		}
		s.mu.Lock()
		if !sameTools(c.tools, l.tools) {
			changed = true
			c.o.Logger.Info("mcp server's tools changed", "server", c.name, "before", len(c.tools), "now", len(l.tools))
		}
		c.tools = l.tools
		for j := range s.statuses {
			if s.statuses[j].Name == c.name {
				s.statuses[j].Tools, s.statuses[j].Skipped, s.statuses[j].SkippedMore = len(l.tools), l.skipped, l.skippedMore
			}
		}
		s.mu.Unlock()
	}
	return changed, errors.Join(errs...)
}

// sameTools reports whether two listings offer the same tools, by name and
// definition.
func sameTools(a, b []*Tool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].spec.Name != b[i].spec.Name || a[i].spec.Description != b[i].spec.Description ||
			*a[i].spec.Hints != *b[i].spec.Hints || !sameSchema(a[i], b[i]) {
			return false
		}
	}
	return true
}

func sameSchema(a, b *Tool) bool {
	if a.spec.InputSchema == nil || b.spec.InputSchema == nil {
		return a.spec.InputSchema == b.spec.InputSchema
	}
	ja, errA := json.Marshal(a.spec.InputSchema)
	jb, errB := json.Marshal(b.spec.InputSchema)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// Servers returns the status of every configured server, in name order, with
// its Renewals as of now (and its Tools and Skipped as of the last
// [Set.Refresh]).
func (s *Set) Servers() []ServerStatus {
	s.mu.RLock()
	out := append([]ServerStatus(nil), s.statuses...)
	s.mu.RUnlock()
	for i := range out {
		for _, c := range s.conns {
			if c.name == out[i].Name {
				out[i].Renewals = c.renewCount()
			}
		}
	}
	return out
}

// Close closes every server connection, concurrently, and waits at most about
// three ShutdownGrace periods plus a second. For a stdio server it closes
// stdin, then sends SIGTERM, then SIGKILL to its process group (MCP
// specification 2025-06-18, "Lifecycle: Shutdown"), so no process the server
// started in its group is left; for a streamable HTTP server it ends the
// session (HTTP DELETE). Calls still running fail. Close returns the joined
// errors of the servers that could not be stopped cleanly; calling it again
// returns the same.
func (s *Set) Close() error {
	s.closeOnce.Do(func() {
		errs := make([]error, len(s.conns))
		var wg sync.WaitGroup
		for i, c := range s.conns {
			wg.Go(func() {
				if err := c.close(3*s.grace + time.Second); err != nil {
					errs[i] = fmt.Errorf("mcp server %q: close: %w", c.name, err)
				}
			})
		}
		wg.Wait()
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}
