package mcpgateway

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/tool"
)

// Inbox is where a person answers the calls of the gateway's clients that
// need one: the approvals page of `tollgate serve` (package server, in
// process when the gateway is mounted there, over HTTP with `tollgate
// gateway --server`). Its methods are called concurrently.
type Inbox interface {
	// Ask makes p's request an approval of session s's run and waits for
	// its answer until the request expires (p.Request.ExpiresAt) or ctx
	// ends. posted, when the approval is stored, gets the absolute URL of
	// the page that shows it. A nil answer and a nil error: no one answered
	// in time. An error: the approval could not be made or read (the call
	// is refused: fail closed). An inbox withdraws the approval when ctx
	// ends first, so that no one approves what no longer waits.
	Ask(ctx context.Context, s Session, c gate.Call, p *gate.Pending, posted func(link string)) (*tool.Answer, error)
	// Record hands on the record of a call of s, that the session's run
	// shows it. It must not block for long; a failure is the inbox's to log.
	Record(ctx context.Context, s Session, rec gate.Record)
	// End says that session s ended (its connection closed): its run, if
	// it has one, is done. Called once per session that made a call; it
	// must not block for long.
	End(ctx context.Context, s Session)
}

// Session is a client session as an [Inbox] sees it: on the approvals page
// each is a run whose owner is the client's principal.
type Session struct {
	// ID is the session's ID: the streamable HTTP session's, or the
	// gateway's RunID on stdio.
	ID string `json:"id"`
	// Client is who the session's token says it is (zero on stdio).
	Client Client `json:"client,omitzero"`
	// Name and Version are the client's implementation, as it gave them in
	// initialize ("claude-code", "2.1.0"); empty when it gave none. They
	// are the client's word, shown, never trusted.
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
	// Workspace is the gateway's workspace.
	Workspace string `json:"workspace,omitempty"`
}

// Client is who a client is, as its bearer token says: the principal that
// asks for its calls and the tenant it belongs to ("" the default one).
type Client struct {
	Principal tool.Principal `json:"principal,omitzero"`
	Tenant    string         `json:"tenant,omitempty"`
}

// defaultKeepAlive is the default of [Options].KeepAlive.
const defaultKeepAlive = 15 * time.Second

// sessionKey carries the session of a call to the records it makes.
type sessionKey struct{}

// session is the inbox's view of req's session.
func (gw *Gateway) session(req *mcp.CallToolRequest) Session {
	s := gw.sessionOf(req.Session, req.Extra)
	if s.Client.Principal.IsZero() {
		s.Client.Principal = gw.opts.Principal(req)
	}
	return s
}

// sessionOf is the inbox's view of ss, whose request came with extra.
func (gw *Gateway) sessionOf(ss *mcp.ServerSession, extra *mcp.RequestExtra) Session {
	s := Session{ID: gw.opts.RunID, Client: extraClient(extra), Workspace: gw.opts.Workspace}
	if ss != nil {
		if id := ss.ID(); id != "" {
			s.ID = id
		}
		if ip := ss.InitializeParams(); ip != nil && ip.ClientInfo != nil {
			s.Name, s.Version = abbreviate(ip.ClientInfo.Name, 200), abbreviate(ip.ClientInfo.Version, 100)
		}
	}
	return s
}

// watchEnd tells the inbox when the session of s, whose call it hears
// of, ends: once, when its connection closes.
func (gw *Gateway) watchEnd(ss *mcp.ServerSession, s Session) {
	if ss == nil {
		return
	}
	if _, seen := gw.live.LoadOrStore(ss, true); seen {
		return
	}
	go func() {
		_ = ss.Wait()
		gw.live.Delete(ss)
		gw.opts.Inbox.End(context.Background(), s)
	}()
}

