package mcpgateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/ids"
	"github.com/tollgate-dev/tollgate/mcptool"
	"github.com/tollgate-dev/tollgate/telemetry"
	"github.com/tollgate-dev/tollgate/tool"
)

// Options configures a [Gateway]. A nil *Options means all defaults.
type Options struct {
	// Gate configures the gate every call goes through: hooks, authorizers
	// (also used to filter tools/list), the tool call listener, the result
	// cap, OnRecord. Its zero value allows every call.
	Gate gate.Options
	// Implementation is the server's name and version in initialize; nil
	// means {Name: "tollgate-gateway", Version: "dev"}.
	Implementation *mcp.Implementation
	// Workspace is the directory calls work in, on every [gate.Call].
	Workspace string
	// RunID names the calls of a client session that has no session ID
	// (stdio) in calls and records; empty means a random "gw_" ID.
	RunID string
	// Principal returns who asks for a call made with req; nil means the
	// principal of the request's bearer token ([Gateway.Handler]), zero
	// without one.
	Principal func(req *mcp.CallToolRequest) tool.Principal
	// Elicit asks the client's person, through form elicitation, about a
	// call that needs an approval, when the client declares it. Set it only
	// when the client's answers are a person's (a local client over
	// stdio), never for clients whose credentials an agent holds.
	Elicit bool
	// Answerer names the person who answers through elicitation, in the
	// decision ("person:NAME"); empty means an unnamed person.
	Answerer string
	// Relay hands the upstreams' sampling, elicitation and log messages on
	// to the clients; it must be the one whose Forward the set was opened
	// with. Nil: none are handed on.
	Relay *Relay
	// Inbox, if set, is where a person answers the calls that need one
	// (the approvals page of `tollgate serve`): such a call waits for the
	// answer until its request expires, and every record of a session is
	// handed to it too. It comes before Elicit. Its requests expire after
	// Gate.ApprovalTTL, 10 minutes when that is zero.
	Inbox Inbox
	// KeepAlive is how often a call that waits for the inbox's answer
	// sends the client a progress notification (when the client gave a
	// progress token; MCP specification 2025-11-25, "Utilities:
	// Progress"), so that it keeps the call open; zero means 15 s.
	KeepAlive time.Duration
	// PinsFile keeps the digest of every tool's definition (description
	// and input schema) as first seen, across starts; a tool whose
	// definition changes is refused until its entry is removed. Empty
	// keeps them in memory, from the gateway's start.
	PinsFile string
	// Logger receives what the gateway does (never argument values, results
	// or tokens); nil discards.
	Logger *slog.Logger
	// Tools are served beside the upstreams' under their own names (the
	// builtins of a workspace, sandboxed by whoever made them: package
	// internal/runbuild's Builtins), and governed alike. With tools, the
	// upstreams' tools are always named SERVER__TOOL, so that no upstream
	// tool takes one of theirs. Their names must be valid MCP tool names
	// and differ.
	Tools []tool.Tool
	// Tracer traces and counts every tools/call as a run's calls are
	// (execute_tool spans, tollgate.tool.decisions), with the MCP session,
	// method, protocol version and client; nil: none.
	Tracer *telemetry.Tracer
}

// Gateway is an MCP server in front of the servers of a [mcptool.Set] that
// governs every tools/call with a [gate.Gate]. Its methods are safe for
// concurrent use. See the package documentation.
type Gateway struct {
	set    *mcptool.Set
	gate   *gate.Gate
	opts   Options
	server *mcp.Server

	syncMu sync.Mutex // held by one sync at a time
	mu     sync.RWMutex
	cat    *catalogue
	asks   asks
	waits  pendingCounts // the calls of each session that wait on the inbox
	pins   *pins
	live   sync.Map // *mcp.ServerSession -> true: the sessions the inbox hears the end of
	// parked are the asks whose call ended with the page's link in an
	// input request (clients of protocol 2026-07-28).
	parked parkedAsks
	// httpSessions are the HTTP sessions each token has open (Handler).
	httpSessions sessionCounts
}

