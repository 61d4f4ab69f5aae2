package mcptool

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/tool"
)

// Listed returns a copy of the tool as its server listed it in tools/list
// (name, title, description, schemas, annotations, _meta), for a host that
// offers the tool to MCP clients of its own (an MCP gateway). The schemas
// are shared with the tool: do not change them.
func (t *Tool) Listed() *mcp.Tool { return listedCopy(t.listed) }

// CallMCP is [Tool.Call] that also returns the server's answer as it came
// (content of every kind, structuredContent, _meta), or nil when there is
// none (the call failed, or ran out of its CallTimeout), for a host that
// hands the answer on to an MCP client. The [tool.Result] is the one Call
// returns.
func (t *Tool) CallMCP(ctx context.Context, args json.RawMessage) (*mcp.CallToolResult, tool.Result, error) {
	var raw *mcp.CallToolResult
	res, err := t.call(ctx, args, &raw)
	return raw, res, err
}

// listedCopy is a shallow copy of t with its own annotations, or nil.
func listedCopy(t *mcp.Tool) *mcp.Tool {
	if t == nil {
		return nil
	}
	c := *t
	if t.Annotations != nil {
		a := *t.Annotations
		c.Annotations = &a
	}
	return &c
}

// Session returns the current session with the server named server, for a
// host that hands its clients' other requests on to it (resources,
// prompts, completion), and false when no server of the set has that name
// or its session has ended. A session renewed later (see
// [ServerStatus].Renewals) is another: ask again for each request.
func (s *Set) Session(server string) (*mcp.ClientSession, bool) {
	for _, c := range s.conns {
		if c.name == server {
			session, _, dead := c.current()
			return session, !dead
		}
	}
	return nil, false
}

// forward sets the handlers of o that hand a server's requests and log
// messages on to [Options].Forward.
func (c *conn) forward(o *mcp.ClientOptions) {
	f := c.o.Forward
	if f == nil {
		return
	}
	if f.CreateMessage != nil {
		o.CreateMessageHandler = func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return f.CreateMessage(ctx, c.name, req)
		}
	}
	if f.Elicit != nil {
		o.ElicitationHandler = func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if res, err := c.screenElicit(req); res != nil || err != nil {
				return res, err
			}
			return f.Elicit(ctx, c.name, req)
		}
	}
	if f.Log != nil {
		o.LoggingMessageHandler = func(ctx context.Context, req *mcp.LoggingMessageRequest) { f.Log(ctx, c.name, req) }
	}
	if f.ResourceUpdated != nil {
		o.ResourceUpdatedHandler = func(ctx context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			f.ResourceUpdated(ctx, c.name, req)
		}
	}
}

// forwardProtocol is the protocol version a client with [Options].Forward
// speaks: the newest in which a server may send its client requests of
// its own (sampling, elicitation) while it serves a call; from
// 2026-07-28 on it returns them in the call's result instead (SEP-2322),
// which a server of the older kind cannot.
const forwardProtocol = "2025-11-25"

// sessionOptions are the options of c's sessions: with [Options].Forward,
// the protocol version of forwardProtocol; else the SDK's defaults.
func (c *conn) sessionOptions() *mcp.ClientSessionOptions {
	if c.o.Forward == nil {
		return nil
	}
	return &mcp.ClientSessionOptions{ProtocolVersion: forwardProtocol}
}