// withSession returns ctx carrying req's session for the inbox's records;
// without an inbox, ctx itself.
func (gw *Gateway) withSession(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	if gw.opts.Inbox == nil {
		return ctx
	}
	s := gw.session(req)
	gw.watchEnd(req.Session, s)
	return context.WithValue(ctx, sessionKey{}, s)
}

// SessionFrom returns the client session of a call the gateway decides,
// from the call's context (as hooks and authorizers receive it): who the
// client's token says it is and its tenant. It is found only when the
// gateway has an [Options].Inbox; ok is false otherwise.
func SessionFrom(ctx context.Context) (s Session, ok bool) {
	s, ok = ctx.Value(sessionKey{}).(Session)
	return s, ok
}

// inboxRecords returns onRecord that also hands every record of a session
// to inbox.
func inboxRecords(inbox Inbox, onRecord func(context.Context, gate.Record)) func(context.Context, gate.Record) {
	return func(ctx context.Context, rec gate.Record) {
		if onRecord != nil {
			onRecord(ctx, rec)
		}
		if s, ok := ctx.Value(sessionKey{}).(Session); ok {
			inbox.Record(context.WithoutCancel(ctx), s, rec)
		}
	}
}

// askInbox puts a call that waits on p to the inbox and waits for a
// person's answer: the client gets progress notifications meanwhile, and
// the page's link through URL-mode elicitation when it declared that. No
// answer by the request's expiry, an inbox that fails, a tool whose
// definition changed meanwhile, or a session with maxPendingPerSession
// calls waiting already: the call is refused.
func (gw *Gateway) askInbox(ctx context.Context, req *mcp.CallToolRequest, env *gate.Env, t tool.Tool, c gate.Call, p *gate.Pending) gate.Ruling {
	s, ok := SessionFrom(ctx) // the call's ([Gateway.withSession])
	if !ok {
		s = gw.session(req)
	}
	release, full := gw.waits.hold(req.Session, s.Client)
	if full != "" {
		return gw.refuseOverCap(ctx, env, c, p, full)
	}
	defer release()
	keep := startKeepAlive(ctx, req, p, cmp.Or(gw.opts.KeepAlive, defaultKeepAlive))
	defer keep.stop()
	posted := func(link string) {
		keep.posted(link)
		if urlElicitation(req) {
			go gw.sendLink(ctx, keep.done, req.Session, c, p, link)
		}
	}
	ans, err := gw.opts.Inbox.Ask(ctx, s, c, p, posted)
	return gw.settle(ctx, env, t, c, p, ans, err)
}

// settle ends call c, which waited on p, with what the inbox said (ans,
// err): withdrawn when ctx ended, refused on an error or no answer, or
// refused when t's definition changed meanwhile; else decided with the
// person's answer.
func (gw *Gateway) settle(ctx context.Context, env *gate.Env, t tool.Tool, c gate.Call, p *gate.Pending, ans *tool.Answer, err error) gate.Ruling {
	switch {
	case ctx.Err() != nil:
		rec := gw.gate.End(ctx, env, c, tool.Errorf("the client withdrew the call while it waited for a person's approval; it did not run"),
			gate.Decision{Outcome: gate.OutcomeDenied, By: approval.Runtime, Reason: "withdrawn by the client while waiting", Votes: p.Votes})
		return gate.Ruling{Record: rec}
	case err != nil:
		gw.opts.Logger.Warn("mcp gateway: the approvals page could not be asked; refusing", "tool", c.Name, "error", err)
		rec := gw.gate.End(ctx, env, c, tool.Errorf("%s needs a person's approval and the approvals page could not be asked (%v), so it did not run", c.Name, err),
			gate.Decision{Outcome: gate.OutcomeDenied, By: approval.Runtime, Reason: "approval failed: " + err.Error(), Votes: p.Votes})
		return gate.Ruling{Record: rec}
	case ans == nil:
		when := "its time ran out"
		if p.Request.ExpiresAt != nil {
			when = "it expired at " + p.Request.ExpiresAt.UTC().Format(time.RFC3339)
		}
		rec := gw.gate.End(ctx, env, c, tool.Errorf("no one answered the approval request %s for %s on the approvals page before %s; the call did not run", p.Request.ID, c.Name, when),
			gate.Decision{Outcome: gate.OutcomeExpired, By: approval.Runtime, Reason: "no answer in time", Votes: p.Votes})
		return gate.Ruling{Record: rec}
	}
	if ok, pinned, now, perr := gw.pins.check(t); !ok || perr != nil {
		rec := gw.gate.End(ctx, env, c, tool.Errorf("the definition of %s changed while its approval was asked (digest %.12s, now %.12s); it did not run", c.Name, pinned, now),
			gate.Decision{Outcome: gate.OutcomeDenied, By: approval.Runtime, Reason: "tool definition changed (rug pull guard)", Votes: p.Votes})
		return gate.Ruling{Record: rec}
	}
	return gw.gate.Decide(ctx, env, c, p, ans)
}