// New returns a gateway in front of set, with its tools listed and
// filtered. set stays the caller's to close. set may be nil when
// [Options].Tools are given: the gateway serves those alone.
func New(ctx context.Context, set *mcptool.Set, opts *Options) (*Gateway, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if set == nil {
		if len(o.Tools) == 0 {
			return nil, errors.New("mcpgateway: no MCP servers (nil set) and no tools")
		}
		var err error
		if set, err = mcptool.Open(ctx, nil, nil); err != nil {
			return nil, fmt.Errorf("mcpgateway: %w", err)
		}
	}
	if err := checkTools(o.Tools); err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Gate.Logger == nil {
		o.Gate.Logger = o.Logger
	}
	if o.Implementation == nil {
		o.Implementation = &mcp.Implementation{Name: "tollgate-gateway", Version: "dev"}
	}
	if o.Principal == nil {
		o.Principal = tokenPrincipal
	}
	if o.Relay == nil {
		o.Relay = &Relay{}
	}
	if o.Inbox != nil {
		o.Gate.OnRecord = inboxRecords(o.Inbox, o.Gate.OnRecord)
		if o.Gate.ApprovalTTL <= 0 {
			o.Gate.ApprovalTTL = askTTL
		}
	}
	if o.RunID == "" {
		o.RunID = ids.New("gw_")
	}
	p, err := loadPins(o.PinsFile)
	if err != nil {
		return nil, fmt.Errorf("mcpgateway: %w", err)
	}
	gw := &Gateway{set: set, gate: gate.New(&o.Gate), opts: o, cat: &catalogue{}, pins: p}
	gw.server = mcp.NewServer(o.Implementation, &mcp.ServerOptions{
		Logger: o.Logger,
		// Tools are always offered, even while every upstream tool is
		// denied, so that a client sees the list change later; the rest
		// as the upstreams offer it.
		Capabilities:       capabilities(gw.upstreams()),
		SubscribeHandler:   gw.subscribe,
		UnsubscribeHandler: gw.unsubscribe,
	})
	gw.server.AddReceivingMiddleware(gw.middleware)
	o.Relay.server.Store(gw.server)
	if err := gw.sync(ctx, false); err != nil {
		return nil, err
	}
	return gw, nil
}

// Server returns the MCP server: run it on a transport
// ([mcp.Server.Run] with [mcp.StdioTransport]) or serve it over HTTP
// ([mcp.NewStreamableHTTPHandler]).
func (gw *Gateway) Server() *mcp.Server { return gw.server }

// middleware reads the upstreams' tool lists again before tools/list and
// tools/call, and governs a tools/call of a tool left out of tools/list,
// so that it is denied and recorded (the offered tools' calls reach
// [Gateway.handle] through the SDK).
func (gw *Gateway) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/list":
			if err := gw.sync(ctx, true); err != nil {
				gw.opts.Logger.Warn("mcp gateway: upstream tools could not be listed again", "error", err)
			}
		case "logging/setLevel":
			// The upstreams send log messages only once asked to.
			if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && p != nil {
				for _, u := range gw.upstreams() {
					if u.caps.Logging != nil {
						_ = u.session.SetLoggingLevel(ctx, p)
					}
				}
			}
		case "tools/call":
			if err := gw.sync(ctx, true); err != nil {
				gw.opts.Logger.Warn("mcp gateway: upstream tools could not be listed again", "error", err)
			}
			if r, ok := req.(*mcp.CallToolRequest); ok && r.Params != nil {
				cat := gw.catalogue()
				if t, ok := cat.byClient[r.Params.Name]; ok && cat.offered[r.Params.Name] == "" {
					res, err := gw.tracedCall(ctx, r, cat, t)
					if err != nil {
						return nil, err
					}
					return res, nil
				}
			}
		}
		if res, ok, err := gw.passthrough(ctx, req); ok {
			if err != nil {
				return nil, err
			}
			return res, nil
		}
		return next(ctx, method, req)
	}
}

// catalogue is the gateway's view of the upstream tools at one time.
type catalogue struct {
	byClient map[string]tool.Tool // client name -> tool
	byGate   map[string]tool.Tool // gate name (mcp__SERVER__TOOL, a builtin's) -> tool
	names    []string             // gate names, sorted
	offered  map[string]string    // client name -> digest of what tools/list shows
}

// Tool implements [gate.Tools].
func (c *catalogue) Tool(name string) (tool.Tool, bool) {
	t, ok := c.byGate[name]
	return t, ok
}

// Names implements [gate.Tools].
func (c *catalogue) Names() []string { return c.names }

func (gw *Gateway) catalogue() *catalogue {
	gw.mu.RLock()
	defer gw.mu.RUnlock()
	return gw.cat
}

// clientName is the name the client sees for t: its own with one server,
// else its gate name without the "mcp__" prefix (a gateway's own tool:
// its name).
func clientName(t tool.Tool, servers int) string {
	mt, ok := t.(*mcptool.Tool)
	if !ok {
		return t.Spec().Name
	}
	if servers == 1 {
		return mt.Listed().Name
	}
	return strings.TrimPrefix(t.Spec().Name, "mcp__")
}

// servers counts the servers of the set that are not disabled: the names
// the client sees do not change when one of several fails.
func servers(set *mcptool.Set) int {
	n := 0
	for _, st := range set.Servers() {
		if st.State != mcptool.StateDisabled {
			n++
		}
	}
	return n
}

// deniedOutright reports whether the authorizers deny t for a call with no
// arguments (an authorizer that fails denies: fail closed), and by whom.
func (gw *Gateway) deniedOutright(ctx context.Context, t tool.Tool) (approval.Verdict, bool) {
	spec := t.Spec()
	c := approval.Call{Tool: spec.Name, Args: json.RawMessage(`{}`), Hints: spec.Hints, RunID: gw.opts.RunID}
	for _, a := range gw.opts.Gate.Authorizers {
		v, err := a.Authorize(ctx, c)
		if err != nil {
			return approval.Verdict{Decision: approval.Deny, Reason: err.Error(), By: v.By}, true
		}
		if v.Decision == approval.Deny {
			return v, true
		}
	}
	return approval.Verdict{}, false
}
