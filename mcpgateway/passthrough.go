package mcpgateway

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/mcptool"
)

// maxListed bounds the items one list request gathers from all the
// upstreams together, so that a server that lists without end cannot
// exhaust the gateway's memory.
const maxListed = 10000

// upstream is one ready server of the set and its current session.
type upstream struct {
	name    string
	session *mcp.ClientSession
	caps    *mcp.ServerCapabilities
}

// upstreams returns the ready servers with a live session, in name order.
func (gw *Gateway) upstreams() []upstream {
	var out []upstream
	for _, st := range gw.set.Servers() {
		if st.State != mcptool.StateReady {
			continue
		}
		s, ok := gw.set.Session(st.Name)
		if !ok {
			continue
		}
		caps := &mcp.ServerCapabilities{}
		if ir := s.InitializeResult(); ir != nil && ir.Capabilities != nil {
			caps = ir.Capabilities
		}
		out = append(out, upstream{name: st.Name, session: s, caps: caps})
	}
	return out
}

// capabilities are what the gateway offers its clients: tools, always,
// and the resources, prompts, completions and logging any upstream offers
// (MCP specification 2025-11-25, "Lifecycle: Capability negotiation").
func capabilities(ups []upstream) *mcp.ServerCapabilities {
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}
	for _, u := range ups {
		if u.caps.Resources != nil {
			if caps.Resources == nil {
				caps.Resources = &mcp.ResourceCapabilities{}
			}
			caps.Resources.Subscribe = caps.Resources.Subscribe || u.caps.Resources.Subscribe
		}
		if u.caps.Prompts != nil {
			caps.Prompts = &mcp.PromptCapabilities{}
		}
		if u.caps.Completions != nil {
			caps.Completions = &mcp.CompletionCapabilities{}
		}
		if u.caps.Logging != nil {
			caps.Logging = &mcp.LoggingCapabilities{}
		}
	}
	return caps
}

// passthrough hands a client's request for resources, prompts or
// completion on to the upstream that serves it, and reports whether req
// was such a request. Lists gather every upstream's items (all their
// pages, at most maxListed) into one page; prompts are named like tools
// (prefixed by the server's name when there are several).
func (gw *Gateway) passthrough(ctx context.Context, req mcp.Request) (mcp.Result, bool, error) {
	switch r := req.(type) {
	case *mcp.ListResourcesRequest:
		res, err := gw.listResources(ctx)
		return res, true, err
	case *mcp.ListResourceTemplatesRequest:
		res, err := gw.listTemplates(ctx)
		return res, true, err
	case *mcp.ReadResourceRequest:
		res, err := forEachResourceServer(gw, func(u upstream) (*mcp.ReadResourceResult, error) { return u.session.ReadResource(ctx, r.Params) })
		return res, true, err
	case *mcp.ListPromptsRequest:
		res, err := gw.listPrompts(ctx)
		return res, true, err
	case *mcp.GetPromptRequest:
		u, name, err := gw.promptServer(r.Params.Name)
		if err != nil {
			return nil, true, err
		}
		p := *r.Params
		p.Name = name
		res, err := u.session.GetPrompt(ctx, &p)
		return res, true, err
	case *mcp.CompleteRequest:
		res, err := gw.complete(ctx, r.Params)
		return res, true, err
	}
	return nil, false, nil
}

func (gw *Gateway) listResources(ctx context.Context) (*mcp.ListResourcesResult, error) {
	out := &mcp.ListResourcesResult{Resources: []*mcp.Resource{}}
	for _, u := range gw.upstreams() {
		if u.caps.Resources == nil {
			continue
		}
		for r, err := range u.session.Resources(ctx, nil) {
			if err != nil {
				return nil, fmt.Errorf("mcp server %q: %w", u.name, err)
			}
			if len(out.Resources) == maxListed {
				return out, nil
			}
			out.Resources = append(out.Resources, r)
		}
	}
	return out, nil
}