// sendLink gives the client the page's link for the approval through
// URL-mode elicitation (MCP specification 2025-11-25, "Client:
// Elicitation", URL mode). What the client answers is ignored: only the
// page decides. Once the call is over, the client is told the elicitation
// is complete.
func (gw *Gateway) sendLink(ctx context.Context, done <-chan struct{}, ss *mcp.ServerSession, c gate.Call, p *gate.Pending, link string) {
	id := p.Request.ID
	msg := fmt.Sprintf("The tool call %s waits for a person's approval on tollgate's approvals page (request %s).", c.Name, id)
	if _, err := ss.Elicit(ctx, &mcp.ElicitParams{Mode: "url", Message: msg, URL: link, ElicitationID: id}); err != nil && ctx.Err() == nil {
		gw.opts.Logger.Info("mcp gateway: the approval's link could not be sent", "tool", c.Name, "error", err)
		return
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
	_ = ss.NotifyElicitationComplete(context.WithoutCancel(ctx), &mcp.ElicitationCompleteParams{ElicitationID: id})
}

// urlElicitation reports whether req's client declared URL-mode
// elicitation and takes a request from the server during a call: a client
// of protocol 2026-07-28 takes one only in a call's result (multi
// round-trip requests), which [Gateway.park] makes (inputURL).
func urlElicitation(req *mcp.CallToolRequest) bool {
	caps := req.ClientCapabilities()
	if req.Session == nil || caps == nil || caps.Elicitation == nil || caps.Elicitation.URL == nil {
		return false
	}
	ip := req.Session.InitializeParams()
	return ip != nil && ip.ProtocolVersion != "" && ip.ProtocolVersion < "2026-07-28"
}

// keepAlive sends a call's progress notifications while it waits; done
// is closed when the wait is over.
type keepAlive struct {
	link chan string
	done chan struct{}
}

// startKeepAlive sends req's client a progress notification once the
// approval is posted and then every interval until stop, when it gave a
// progress token.
func startKeepAlive(ctx context.Context, req *mcp.CallToolRequest, p *gate.Pending, every time.Duration) *keepAlive {
	k := &keepAlive{link: make(chan string, 1), done: make(chan struct{})}
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return k
	}
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		msg := "waiting for a person's approval on tollgate's approvals page"
		n := 0.0
		send := func() {
			n++
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: n, Message: msg})
		}
		for {
			select {
			case <-k.done:
				return
			case <-ctx.Done():
				return
			case link := <-k.link:
				msg = "waiting for a person's approval of request " + p.Request.ID + " on tollgate's approvals page: " + link
				send()
			case <-tick.C:
				send()
			}
		}
	}()
	return k
}

// posted tells the client the page's link in the next notification, at once.
func (k *keepAlive) posted(link string) {
	select {
	case k.link <- link:
	default:
	}
}

func (k *keepAlive) stop() {
	select {
	case <-k.done:
	default:
		close(k.done)
	}
}
