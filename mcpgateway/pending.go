package mcpgateway

import (
	"context"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/tool"
)

// The caps on calls that wait for a person at once, on the approvals page
// or through the client's elicitation (docs/gateway.md): a client cannot
// fill the page, or the gateway's memory, with requests no one will read,
// and since a client chooses how many sessions it opens, a token and a
// tenant are capped across their sessions too.
const (
	// maxPendingPerSession is the most for one client session.
	maxPendingPerSession = 32
	// maxPendingPerClient is the most for the sessions of one token (the
	// client's principal and tenant; all tokenless sessions are one).
	maxPendingPerClient = 64
	// maxPendingPerTenant is the most for the sessions of one tenant's
	// tokens.
	maxPendingPerTenant = 256
)

// sessionFull says that a session's cap is full, in [Gateway.refuseOverCap]'s
// sentence.
var sessionFull = fmt.Sprintf("%d calls of this client session wait for one already (the most a session may have)", maxPendingPerSession)

// tooManyPending is the decision reason of a call refused over a cap.
const tooManyPending = "too many calls of this client wait for a person"

// pendingCounts counts the calls that wait on the inbox, by client
// session, by token and by tenant.
type pendingCounts struct {
	mu      sync.Mutex
	session map[*mcp.ServerSession]int
	client  map[Client]int
	tenant  map[string]int
}

// hold counts one more waiting call of session ss of client c and
// returns what uncounts it; when a cap is full it counts nothing and
// returns the sentence that says which (for the client's person).
func (pc *pendingCounts) hold(ss *mcp.ServerSession, c Client) (release func(), full string) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.session == nil {
		pc.session, pc.client, pc.tenant = map[*mcp.ServerSession]int{}, map[Client]int{}, map[string]int{}
	}
	switch {
	case pc.session[ss] >= maxPendingPerSession:
		return nil, sessionFull
	case pc.client[c] >= maxPendingPerClient:
		return nil, fmt.Sprintf("%d calls of this client's sessions wait for one already (the most one token may have across its sessions)", maxPendingPerClient)
	case pc.tenant[c.Tenant] >= maxPendingPerTenant:
		return nil, fmt.Sprintf("%d calls of this tenant's clients wait for one already (the most one tenant may have)", maxPendingPerTenant)
	}
	pc.session[ss]++
	pc.client[c]++
	pc.tenant[c.Tenant]++
	return func() {
		pc.mu.Lock()
		defer pc.mu.Unlock()
		down(pc.session, ss)
		down(pc.client, c)
		down(pc.tenant, c.Tenant)
	}, ""
}

// down uncounts one of k in m, dropping k at zero.
func down[K comparable](m map[K]int, k K) {
	if m[k]--; m[k] <= 0 {
		delete(m, k)
	}
}

// refuseOverCap ends call c, which waits on p, refused: a cap of calls
// waiting for a person is full, as full says.
func (gw *Gateway) refuseOverCap(ctx context.Context, env *gate.Env, c gate.Call, p *gate.Pending, full string) gate.Ruling {
	gw.opts.Logger.Warn("mcp gateway: too many calls wait for a person; refusing", "tool", c.Name)
	res := tool.Errorf("%s needs a person's approval, and %s; it did not run: wait for those to be answered, or cancel some, and call again", c.Name, full)
	rec := gw.gate.End(ctx, env, c, res, gate.Decision{Outcome: gate.OutcomeDenied, By: approval.Runtime, Reason: tooManyPending, Votes: p.Votes})
	return gate.Ruling{Record: rec}
}
