package mcpgateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/toolcall"
	"github.com/tollgate-dev/tollgate/tool"
)

// call governs one tools/call of t, found in the catalogue cat (the
// call's tools: one snapshot for the whole call): Decide, an ask when it
// needs a person, Complete with the upstream call as the runner. Its
// error is the context's (the client cancelled, or went away);
// everything else is a result.
func (gw *Gateway) call(ctx context.Context, req *mcp.CallToolRequest, cat *catalogue, t tool.Tool) (*mcp.CallToolResult, error) {
	ctx = gw.withSession(ctx, req)
	env := &gate.Env{Tools: cat, Observer: observer(ctx)}
	c := gate.Call{
		ID:        callID(ctx),
		Name:      t.Spec().Name,
		Args:      arguments(req.Params.Arguments),
		RunID:     gw.runID(req),
		Source:    gate.SourceMCP,
		Principal: gw.opts.Principal(req),
		Workspace: gw.opts.Workspace,
	}
	// The pin is checked on every call, the one that answers an ask
	// included: a definition changed between the ask and its answer is
	// refused too.
	if ok, pinned, now, err := gw.pins.check(t); !ok || err != nil {
		why := fmt.Sprintf("the definition of %s (its description or input schema) changed since it was first seen (digest %.12s, now %.12s); it is refused until it is approved again (remove its pin)", c.Name, pinned, now)
		if err != nil {
			why = fmt.Sprintf("the definition of %s could not be pinned: %v", c.Name, err)
		}
		rec := gw.gate.End(ctx, env, c, tool.Errorf("%s", why), gate.Decision{Outcome: gate.OutcomeDenied, By: approval.Runtime, Reason: "tool definition changed (rug pull guard)"})
		return errorResult(rec.Output), nil
	}
	var ru gate.Ruling
	if pa, ok := gw.parked.take(req.Params.RequestState); ok {
		c, ru = gw.resume(ctx, req, env, t, c, pa)
	} else if req.Params.RequestState != "" {
		c, ru = gw.answered(ctx, req, env, c)
	} else {
		ru = gw.gate.Decide(ctx, env, c, nil, nil)
		if ru.Pending != nil && gw.opts.Inbox != nil && ru.Pending.Request.Kind == tool.KindApproval && inputURL(req) {
			var asking *mcp.CallToolResult
			if asking, ru = gw.park(ctx, req, env, t, c, ru.Pending); asking != nil {
				return asking, nil
			}
		} else if ru.Pending != nil && gw.opts.Inbox != nil && ru.Pending.Request.Kind == tool.KindApproval {
			ru = gw.askInbox(ctx, req, env, t, c, ru.Pending)
		} else if ru.Pending != nil {
			var asking *mcp.CallToolResult
			if asking, ru = gw.ask(ctx, req, env, c, ru.Pending); asking != nil {
				return asking, nil
			}
		}
	}
	var raw *mcp.CallToolResult
	var ran tool.Result
	if ru.Allowed != nil {
		ctx := withProgress(ctx, req)
		ru = gw.gate.Complete(ctx, env, ru.Allowed, func(ctx context.Context, a *gate.Allowed) gate.Ran {
			start := time.Now()
			raw, ran = gw.run(ctx, req, t, a.Args)
			return gate.Ran{Result: ran, Latency: time.Since(start)}
		})
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	switch {
	case ru.Record != nil && ru.Err == nil:
		rec := ru.Record
		if rec.Ran && raw != nil && len(rec.ReplacedBy) == 0 && rec.Output == ran.Output && rec.IsError == ran.IsError {
			return raw, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: rec.Output}}, IsError: rec.IsError}, nil
	case ru.Record != nil:
		// An AfterTool hook failed: the record holds the withheld result.
		return errorResult(ru.Record.Output), nil
	case ru.Pending != nil:
		// A tool that asks rather than answers: not an MCP tool's way.
		rec := gw.gate.End(ctx, env, c, tool.Errorf("%s asked a question the gateway cannot put to anyone; the call did not finish", c.Name),
			gate.Decision{Outcome: gate.OutcomeDenied, By: approval.Runtime, Reason: "a pending request from the tool", Votes: ru.Pending.Votes})
		return errorResult(rec.Output), nil
	default:
		// A hook failed: fail closed.
		gw.opts.Logger.Warn("mcp gateway: call not decided", "tool", c.Name, "error", ru.Err)
		return errorResult(fmt.Sprintf("the gateway could not decide this call, so it did not run: %v", ru.Err)), nil
	}
}

// runID names the run of req's session in calls and records: its session
// ID (HTTP), else the gateway's RunID.
func (gw *Gateway) runID(req *mcp.CallToolRequest) string {
	if req.Session != nil {
		if id := req.Session.ID(); id != "" {
			return id
		}
	}
	return gw.opts.RunID
}

// arguments are a call's arguments as the gate takes them: none or null
// is the empty object.
func arguments(raw json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return json.RawMessage(`{}`)
	}
	return raw
}

// errorResult is an isError result with text.
func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: true}
}

// withProgress returns ctx with a reporter that hands the upstream's
// progress for the call to the client, when the client asked for progress
// (a progress token in the call's _meta; MCP specification 2025-11-25,
// "Utilities: Progress").
func withProgress(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return ctx
	}
	return toolcall.WithReporter(ctx, &progress{ctx: ctx, session: req.Session, token: token})
}

// progress is the reporter of one call: it sends notifications/progress
// to the client.
type progress struct {
	ctx     context.Context
	session *mcp.ServerSession
	token   any
}

func (p *progress) Progress(pr tool.Progress) {
	_ = p.session.NotifyProgress(p.ctx, &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: pr.Progress, Total: pr.Total, Message: pr.Message})
}

func (p *progress) Notice(tool.Notice) {}
