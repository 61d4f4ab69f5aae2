package mcpgateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/mcptool"
	"github.com/tollgate-dev/tollgate/tool"
)

// checkTools refuses [Options].Tools that the gateway could not serve
// under their own names: a nil tool, a name that is not a valid tool name,
// one with "__" (the separator of the upstreams' names, which could then
// take it), or two tools with one name.
func checkTools(tools []tool.Tool) error {
	seen := map[string]bool{}
	for i, t := range tools {
		if t == nil {
			return fmt.Errorf("mcpgateway: Options.Tools[%d] is nil", i)
		}
		name := t.Spec().Name
		switch {
		case !tool.ValidName(name):
			return fmt.Errorf("mcpgateway: Options.Tools[%d]: %q is not a valid tool name", i, name)
		case strings.Contains(name, "__"):
			return fmt.Errorf("mcpgateway: Options.Tools[%d]: %q has \"__\", which separates an upstream's name from its tool's", i, name)
		case seen[name]:
			return fmt.Errorf("mcpgateway: Options.Tools: two tools are named %q", name)
		}
		seen[name] = true
	}
	return nil
}

// listedOwn is the tools/list entry of a gateway's own tool: its name,
// description and input schema, and its hints as MCP annotations (MCP
// specification 2025-11-25, "Tools: Tool annotations"); a tool without
// hints gets none, which MCP reads as the most cautious.
func listedOwn(t tool.Tool) *mcp.Tool {
	spec := t.Spec()
	l := &mcp.Tool{Name: spec.Name, Description: spec.Description}
	if spec.InputSchema != nil {
		l.InputSchema = spec.InputSchema
	}
	if h := spec.Hints; h != nil {
		destructive, openWorld := h.Destructive, h.OpenWorld
		l.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: h.ReadOnly, DestructiveHint: &destructive,
			IdempotentHint: h.Idempotent, OpenWorldHint: &openWorld}
	}
	return l
}

// run runs the tool of an allowed call with args: an upstream's through its
// session (its sampling, elicitation and log messages meanwhile handed to
// the client of req, with [Relay]), returning its answer as it came too; a
// gateway's own in this process, returning its result alone. A Go error is
// an error result.
func (gw *Gateway) run(ctx context.Context, req *mcp.CallToolRequest, t tool.Tool, args json.RawMessage) (*mcp.CallToolResult, tool.Result) {
	mt, ok := t.(*mcptool.Tool)
	if !ok {
		res, err := t.Call(ctx, args)
		if err != nil {
			res = tool.Errorf("%v", err)
		}
		return nil, res
	}
	end := gw.opts.Relay.begin(mt.Server(), ctx, req.Session)
	defer end()
	uctx, done := upstreamContext(ctx)
	defer done()
	raw, res, err := mt.CallMCP(uctx, args)
	if err != nil {
		res = tool.Errorf("%v", err)
	}
	return raw, res
}

// drainGrace is how long the end of an upstream's answer may still be read
// once the call has returned.
const drainGrace = time.Second

// upstreamContext returns the context of a call to an upstream: ended when
// ctx ends while the call is in flight (the client cancelled, or went
// away), and drainGrace after done is called otherwise. On streamable HTTP
// the SDK still reads the end of the response stream after the answer has
// come; a context ended at that moment closes the connection, and every
// such call cost the next one a new TCP connection to the upstream. The
// grace bounds what an upstream that never ends its stream can hold.
func upstreamContext(ctx context.Context) (context.Context, func()) {
	uctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	unwatch := context.AfterFunc(ctx, cancel)
	return uctx, func() {
		if unwatch() {
			time.AfterFunc(drainGrace, cancel)
		}
	}
}
