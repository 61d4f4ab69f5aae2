package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/mcpgateway"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// GatewayOptions serves MCP clients' calls (the gateway: section of
// server.yaml; docs/gateway.md): each client session is a run of the
// token's principal on the approvals page, and a call that needs a person
// is an approval there. With New, a gateway is mounted at /mcp, reached
// with the server's bearer tokens and asking in process; in any case the
// routes of external gateways (`tollgate gateway --server`) are served:
// POST /v1/gate/asks and the others of [serverapi.GateAskRequest].
type GatewayOptions struct {
	// New, if set, builds the gateway mounted at /mcp with inbox, the
	// server's approvals, as its [mcpgateway.Options].Inbox.
	New func(inbox mcpgateway.Inbox) (*mcpgateway.Gateway, error)
	// Tenants, if not empty, are the tenants whose tokens may use /mcp and
	// the /v1/gate routes (403 for the others).
	Tenants []string
	// PageURL is the page's absolute URL ("https://tollgate.example/"),
	// for the link of an approval sent to a client; empty sends none.
	PageURL string
	// HTTP bounds bodies, idle sessions and requests at once; its Verify
	// and Authenticate are the server's own. Nil means the defaults.
	HTTP *mcpgateway.HTTPOptions
}

// gatewayRuns is the server's side of MCP clients' sessions: their runs,
// approvals and records, for the mounted gateway (in process) and for
// external ones (POST /v1/gate/asks). It is the Claude Code endpoint's
// machinery with source mcp.
type gatewayRuns struct {
	cc      *claudeCode
	pageURL string
	// ledger counts the sessions' pending asks by token and tenant, and
	// each token's open sessions (the caps of gatecap.go).
	ledger gateLedger
	// askedMu guards asked: the approval ID of each call an external
	// gateway asked about, by run ID and call ID, for the check of its
	// record (checkGateRecord); at most maxAskedIndex, past which one is
	// forgotten (its record is then found by reading the session's
	// approvals).
	askedMu sync.Mutex
	asked   map[string]string
	// polls are the long polls of external gateways waiting on an ask
	// (GET /v1/gate/asks/{run}/{id}): each holds a connection and a
	// goroutine, as an event stream does.
	polls streamSlots
}

// Caps of the long polls of external gateways at once: per token and per
// tenant (one for each ask its sessions may have pending), and in all.
const (
	maxGatePollsPerPrincipal = maxGatePendingPerPrincipal
	maxGatePollsPerTenant    = maxGatePendingPerTenant
	maxGatePolls             = 4096
)

// maxAskedIndex bounds gatewayRuns.asked (about 200 bytes an entry).
const maxAskedIndex = 1 << 16

// noteAsked notes that the call callID of runID was asked about as the
// approval id.
func (g *gatewayRuns) noteAsked(runID, callID, id string) {
	g.askedMu.Lock()
	defer g.askedMu.Unlock()
	if g.asked == nil {
		g.asked = map[string]string{}
	}
	if len(g.asked) >= maxAskedIndex {
		for k := range g.asked {
			delete(g.asked, k)
			break
		}
	}
	g.asked[runID+"\x00"+callID] = id
}

// askedFor returns the approval ID the call callID of runID was asked
// about as, if noteAsked kept it.
func (g *gatewayRuns) askedFor(runID, callID string) (string, bool) {
	g.askedMu.Lock()
	defer g.askedMu.Unlock()
	id, ok := g.asked[runID+"\x00"+callID]
	return id, ok
}

func newGatewayRuns(s *Server, pageURL string) *gatewayRuns {
	return &gatewayRuns{cc: &claudeCode{s: s, source: gate.SourceMCP, runs: map[string]*sync.Mutex{}}, pageURL: pageURL,
		polls: streamSlots{max: maxGatePolls, perPrincipal: maxGatePollsPerPrincipal, perTenant: maxGatePollsPerTenant, open: map[string]int{}}}
}

