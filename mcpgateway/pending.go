package mcpgateway

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/tool"
)

// maxPendingPerSession is the most calls of one client session that may
// wait for a person at once, on the approvals page or through the
// client's elicitation (docs/gateway.md): a client cannot fill the page,
// or the gateway's memory, with requests no one will read.
const maxPendingPerSession = 32

// tooManyPending is the decision reason of a call refused over the cap.
const tooManyPending = "too many calls of this client session wait for a person"

// pendingCounts counts the calls of each client session that wait on the
// inbox.
type pendingCounts struct {
	mu sync.Mutex
	n  map[*mcp.ServerSession]int
}

// hold counts one more waiting call of s and returns what uncounts it;
// ok is false, and nothing is counted, when s has maxPendingPerSession
// waiting already.
func (pc *pendingCounts) hold(s *mcp.ServerSession) (release func(), ok bool) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.n == nil {
		pc.n = map[*mcp.ServerSession]int{}
	}
	if pc.n[s] >= maxPendingPerSession {
		return nil, false
	}
	pc.n[s]++
	return func() {
		pc.mu.Lock()
		defer pc.mu.Unlock()
		if pc.n[s]--; pc.n[s] <= 0 {
			delete(pc.n, s)
		}
	}, true
}

// refuseOverCap ends call c, which waits on p, refused: its session has
// maxPendingPerSession calls waiting for a person already.
func (gw *Gateway) refuseOverCap(ctx context.Context, env *gate.Env, c gate.Call, p *gate.Pending) gate.Ruling {
	gw.opts.Logger.Warn("mcp gateway: too many calls of a session wait for a person; refusing", "tool", c.Name)
	res := tool.Errorf("%s needs a person's approval, and %d calls of this client session wait for one already (the most a session may have); it did not run: wait for those to be answered, or cancel some, and call again", c.Name, maxPendingPerSession)
	rec := gw.gate.End(ctx, env, c, res, gate.Decision{Outcome: gate.OutcomeDenied, By: approval.Runtime, Reason: tooManyPending, Votes: p.Votes})
	return gate.Ruling{Record: rec}
}
