package mcpgateway

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/ids"
	"github.com/tollgate-dev/tollgate/tool"
)

// maxParked bounds the parked asks of the gateway, all sessions and
// tenants together: far above one tenant's waiting calls
// (maxPendingPerTenant, which bounds each tenant's parked asks too), so
// that one tenant's cannot take every place.
const maxParked = 16 * maxPendingPerTenant

// linkKey is the input request's key in the result that gives a client
// of protocol 2026-07-28 the page's link.
const linkKey = "approval"

// parkedAsk is an ask on the inbox whose call ended with the page's link
// as a URL-mode elicitation in an input-required result (a client of
// protocol 2026-07-28 takes a server's requests only there: multi
// round-trip requests, SEP-2322): the ask goes on waiting, and the call
// the client retries with the state waits for its answer.
type parkedAsk struct {
	session Session // who may take it up: the same session ID and client
	tool    string  // the client's name of the tool
	call    gate.Call
	pending *gate.Pending
	expires time.Time
	// done is closed once the inbox answered (ans, err); cancel withdraws
	// the ask.
	done   chan struct{}
	ans    *tool.Answer
	err    error
	cancel context.CancelFunc
}

// parkedAsks are the parked asks by the opaque state given to the
// client, at most maxParked; a state is used once.
type parkedAsks struct {
	mu sync.Mutex
	m  map[string]*parkedAsk
}

// put stores pa and returns its key, or, when maxParked are parked, or
// as many as its token or its tenant may wait for (maxPendingPerClient,
// maxPendingPerTenant), the sentence that says so. An ask stays parked
// after it ended (answered, withdrawn), until it is retried or expires,
// so the caps of waiting calls do not bound the parked ones.
func (ps *parkedAsks) put(pa *parkedAsk, now time.Time) (key, full string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.m == nil {
		ps.m = map[string]*parkedAsk{}
	}
	client, tenant := 0, 0
	for k, v := range ps.m {
		switch {
		case now.After(v.expires):
			delete(ps.m, k)
			v.cancel() // withdrawn, if its ask still waits: no client will take it up
		case v.session.Client == pa.session.Client:
			client++
			tenant++
		case v.session.Client.Tenant == pa.session.Client.Tenant:
			tenant++
		}
	}
	switch {
	case client >= maxPendingPerClient:
		return "", fmt.Sprintf("%d calls of this client's sessions wait for one already (the most one token may have across its sessions)", maxPendingPerClient)
	case tenant >= maxPendingPerTenant:
		return "", fmt.Sprintf("%d calls of this tenant's clients wait for one already (the most one tenant may have)", maxPendingPerTenant)
	case len(ps.m) >= maxParked:
		return "", fmt.Sprintf("%d calls wait for one at this gateway already", maxParked)
	}
	key = ids.New("park_") + ids.New("")
	ps.m[key] = pa
	return key, ""
}

// take removes and returns the parked ask of key, if any.
func (ps *parkedAsks) take(key string) (*parkedAsk, bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	pa, ok := ps.m[key]
	delete(ps.m, key)
	return pa, ok
}

// inputURL reports whether req's client takes a server's requests only
// in a call's result (protocol 2026-07-28 or later; a session that did
// not initialize is of that protocol) and declared URL-mode elicitation.
func inputURL(req *mcp.CallToolRequest) bool {
	caps := req.ClientCapabilities()
	if req.Session == nil || caps == nil || caps.Elicitation == nil || caps.Elicitation.URL == nil {
		return false
	}
	ip := req.Session.InitializeParams()
	return ip == nil || ip.ProtocolVersion >= "2026-07-28"
}

