package mcpgateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/mcptool"
	"github.com/tollgate-dev/tollgate/tool"
)

// sync makes the server's tools those of the set, less those denied
// outright. With refresh, the upstreams that announced a change are
// listed again first ([mcptool.Set.Refresh]), and nothing else happens
// when none did. A tool that changed is offered as it is now; the SDK
// tells the client sessions that the list changed.
func (gw *Gateway) sync(ctx context.Context, refresh bool) error {
	gw.syncMu.Lock()
	defer gw.syncMu.Unlock()
	var err error
	if refresh {
		var changed bool
		changed, err = gw.set.Refresh(ctx)
		if !changed {
			return err
		}
	}
	old := gw.catalogue()
	n := servers(gw.set)
	if len(gw.opts.Tools) > 0 {
		n++ // the gateway's own tools are one more source: prefix the upstreams'
	}
	cat := &catalogue{byClient: map[string]tool.Tool{}, byGate: map[string]tool.Tool{}, offered: map[string]string{}}
	for _, t := range append(gw.set.Tools(), gw.opts.Tools...) {
		name := clientName(t, n)
		cat.byClient[name] = t
		cat.byGate[t.Spec().Name] = t
		cat.names = append(cat.names, t.Spec().Name)
		if ok, _, _, err := gw.pins.check(t); !ok || err != nil {
			gw.opts.Logger.Warn("mcp gateway: a tool's definition changed since it was pinned; its calls are refused", "tool", t.Spec().Name, "error", err)
		}
		if v, denied := gw.deniedOutright(ctx, t); denied {
			gw.opts.Logger.Info("mcp gateway: tool left out of tools/list", "tool", t.Spec().Name, "by", v.By.String())
			continue
		}
		listed, err := offered(t, name)
		if err != nil {
			gw.opts.Logger.Warn("mcp gateway: tool left out of tools/list", "tool", t.Spec().Name, "error", err)
			continue
		}
		d := digest(listed)
		cat.offered[name] = d
		if old.offered[name] == d {
			continue
		}
		if err := addTool(gw.server, listed, gw.handle); err != nil {
			delete(cat.offered, name)
			gw.opts.Logger.Warn("mcp gateway: tool left out of tools/list", "tool", t.Spec().Name, "error", err)
		}
	}
	sort.Strings(cat.names)
	var gone []string
	for name := range old.offered {
		if _, ok := cat.offered[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		gw.server.RemoveTools(gone...)
	}
	gw.mu.Lock()
	gw.cat = cat
	gw.mu.Unlock()
	return err
}

// offered is the tool the client sees for t: as its server listed it
// (a gateway's own tool: as [listedOwn] gives it), under name, with an
// input schema of type object (MCP requires one).
func offered(t tool.Tool, name string) (*mcp.Tool, error) {
	listed := listedOwn(t)
	if mt, ok := t.(*mcptool.Tool); ok {
		listed = mt.Listed()
	}
	listed.Name = name
	schema := map[string]any{}
	if listed.InputSchema != nil {
		raw, err := json.Marshal(listed.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("input schema: %w", err)
		}
		if err := json.Unmarshal(raw, &schema); err != nil {
			return nil, fmt.Errorf("input schema: %w", err)
		}
	}
	if _, ok := schema["type"]; !ok {
		schema["type"] = "object"
	}
	listed.InputSchema = schema
	return listed, nil
}

// addTool adds t to s, turning the SDK's panic on a tool it refuses into
// an error.
func addTool(s *mcp.Server, t *mcp.Tool, h mcp.ToolHandler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("refused by the MCP SDK: %v", p)
		}
	}()
	s.AddTool(t, h)
	return nil
}

// digest is the SHA-256 of t's JSON, hex: what tools/list shows of it.
func digest(t *mcp.Tool) string {
	raw, _ := json.Marshal(t)
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// handle is the handler of every offered tool: it governs the call
// ([Gateway.call]).
func (gw *Gateway) handle(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	cat := gw.catalogue()
	if t, ok := cat.byClient[req.Params.Name]; ok {
		return gw.tracedCall(ctx, req, cat, t)
	}
	return errorResult(fmt.Sprintf("unknown tool %q", req.Params.Name)), nil
}