func (gw *Gateway) listTemplates(ctx context.Context) (*mcp.ListResourceTemplatesResult, error) {
	out := &mcp.ListResourceTemplatesResult{ResourceTemplates: []*mcp.ResourceTemplate{}}
	for _, u := range gw.upstreams() {
		if u.caps.Resources == nil {
			continue
		}
		for r, err := range u.session.ResourceTemplates(ctx, nil) {
			if err != nil {
				return nil, fmt.Errorf("mcp server %q: %w", u.name, err)
			}
			if len(out.ResourceTemplates) == maxListed {
				return out, nil
			}
			out.ResourceTemplates = append(out.ResourceTemplates, r)
		}
	}
	return out, nil
}

// subscribe hands resources/subscribe on to the upstreams (the SDK keeps
// the client's subscription).
func (gw *Gateway) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	_, err := forEachResourceServer(gw, func(u upstream) (struct{}, error) { return struct{}{}, u.session.Subscribe(ctx, req.Params) })
	return err
}

// unsubscribe hands resources/unsubscribe on to the upstreams.
func (gw *Gateway) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	_, err := forEachResourceServer(gw, func(u upstream) (struct{}, error) { return struct{}{}, u.session.Unsubscribe(ctx, req.Params) })
	return err
}

// forEachResourceServer asks each upstream that offers resources in turn,
// and returns the first answer that is not an error (resource URIs name
// no server; the first that knows one answers), or the last error.
func forEachResourceServer[R any](gw *Gateway, ask func(upstream) (R, error)) (R, error) {
	var zero R
	err := error(&jsonrpc.Error{Code: mcp.CodeResourceNotFound, Message: "no upstream server offers resources"})
	for _, u := range gw.upstreams() {
		if u.caps.Resources == nil {
			continue
		}
		res, e := ask(u)
		if e == nil {
			return res, nil
		}
		err = e
	}
	return zero, err
}

func (gw *Gateway) listPrompts(ctx context.Context) (*mcp.ListPromptsResult, error) {
	out := &mcp.ListPromptsResult{Prompts: []*mcp.Prompt{}}
	ups := gw.upstreams()
	several := servers(gw.set) > 1
	for _, u := range ups {
		if u.caps.Prompts == nil {
			continue
		}
		for p, err := range u.session.Prompts(ctx, nil) {
			if err != nil {
				return nil, fmt.Errorf("mcp server %q: %w", u.name, err)
			}
			if len(out.Prompts) == maxListed {
				return out, nil
			}
			if several {
				c := *p
				c.Name = u.name + "__" + p.Name
				p = &c
			}
			out.Prompts = append(out.Prompts, p)
		}
	}
	return out, nil
}

// promptServer returns the upstream of the prompt the client names, and
// its name there.
func (gw *Gateway) promptServer(name string) (upstream, string, error) {
	ups := gw.upstreams()
	several := servers(gw.set) > 1
	for _, u := range ups {
		if u.caps.Prompts == nil {
			continue
		}
		if !several {
			return u, name, nil
		}
		if rest, ok := strings.CutPrefix(name, u.name+"__"); ok {
			return u, rest, nil
		}
	}
	return upstream{}, "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", name)}
}

// complete hands completion/complete on to the upstream of the prompt or
// resource it refers to.
func (gw *Gateway) complete(ctx context.Context, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	if p == nil || p.Ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion/complete needs a ref"}
	}
	if p.Ref.Type == "ref/prompt" {
		u, name, err := gw.promptServer(p.Ref.Name)
		if err != nil {
			return nil, err
		}
		c := *p
		ref := *p.Ref
		ref.Name = name
		c.Ref = &ref
		return u.session.Complete(ctx, &c)
	}
	var err error = errors.New("no upstream server offers completions")
	for _, u := range gw.upstreams() {
		if u.caps.Completions == nil {
			continue
		}
		res, e := u.session.Complete(ctx, p)
		if e == nil {
			return res, nil
		}
		err = e
	}
	return nil, err
}
