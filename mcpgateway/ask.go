package mcpgateway

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/ids"
	"github.com/tollgate-dev/tollgate/tool"
)

// Bounds of the asks in flight: how many wait for the client's answer at
// once, and how long one waits at most.
const (
	maxAsks = 256
	askTTL  = 10 * time.Minute
)

// approveKey is the input request's key in the result that asks.
const approveKey = "approve"

// noApprover is the decision reason of a call that needed a person whom
// the gateway cannot ask.
const noApprover = "the call needs a person's approval and the gateway has no one to ask"

// askState is a call that waits for the client's person: what the retry
// that carries the answer must match.
type askState struct {
	session *mcp.ServerSession
	tool    string // the client's name
	call    gate.Call
	pending *gate.Pending
	expires time.Time
}

// asks holds the calls that wait for an answer through elicitation, by
// the opaque request state the client echoes (multi round-trip requests,
// SEP-2322). A state is used once, by the session it was given to.
type asks struct {
	mu sync.Mutex
	m  map[string]*askState
}

// put stores st and returns its key, or "" when maxAsks wait already or
// maxPendingPerSession of st's session do (sessionFull).
func (a *asks) put(st *askState, now time.Time) (key string, sessionFull bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[string]*askState{}
	}
	mine := 0
	for k, v := range a.m {
		if now.After(v.expires) {
			delete(a.m, k)
		} else if v.session == st.session {
			mine++
		}
	}
	if mine >= maxPendingPerSession {
		return "", true
	}
	if len(a.m) >= maxAsks {
		return "", false
	}
	key = ids.New("ask_") + ids.New("")
	a.m[key] = st
	return key, false
}

// take removes and returns the state of key, if any.
func (a *asks) take(key string) (*askState, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st, ok := a.m[key]
	delete(a.m, key)
	return st, ok
}

// ask settles a call that waits on p: when the gateway may ask the
// client's person and the client declared form elicitation, the result
// asks for an approval (an elicitation input request; the SDK sends it as
// elicitation/create to a client of an earlier protocol version and calls
// again with the answer). Otherwise the call is refused, and the record
// says it was the runtime, after the votes that asked.
func (gw *Gateway) ask(ctx context.Context, req *mcp.CallToolRequest, env *gate.Env, c gate.Call, p *gate.Pending) (*mcp.CallToolResult, gate.Ruling) {
	if gw.opts.Elicit && p.Request.Kind == tool.KindApproval && formElicitation(req.ClientCapabilities()) && req.Session != nil {
		st := &askState{session: req.Session, tool: req.Params.Name, call: c, pending: p, expires: time.Now().Add(askTTL)}
		key, full := gw.asks.put(st, time.Now())
		if full {
			return nil, gw.refuseOverCap(ctx, env, c, p, sessionFull)
		}
		if key != "" {
			msg := fmt.Sprintf("Allow the tool call %s?\n\n%s\n\nArguments: %s", c.Name, p.Request.Prompt, abbreviate(string(p.Args), 2000))
			return &mcp.CallToolResult{
				InputRequests: mcp.InputRequestMap{approveKey: &mcp.ElicitParams{Mode: "form", Message: msg, RequestedSchema: approveSchema}},
				RequestState:  key,
			}, gate.Ruling{}
		}
		gw.opts.Logger.Warn("mcp gateway: too many calls wait for an answer; refusing", "tool", c.Name)
	}
	ways := "start the gateway with --server to ask on the approvals page, or change the policy"
	if gw.opts.Elicit { // a local client's person may answer through elicitation; an HTTP client never does
		ways = "start the gateway with --server to ask on the approvals page, use a client that supports elicitation, or change the policy"
	}
	res := tool.Errorf("%s needs a person's approval (%s) and this gateway has no one to ask, so it did not run: %s", c.Name, p.Request.Prompt, ways)
	rec := gw.gate.End(ctx, env, c, res, gate.Decision{Outcome: gate.OutcomeDenied, By: approval.Runtime, Reason: noApprover, Votes: p.Votes})
	return nil, gate.Ruling{Record: rec}
}

// answered takes up call c, which the client retries with the answer to an ask:
// the state must be one the gateway gave this session for this tool and
// these arguments, and unused. The answer approves only when the person
// accepted with approve true.
func (gw *Gateway) answered(ctx context.Context, req *mcp.CallToolRequest, env *gate.Env, c gate.Call) (gate.Call, gate.Ruling) {
	st, ok := gw.asks.take(req.Params.RequestState)
	if !ok || st.session != req.Session || st.tool != req.Params.Name || time.Now().After(st.expires) {
		rec := gw.gate.End(ctx, env, c, tool.Errorf("this answer is for no call waiting here (unknown, used, expired or another session's); the call did not run"),
			gate.Decision{Outcome: gate.OutcomeDenied, By: approval.Runtime, Reason: "an answer to no ask of this session"})
		return c, gate.Ruling{Record: rec}
	}
	if approval.Digest(arguments(req.Params.Arguments)) != approval.Digest(st.call.Args) {
		rec := gw.gate.End(ctx, env, st.call, tool.Errorf("the answer came with other arguments than those asked about; the call did not run"),
			gate.Decision{Outcome: gate.OutcomeDenied, By: approval.Runtime, Reason: "arguments digest mismatch", Votes: st.pending.Votes})
		return st.call, gate.Ruling{Record: rec}
	}
	ans := tool.Answer{ID: st.pending.Request.ID, By: gw.opts.Answerer, Reason: "declined"}
	if ans.By == "" {
		ans.Principal = tool.Principal{Kind: tool.PrincipalPerson, Name: "mcp-client"}
	}
	res, _ := req.Params.InputResponses[approveKey].(*mcp.ElicitResult)
	switch {
	case res == nil:
		ans.Reason = "no answer came"
	case res.Action == "accept" && res.Content[approveKey] == true:
		ans.OK, ans.Reason = true, ""
	case res.Action == "accept":
		ans.Reason = "not approved"
	default:
		ans.Reason = "the person chose to " + strings.ToLower(res.Action)
	}
	return st.call, gw.gate.Decide(ctx, env, st.call, st.pending, &ans)
}

// formElicitation reports whether caps declare form elicitation (an empty
// elicitation capability means form; MCP 2025-11-25).
func formElicitation(caps *mcp.ClientCapabilities) bool {
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	e := caps.Elicitation
	return e.Form != nil || e.URL == nil
}

// approveSchema is the form the person answers: one boolean.
var approveSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		approveKey: map[string]any{"type": "boolean", "title": "Approve", "description": "Run this tool call"},
	},
	"required": []string{approveKey},
}

// abbreviate cuts s to at most n bytes at a character boundary, marking
// the cut.
func abbreviate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
