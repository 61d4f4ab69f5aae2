package server

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/store"
)

// The caps on MCP clients' sessions and asks (docs/gateway.md, "Caps"):
// a session's, a token's and a tenant's pending approvals, and a token's
// open sessions. The gateway caps its clients so (package mcpgateway);
// the server holds them too, since a gateway's token is an agent's and
// the gateway chooses its session IDs: without a cap per token, five
// session IDs gave 160 pending approvals.
const (
	// maxGatePending is the most approvals one session may have pending.
	maxGatePending = 32
	// maxGatePendingPerPrincipal is the most approvals one token's
	// sessions may have pending together.
	maxGatePendingPerPrincipal = 64
	// maxGatePendingPerTenant is the most approvals the sessions of one
	// tenant's tokens may have pending together.
	maxGatePendingPerTenant = 256
	// maxGateSessions is the most sessions one token may have open: a
	// session is open from its first ask or record until it ends (POST
	// /v1/gate/sessions/end, or its connection to the mounted gateway
	// closes) or has been idle for gateSessionIdle.
	maxGateSessions = 32
	// gateSessionIdle is how long a session no ask or record touched
	// counts as open.
	gateSessionIdle = 30 * time.Minute
	// gateRefreshEvery is the least time between two reads of a tenant's
	// counted asks in the store, at a cap: an ask decided on this server
	// leaves the count at once, so a read finds only asks decided
	// elsewhere (another server on the store); reading at every refused
	// ask let a token at its cap make each ask read up to 256 approvals.
	gateRefreshEvery = time.Second
)

// gateFullError refuses an ask or a session over a cap; its text says
// which, for the client's person (429 on the HTTP routes).
type gateFullError struct{ msg string }

func (e *gateFullError) Error() string { return e.msg }

// errGatePendingFull refuses an ask of a session that has maxGatePending
// approvals pending already.
var errGatePendingFull = &gateFullError{fmt.Sprintf("this session has %d approvals pending already, the most one session may have: wait for one to be answered, or withdraw one", maxGatePending)}

// gatePendingFull reports whether run, a session's run of tenant, has
// maxGatePending approvals pending that have not expired at now.
func (s *Server) gatePendingFull(ctx context.Context, run store.Run, now time.Time) (bool, error) {
	n := 0
	for ap, err := range store.AllApprovals(ctx, s.store, store.ApprovalFilter{Tenant: run.Tenant, RunID: run.ID, Status: store.StatusPending}) {
		if err != nil {
			return false, err
		}
		if !ap.Expired(now) {
			n++
		}
		if n >= maxGatePending {
			return true, nil
		}
	}
	return false, nil
}

// gateLedger counts, in memory, the pending asks of MCP clients' sessions
// by token and by tenant, and the sessions each token has open. An ask
// leaves it when its caller learns its end (answered, withdrawn), when a
// person decides it on this server, or at its expiry; one decided through
// another server on the store is found out by reading the store when a
// count reaches its cap (at most every gateRefreshEvery).
type gateLedger struct {
	mu      sync.Mutex
	tenants map[string]*tenantAsks
	// sessions are the open sessions of each token (principalKey): their
	// runs and when an ask or record last touched them.
	sessions map[string]map[string]time.Time
}

// tenantAsks are the pending asks of one tenant's sessions, by
// runID+"\x00"+approvalID; mu is held while they are counted, so that
// asks at once are counted one after another, and one tenant's reads
// of the store do not hold another's asks.
type tenantAsks struct {
	mu        sync.Mutex
	asks      map[string]gateAsk
	refreshed time.Time // when the store was last read for them
}

// gateAsk is one pending ask of the ledger.
type gateAsk struct {
	principal string // principalKey of the token
	runID, id string
	expires   time.Time // zero: none
}

func (l *gateLedger) tenant(name string) *tenantAsks {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tenants == nil {
		l.tenants = map[string]*tenantAsks{}
	}
	t, ok := l.tenants[name]
	if !ok {
		t = &tenantAsks{asks: map[string]gateAsk{}}
		l.tenants[name] = t
	}
	return t
}