// mountGateway builds the gateway of o and serves it at /mcp.
func (s *Server) mountGateway(o *GatewayOptions) error {
	s.gate = newGatewayRuns(s, o.PageURL)
	s.gateTenants = o.Tenants
	if o.New == nil {
		return nil
	}
	gw, err := o.New(mcpgateway.Inbox(inProcessInbox{s.gate}))
	if err != nil {
		return err
	}
	var h mcpgateway.HTTPOptions
	if o.HTTP != nil {
		h = *o.HTTP
	}
	h.Verify = nil
	h.Authenticate = func(token string) (mcpgateway.Client, error) {
		p, ok := s.lookupToken(token)
		if !ok {
			return mcpgateway.Client{}, mcpgateway.ErrUnknownToken
		}
		if err := mayCallTools(p, o.Tenants); err != nil {
			return mcpgateway.Client{}, err
		}
		return mcpgateway.Client{Principal: p.decider(), Tenant: p.Tenant}, nil
	}
	s.mcp = gw.Handler(&h)
	return nil
}

// mayCallTools is [MayCallTools] for a gateway open to tenants only (all
// when empty).
func mayCallTools(p Principal, tenants []string) error {
	if len(tenants) > 0 && !slices.Contains(tenants, p.Tenant) {
		return fmt.Errorf("the token of %s belongs to tenant %q, which may not use this gateway", p.Name, p.Tenant)
	}
	return MayCallTools(p)
}

// MayCallTools reports why p may not call tools through an MCP gateway
// (nil when it may): it needs the agent role, and no role that decides
// approvals, since the agent behind a client can read the client's token
// and one that may decide would approve its own asks (docs/gateway.md).
func MayCallTools(p Principal) error {
	if p.Has(RoleApprover) {
		return fmt.Errorf("the token of %s may decide approvals, and an MCP client's agent can read its token: give the client a token with the agent role alone (tollgate serve token --role agent)", p.Name)
	}
	if !p.Has(RoleAgent) {
		return fmt.Errorf("calling tools through the gateway needs the agent role; the token of %s has %v", p.Name, p.Roles)
	}
	return nil
}

// inProcessInbox is the mounted gateway's inbox: its clients' principals
// come from the server's own tokens.
type inProcessInbox struct{ g *gatewayRuns }

func (i inProcessInbox) Ask(ctx context.Context, s mcpgateway.Session, c gate.Call, p *gate.Pending, posted func(string)) (*tool.Answer, error) {
	who := Principal{Name: s.Client.Principal.Name, Tenant: s.Client.Tenant}
	run, err := i.g.open(ctx, who, s)
	if err != nil {
		return nil, err
	}
	a := i.g.asker(run, p)
	a.admit = func(ctx context.Context) (func(), error) { return i.g.admit(ctx, who, run, p) }
	if err := a.post(ctx, nil, c, p); err != nil {
		return nil, err
	}
	defer a.running(context.WithoutCancel(ctx))
	defer i.g.ledger.done(run.Tenant, run.ID, p.Request.ID)
	if i.g.pageURL != "" && posted != nil {
		posted(pageLink(i.g.pageURL, run.ID))
	}
	return a.answer(ctx, p.Request.ID)
}

func (i inProcessInbox) Record(ctx context.Context, s mcpgateway.Session, rec gate.Record) {
	if err := i.g.record(ctx, Principal{Name: s.Client.Principal.Name, Tenant: s.Client.Tenant}, s, rec); err != nil {
		i.g.cc.s.log.Error("mcp session record", "error", err)
	}
}

func (i inProcessInbox) End(ctx context.Context, s mcpgateway.Session) {
	i.g.end(ctx, Principal{Name: s.Client.Principal.Name, Tenant: s.Client.Tenant}, s)
}

// end marks the run of session s of p done, if it has one that has not
// ended.
func (g *gatewayRuns) end(ctx context.Context, p Principal, s mcpgateway.Session) {
	id := sessionRunID(gate.SourceMCP, p, s.ID)
	g.ledger.endSession(p, id)
	run, err := g.cc.s.store.GetRun(ctx, id)
	if err != nil || run.Status.Finished() {
		return
	}
	g.cc.end(ctx, run)
}

