package mcpgateway

import (
	"context"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/ids"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// maxAttr bounds the client's strings put on a span (bytes).
const maxAttr = 256

// callScope is what [Gateway.tracedCall] hands [Gateway.call] through its
// context: the call's ID, and the observer that keeps the call's outcome
// for its span.
type callScope struct {
	id      string
	rec     *gate.Record
	pending *gate.Pending
	votes   []tool.Vote
}

type callScopeKey struct{}

// Decided implements [gate.Observer].
func (s *callScope) Decided(_ *gate.Call, d gate.Decision) { s.votes = d.Votes }

// Pending implements [gate.Observer].
func (s *callScope) Pending(c *gate.Call, req tool.Request) {
	s.pending = &gate.Pending{Request: req, Digest: approval.Digest(c.Args), Args: c.Args, Votes: s.votes}
}

// Recorded implements [gate.Observer].
func (s *callScope) Recorded(_ *gate.Call, rec *gate.Record) { s.rec, s.pending = rec, nil }

// scopeOf returns the call scope of ctx, or nil.
func scopeOf(ctx context.Context) *callScope {
	s, _ := ctx.Value(callScopeKey{}).(*callScope)
	return s
}

// callID is the ID of a new call: its scope's, else a random "mcp_" one.
func callID(ctx context.Context) string {
	if s := scopeOf(ctx); s != nil {
		return s.id
	}
	return ids.New("mcp_")
}

// observer is the observer of a new call: its scope, else none.
func observer(ctx context.Context) gate.Observer {
	if s := scopeOf(ctx); s != nil {
		return s
	}
	return nil
}

// tracedCall governs a tools/call of t ([Gateway.call]) under the
// execute_tool span of [telemetry.Tracer], when [Options].Tracer is set:
// the span has the decision attributes of a run's call, the MCP session's
// ID (the run ID of the records), the method, the protocol version and the
// client's name and version.
func (gw *Gateway) tracedCall(ctx context.Context, req *mcp.CallToolRequest, cat *catalogue, t tool.Tool) (*mcp.CallToolResult, error) {
	if gw.opts.Tracer == nil {
		return gw.call(ctx, req, cat, t)
	}
	scope := &callScope{id: ids.New("mcp_")}
	info := &agent.CallInfo{RunID: gw.runID(req), Call: model.ToolCall{ID: scope.id, Name: t.Spec().Name}}
	var res *mcp.CallToolResult
	var err error
	gw.opts.Tracer.Call(ctx, info, gw.spanAttrs(req), func(ctx context.Context) gate.Ruling {
		res, err = gw.call(context.WithValue(ctx, callScopeKey{}, scope), req, cat, t)
		return gate.Ruling{Record: scope.rec, Pending: scope.pending, Err: err}
	})
	return res, err
}

// spanAttrs are the attributes of req's session on a call's span.
func (gw *Gateway) spanAttrs(req *mcp.CallToolRequest) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		semconv.McpMethodNameToolsCall,
		semconv.McpSessionID(clip(gw.runID(req))),
	}
	if req.Session == nil {
		return attrs
	}
	if p := req.Session.InitializeParams(); p != nil {
		if p.ProtocolVersion != "" {
			attrs = append(attrs, semconv.McpProtocolVersion(clip(p.ProtocolVersion)))
		}
		if p.ClientInfo != nil {
			// MCP has no semantic convention for the client's name and version.
			attrs = append(attrs, attribute.String("tollgate.mcp.client.name", clip(p.ClientInfo.Name)),
				attribute.String("tollgate.mcp.client.version", clip(p.ClientInfo.Version)))
		}
	}
	return attrs
}

// clip cuts s to at most maxAttr bytes of valid UTF-8.
func clip(s string) string {
	return abbreviate(strings.ToValidUTF8(s, "\uFFFD"), maxAttr)
}