// admit counts ask a of p, or refuses it with a *gateFullError when p's
// sessions or p's tenant's have their cap of pending asks; pending reads
// whether an ask counted is still pending in the store (asked only at a
// cap). undo uncounts a, for an ask that was then not stored; an ask
// counted already (its ID posted again) is not counted twice, and its undo
// uncounts nothing.
func (l *gateLedger) admit(ctx context.Context, p Principal, a gateAsk, now time.Time, pending func(ctx context.Context, runID, id string) bool) (undo func(), err error) {
	t := l.tenant(p.Tenant)
	t.mu.Lock()
	defer t.mu.Unlock()
	a.principal = principalKey(p)
	mine, all := t.count(a.principal, now)
	if (mine >= maxGatePendingPerPrincipal || all >= maxGatePendingPerTenant) && now.Sub(t.refreshed) >= gateRefreshEvery {
		t.refresh(ctx, pending)
		t.refreshed = now
		mine, all = t.count(a.principal, now)
	}
	switch {
	case mine >= maxGatePendingPerPrincipal:
		return nil, &gateFullError{fmt.Sprintf("the sessions of %s have %d approvals pending already, the most one token may have across its sessions: wait for some to be answered, or withdraw some", p.Name, maxGatePendingPerPrincipal)}
	case all >= maxGatePendingPerTenant:
		return nil, &gateFullError{fmt.Sprintf("the MCP clients of this tenant have %d approvals pending already, the most one tenant may have: wait for some to be answered, or withdraw some", maxGatePendingPerTenant)}
	}
	key := a.runID + "\x00" + a.id
	if _, ok := t.asks[key]; ok {
		// Asked again: the ask counted is the one stored, and this one
		// is refused as a duplicate; its undo must not uncount that one.
		return func() {}, nil
	}
	t.asks[key] = a
	return func() { l.done(p.Tenant, a.runID, a.id) }, nil
}

// count drops the asks expired at now and counts those of principal and
// all.
func (t *tenantAsks) count(principal string, now time.Time) (mine, all int) {
	for k, a := range t.asks {
		if !a.expires.IsZero() && !now.Before(a.expires) {
			delete(t.asks, k)
			continue
		}
		all++
		if a.principal == principal {
			mine++
		}
	}
	return mine, all
}

// refresh drops the asks the store no longer has pending.
func (t *tenantAsks) refresh(ctx context.Context, pending func(ctx context.Context, runID, id string) bool) {
	for k, a := range t.asks {
		if !pending(ctx, a.runID, a.id) {
			delete(t.asks, k)
		}
	}
}

// done uncounts the ask id of runID of tenant: it no longer waits. A
// tenant with no ask counted (most decisions are of runs, not of MCP
// clients' asks) gets no entry.
func (l *gateLedger) done(tenant, runID, id string) {
	l.mu.Lock()
	t, ok := l.tenants[tenant]
	l.mu.Unlock()
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.asks, runID+"\x00"+id)
}

// openSession counts runID, a session's run, as open for p (touched at
// now), or refuses it with a *gateFullError when p has maxGateSessions
// other sessions open; a session idle for gateSessionIdle no longer
// counts.
func (l *gateLedger) openSession(p Principal, runID string, now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sessions == nil {
		l.sessions = map[string]map[string]time.Time{}
	}
	key := principalKey(p)
	open := l.sessions[key]
	if _, ok := open[runID]; ok {
		open[runID] = now
		return nil
	}
	for id, seen := range open {
		if now.Sub(seen) >= gateSessionIdle {
			delete(open, id)
		}
	}
	if len(open) >= maxGateSessions {
		return &gateFullError{fmt.Sprintf("%s has %d MCP client sessions open already, the most one token may have: end one (its connection, or POST /v1/gate/sessions/end) or wait until one has been idle for %s", p.Name, maxGateSessions, gateSessionIdle)}
	}
	if open == nil {
		open = map[string]time.Time{}
		l.sessions[key] = open
	}
	open[runID] = now
	return nil
}

// endSession uncounts runID, a session's run of p, which ended.
func (l *gateLedger) endSession(p Principal, runID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	key := principalKey(p)
	delete(l.sessions[key], runID)
	if len(l.sessions[key]) == 0 {
		delete(l.sessions, key)
	}
}