// open returns the run of session s of p; a *gateFullError when s is
// new and p has maxGateSessions sessions open already.
func (g *gatewayRuns) open(ctx context.Context, p Principal, s mcpgateway.Session) (store.Run, error) {
	if s.ID == "" {
		return store.Run{}, errors.New("a session without an ID")
	}
	if err := g.ledger.openSession(p, sessionRunID(gate.SourceMCP, p, s.ID), g.cc.s.now()); err != nil {
		return store.Run{}, err
	}
	// The client's words: shown, bounded, never trusted.
	name, version := clientText(s.Name, 200), clientText(s.Version, 100)
	agent := "mcp-client"
	if name != "" {
		agent = name
	}
	cfg := sessionConfig{Agent: agent, Source: string(gate.SourceMCP), Session: s.ID, Workspace: clientText(s.Workspace, 4096)}
	if name != "" || version != "" {
		cfg.Client = &sessionClient{Name: name, Version: version}
	}
	return g.cc.openSession(ctx, p, cfg)
}

// asker waits for the approval of p until the request expires.
func (g *gatewayRuns) asker(run store.Run, p *gate.Pending) *storeAsker {
	wait := defaultClaudeMaxWait
	if exp := p.Request.ExpiresAt; exp != nil {
		wait = max(time.Until(*exp), 0)
	}
	return &storeAsker{cc: g.cc, run: run, wait: wait, unanswered: "no answer before the request expired"}
}

// record appends rec to the run of session s of p; the error is open's.
func (g *gatewayRuns) record(ctx context.Context, p Principal, s mcpgateway.Session, rec gate.Record) error {
	run, err := g.recordRun(ctx, p, s)
	if err != nil {
		return err
	}
	rec.RunID = run.ID
	g.cc.record(ctx, run, rec)
	return nil
}

// recordRun returns the run a record of session s of p goes to: the
// session's run as it ended, when it did (the record of a call withdrawn
// as its client went away comes after the session's end), which neither
// goes on nor counts as open again; else open's.
func (g *gatewayRuns) recordRun(ctx context.Context, p Principal, s mcpgateway.Session) (store.Run, error) {
	if s.ID != "" {
		run, err := g.cc.s.store.GetRun(ctx, sessionRunID(gate.SourceMCP, p, s.ID))
		if err == nil && run.Status.Finished() {
			return run, nil
		}
	}
	return g.open(ctx, p, s)
}

// admit counts the ask of pending in run, a session's run of p, against
// the caps of p's and p's tenant's pending asks (gateLedger.admit).
func (g *gatewayRuns) admit(ctx context.Context, p Principal, run store.Run, pending *gate.Pending) (undo func(), err error) {
	a := gateAsk{runID: run.ID, id: pending.Request.ID}
	if exp := pending.Request.ExpiresAt; exp != nil {
		a.expires = *exp
	}
	st := g.cc.s.store
	stillPending := func(ctx context.Context, runID, id string) bool {
		ap, err := st.GetApproval(ctx, runID, id)
		if errors.Is(err, store.ErrNotFound) {
			return false // its run was deleted
		}
		return err != nil || ap.Status == store.StatusPending // a failed read keeps the count: fail closed
	}
	return g.ledger.admit(ctx, p, a, g.cc.s.now(), stillPending)
}

// pageLink is the page's link to a run: the run's view, with its pending
// approvals.
func pageLink(page, runID string) string {
	return strings.TrimRight(page, "/") + "/#run=" + url.PathEscape(runID)
}

// gatewayRoute serves /mcp when a gateway is mounted (404 otherwise).
func (s *Server) gatewayRoute(w http.ResponseWriter, r *http.Request) {
	if s.mcp == nil {
		s.noRoute(w, r)
		return
	}
	s.mcp.ServeHTTP(w, r)
}

// clientText is what an MCP client said of itself (its name, version,
// workspace), as kept and shown: control characters (C0, DEL, C1) dropped,
// so that it cannot move a terminal's cursor or forge a line, and cut to at
// most n bytes at a character boundary.
func clientText(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1
		}
		return r
	}, s)
	return cutAt(s, n)
}

// cutAt cuts s to at most n bytes at a character boundary.
func cutAt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