// park asks the inbox about call c, which waits on p, for a client of
// inputURL: once the approval is on the page, the call ends with an
// input-required result holding the page's link in URL mode and the
// state the client retries the call with (resume); the ask goes on
// waiting meanwhile. Answered or refused before a link came (an inbox
// that gives none), the call ends as in askInbox.
func (gw *Gateway) park(ctx context.Context, req *mcp.CallToolRequest, env *gate.Env, t tool.Tool, c gate.Call, p *gate.Pending) (*mcp.CallToolResult, gate.Ruling) {
	s, ok := SessionFrom(ctx)
	if !ok {
		s = gw.session(req)
	}
	release, full := gw.waits.hold(req.Session, s.Client)
	if full != "" {
		return nil, gw.refuseOverCap(ctx, env, c, p, full)
	}
	actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	pa := &parkedAsk{session: s, tool: req.Params.Name, call: c, pending: p, done: make(chan struct{}), cancel: cancel, expires: time.Now().Add(askTTL)}
	if exp := p.Request.ExpiresAt; exp != nil {
		pa.expires = *exp
	}
	links := make(chan string, 1)
	go func() {
		defer release()
		defer cancel()
		defer close(pa.done)
		pa.ans, pa.err = gw.opts.Inbox.Ask(actx, s, c, p, func(link string) {
			select {
			case links <- link:
			default:
			}
		})
	}()
	keep := startKeepAlive(ctx, req, p, cmp.Or(gw.opts.KeepAlive, defaultKeepAlive))
	defer keep.stop()
	select {
	case link := <-links:
		key, full := gw.parked.put(pa, time.Now())
		if key == "" {
			cancel()
			<-pa.done
			return nil, gw.refuseOverCap(ctx, env, c, p, full)
		}
		msg := fmt.Sprintf("The tool call %s waits for a person's approval on tollgate's approvals page (request %s). Open the link to see it; the call goes on once it is answered.", c.Name, p.Request.ID)
		return &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{linkKey: &mcp.ElicitParams{Mode: "url", Message: msg, URL: link, ElicitationID: p.Request.ID}},
			RequestState:  key,
		}, gate.Ruling{}
	case <-pa.done:
		return nil, gw.settle(ctx, env, t, c, p, pa.ans, pa.err)
	case <-ctx.Done():
		cancel()
		<-pa.done
		return nil, gw.settle(ctx, env, t, c, p, pa.ans, pa.err)
	}
}

// resume takes up call c, which the client retries with the state of a
// parked ask: the state must be one given to this session and client
// for this tool and these arguments, and unused. The call waits for the
// ask's answer (what the client answered to the link decides nothing);
// a client that cancels withdraws the ask.
func (gw *Gateway) resume(ctx context.Context, req *mcp.CallToolRequest, env *gate.Env, t tool.Tool, c gate.Call, pa *parkedAsk) (gate.Call, gate.Ruling) {
	s, ok := SessionFrom(ctx)
	if !ok {
		s = gw.session(req)
	}
	if s.ID != pa.session.ID || s.Client != pa.session.Client || req.Params.Name != pa.tool || time.Now().After(pa.expires) {
		pa.cancel()
		rec := gw.gate.End(ctx, env, c, tool.Errorf("this retry is for no call waiting here (unknown, used, expired or another session's); the call did not run"),
			gate.Decision{Outcome: gate.OutcomeDenied, By: approval.Runtime, Reason: "a retry of no ask of this session"})
		return c, gate.Ruling{Record: rec}
	}
	if approval.Digest(c.Args) != approval.Digest(pa.call.Args) {
		pa.cancel()
		rec := gw.gate.End(ctx, env, pa.call, tool.Errorf("the call was retried with other arguments than those asked about; it did not run"),
			gate.Decision{Outcome: gate.OutcomeDenied, By: approval.Runtime, Reason: "arguments digest mismatch", Votes: pa.pending.Votes})
		return pa.call, gate.Ruling{Record: rec}
	}
	keep := startKeepAlive(ctx, req, pa.pending, cmp.Or(gw.opts.KeepAlive, defaultKeepAlive))
	defer keep.stop()
	select {
	case <-pa.done:
	case <-ctx.Done():
		pa.cancel() // no one may approve what no longer waits
		<-pa.done
	}
	return pa.call, gw.settle(ctx, env, t, pa.call, pa.pending, pa.ans, pa.err)
}
