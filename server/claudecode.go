package server

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/claudegate"
	"github.com/tollgate-dev/tollgate/internal/claudenames"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// ClaudeCodeOptions governs Claude Code sessions through the server (the
// claudeCode: section of server.yaml): POST /v1/hooks/claude-code answers
// Claude Code's hook events, deciding with these policies, and each session
// is a run of the token's principal with every call, decision and result.
type ClaudeCodeOptions struct {
	// Policies decide every call (the team's policy, with its autonomy
	// level), combined deny > ask > allow.
	Policies []*policy.Policy
	// PolicyFile, if set, is the file of the policy among Policies (the
	// section's policy:): where a card and the audit find the line of the
	// rule that asked, and what GET /v1/agents/{claude-code,codex}/policy
	// shows. It decides nothing itself.
	PolicyFile string
	// Listener, if set, hears the calls that run (seed 000's hooks).
	Listener hooks.ToolCallListener
	// ApprovalTTL, if positive, bounds how long an approval request stays
	// answerable.
	ApprovalTTL time.Duration
	// Tenants, if not empty, are the tenants whose tokens may use the
	// endpoint (404 for the others).
	Tenants []string
	// StateDir holds the sessions' calls between PreToolUse and
	// PostToolUse. Required.
	StateDir string
	// MaxWait bounds ?wait= (default 10 minutes).
	MaxWait time.Duration
}

// defaultClaudeMaxWait is the default of ClaudeCodeOptions.MaxWait.
const defaultClaudeMaxWait = 10 * time.Minute

// claudeCode is the server's Claude Code endpoint.
type claudeCode struct {
	s      *Server
	opts   ClaudeCodeOptions
	source gate.Source // claude-code or codex: the agent whose hooks it answers
	mu     sync.Mutex
	runs   map[string]*sync.Mutex // per session run: its records are read, changed and written
}

func (s *Server) claudeHook(w http.ResponseWriter, r *http.Request, p Principal) {
	s.agentHook(s.claude, w, r, p)
}

// codexHook is POST /v1/hooks/codex: Codex CLI's hook events, answered
// by the same bridge in the JSON Codex shares with Claude Code.
func (s *Server) codexHook(w http.ResponseWriter, r *http.Request, p Principal) {
	s.agentHook(s.codex, w, r, p)
}

func (s *Server) agentHook(cc *claudeCode, w http.ResponseWriter, r *http.Request, p Principal) {
	if cc == nil || (len(cc.opts.Tenants) > 0 && !slices.Contains(cc.opts.Tenants, p.Tenant)) {
		s.noRoute(w, r)
		return
	}
	// Every failure from here on is a deny in the agent's terms (a 200 with
	// its JSON): an http hook's error status lets the call run.
	//
	// The agent's shell can read the token its hooks hold: a token that
	// may also decide approvals would let the agent approve its own asks.
	if p.Has(RoleApprover) {
		writeClaude(w, claudegate.Failed("", "this token may decide approvals, and the agent can read it: give the agent's hooks a token with the agent role alone (tollgate serve token --role agent)"))
		return
	}
	wait, err := cc.wait(r)
	if err != nil {
		writeClaude(w, claudegate.Failed("", err.Error()))
		return
	}
	in, err := claudegate.ParseInput(http.MaxBytesReader(w, r.Body, claudegate.MaxInputBytes))
	if err != nil {
		writeClaude(w, claudegate.Failed("", err.Error()))
		return
	}
	writeClaude(w, cc.handle(r.Context(), p, in, wait, r.Header.Get(serverapi.HeaderAsk)))
}

func (cc *claudeCode) wait(r *http.Request) (time.Duration, error) {
	max := cc.opts.MaxWait
	if max <= 0 {
		max = defaultClaudeMaxWait
	}
	return queryWait(r, min(serverapi.DefaultClaudeWait, max), max)
}

func writeClaude(w http.ResponseWriter, a claudegate.Answer) {
	out := a.Output
	if out == nil {
		out = &claudegate.Output{}
	}
	writeJSON(w, http.StatusOK, out)
}

// handle answers one event of principal p's session.
func (cc *claudeCode) handle(ctx context.Context, p Principal, in *claudegate.Input, wait time.Duration, localAsk string) claudegate.Answer {
	run, err := cc.session(ctx, p, in)
	if err != nil {
		cc.s.log.Error("agent session", "source", cc.source, "error", err)
		return claudegate.Failed(in.HookEventName, "tollgate's server could not open the session's run")
	}
	in.SessionID = run.ID
	asker := &storeAsker{cc: cc, run: run, wait: wait}
	opts := &claudegate.Options{
		Policies: cc.opts.Policies, Listener: cc.opts.Listener, StateDir: cc.opts.StateDir,
		Principal: p.decider(), ApprovalTTL: cc.opts.ApprovalTTL, Logger: cc.s.log, Source: cc.source,
		Asker:    asker,
		OnRecord: func(ctx context.Context, rec gate.Record) { cc.record(ctx, run, rec) },
	}
	if localAsk != "" {
		opts.Authorizers = []approval.Authorizer{localAsker{reason: localAsk, source: cc.source}}
	}
	if cc.s.layers != nil {
		// The tenant's rule layer decides the session's calls too; paths
		// are compared as the agent wrote them (absolute in Claude Code).
		get := cc.s.layers.Getter(p.Tenant, "")
		opts.Authorizers, opts.Hooks = runcore.LayerVotes(opts.Authorizers, opts.Hooks, get)
	}
	b, err := claudegate.New(opts)
	if err != nil {
		return claudegate.Failed(in.HookEventName, err.Error())
	}
	asker.bridge = b
	a := b.Handle(ctx, in)
	// Codex has no SessionEnd: its session's run is done at each Stop,
	// and goes on at its next event.
	if in.HookEventName == claudenames.SessionEnd || (cc.source == gate.SourceCodex && in.HookEventName == claudenames.Stop) {
		cc.end(ctx, run)
	}
	return a
}

// localAsker is the hook's own policy's ask, heard by the server: it asks,
// and never allows or denies. It is named after the agent:
// hook:claude-code-local-policy, hook:codex-local-policy.
type localAsker struct {
	reason string
	source gate.Source
}

func (l localAsker) Authorize(context.Context, approval.Call) (approval.Verdict, error) {
	return approval.Verdict{Decision: approval.Ask, Reason: l.reason, By: tool.Principal{Kind: tool.PrincipalHook, Name: string(l.source) + "-local-policy"}}, nil
}

// sessionRunID is the run of a session of the agent source: derived from
// the tenant, the principal and the session's ID, so that no principal
// can reach another's session by naming its ID (cc_ for Claude Code, cx_
// for Codex, whose IDs are hashed with the source).
func sessionRunID(source gate.Source, p Principal, session string) string {
	if source == gate.SourceCodex || source == gate.SourceMCP {
		h := sha256.Sum256([]byte(string(source) + "\x00" + p.Tenant + "\x00" + p.Name + "\x00" + session))
		prefix := "cx_"
		if source == gate.SourceMCP {
			prefix = "mc_"
		}
		return prefix + hex.EncodeToString(h[:8])
	}
	h := sha256.Sum256([]byte(p.Tenant + "\x00" + p.Name + "\x00" + session))
	return "cc_" + hex.EncodeToString(h[:8])
}

// sessionConfig is a Claude Code session run's configuration.
type sessionConfig struct {
	Agent     string `json:"agent"`
	Source    string `json:"source"`
	Session   string `json:"session"`
	Workspace string `json:"workspace,omitempty"`
	// Client is an MCP client's implementation, as it gave it.
	Client *sessionClient `json:"client,omitempty"`
}

// sessionClient is an MCP client's name and version from initialize.
type sessionClient struct {
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
}

// claudeSession reports whether r is a Claude Code or Codex session's
// run, which the server never resumes: the agent drives it.
func claudeSession(r store.Run) bool {
	var c sessionConfig
	return json.Unmarshal(r.Config, &c) == nil && (c.Source == string(gate.SourceClaudeCode) || c.Source == string(gate.SourceCodex) || c.Source == string(gate.SourceMCP))
}

// session returns the run of in's session, stored (running) at its first
// event.
func (cc *claudeCode) session(ctx context.Context, p Principal, in *claudegate.Input) (store.Run, error) {
	return cc.openSession(ctx, p, sessionConfig{Agent: string(cc.source), Source: string(cc.source), Session: in.SessionID, Workspace: in.Cwd})
}

// openSession returns the run of the session cfg names, stored (running)
// at its first event.
func (cc *claudeCode) openSession(ctx context.Context, p Principal, c sessionConfig) (store.Run, error) {
	id := sessionRunID(cc.source, p, c.Session)
	st := cc.s.store
	run, err := st.GetRun(ctx, id)
	if err == nil && run.Status.Finished() {
		// A session resumed after its end (claude --resume) goes on in
		// the same run.
		if r, err := st.UpdateRun(ctx, id, store.RunUpdate{From: run.Status, Status: store.RunRunning}); err == nil {
			return r, nil
		}
		return st.GetRun(ctx, id)
	}
	if err == nil {
		return run, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return run, err
	}
	cfg, _ := json.Marshal(c)
	owner := p.decider()
	started, _ := json.Marshal(map[string]any{"agent": c.Agent, "owner": owner, "source": cc.source, "workspace": c.Workspace})
	run, err = st.CreateRun(ctx, store.CreateRunRequest{
		Run:    store.Run{ID: id, Tenant: p.Tenant, Owner: owner.String(), Status: store.RunRunning, Config: cfg},
		Events: []store.Event{{Type: runcore.EventRunStarted, Data: started}},
	})
	if errors.Is(err, store.ErrExists) {
		return st.GetRun(ctx, id)
	}
	return run, err
}

func (cc *claudeCode) lock(runID string) func() {
	cc.mu.Lock()
	m, ok := cc.runs[runID]
	if !ok {
		m = &sync.Mutex{}
		cc.runs[runID] = m
	}
	cc.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// maxSessionCalls bounds the records GET /v1/runs/{id} shows of a
// session's run: the latest ones (every record is in the run's events).
const maxSessionCalls = 1000

// record appends rec's events to the session's run: tool.decided for a
// call that did not run, then tool.finished with the record. The run view
// reads the records from them ([Server.toolCalls]), so that a decision
// costs the same at the thousandth call as at the first.
func (cc *claudeCode) record(ctx context.Context, run store.Run, rec gate.Record) {
	var evs []store.Event
	if !rec.Ran {
		d := rec.Decision
		evs = append(evs, agentEvent(run, agent.Event{Kind: agent.EventDecision, RunID: run.ID, CallID: rec.ID, Decision: &d}))
	}
	evs = append(evs, agentEvent(run, agent.Event{Kind: agent.EventToolResult, RunID: run.ID, CallID: rec.ID, Record: &rec}))
	if _, err := cc.s.store.AppendEvents(ctx, evs...); err != nil {
		cc.s.log.Error("claude-code record", "error", err)
	}
}

// claudeToolCalls returns the records of a session's run, from its
// tool.finished events after the sequence number after: the latest
// maxSessionCalls, oldest first, as a JSON array.
func claudeToolCalls(ctx context.Context, st store.Store, run store.Run, after int64) (json.RawMessage, error) {
	var recs []json.RawMessage
	for {
		evs, err := st.ListEvents(ctx, store.EventFilter{Tenant: run.Tenant, RunID: run.ID, AfterSeq: after, Limit: store.MaxLimit})
		if err != nil {
			return nil, err
		}
		for _, ev := range evs {
			after = ev.Seq
			if ev.Type != runcore.EventToolFinished {
				continue
			}
			var e struct {
				Record json.RawMessage `json:"record"`
			}
			if json.Unmarshal(ev.Data, &e) == nil && len(e.Record) > 0 {
				recs = append(recs, e.Record)
			}
		}
		if len(evs) < store.MaxLimit {
			break
		}
	}
	if len(recs) > maxSessionCalls {
		recs = recs[len(recs)-maxSessionCalls:]
	}
	if recs == nil {
		recs = []json.RawMessage{}
	}
	return json.Marshal(recs)
}

func agentEvent(run store.Run, ev agent.Event) store.Event {
	typ := runcore.EventToolFinished
	switch ev.Kind {
	case agent.EventDecision:
		typ = runcore.EventToolDecided
	case agent.EventPending:
		typ = runcore.EventApprovalRequest
	}
	b, _ := json.Marshal(ev)
	return store.Event{Tenant: run.Tenant, RunID: run.ID, Type: typ, Data: b}
}

// end marks the session's run done at SessionEnd.
func (cc *claudeCode) end(ctx context.Context, run store.Run) {
	unlock := cc.lock(run.ID)
	defer func() {
		unlock()
		cc.mu.Lock()
		delete(cc.runs, run.ID)
		cc.mu.Unlock()
		cc.s.sessionLogs.forget(run.ID)
	}()
	data, _ := json.Marshal(map[string]string{"status": string(store.RunDone)})
	if _, err := cc.s.store.UpdateRun(ctx, run.ID, store.RunUpdate{Status: store.RunDone,
		Events: []store.Event{{Tenant: run.Tenant, RunID: run.ID, Type: runcore.EventRunFinished, Data: data}}}); err != nil {
		cc.s.log.Warn("claude-code session end", "error", err)
	}
}

// storeAsker makes a call's approval request an approval of the session's
// run, shown on the page and in GET /v1/approvals, and waits for its
// decision at most wait.
type storeAsker struct {
	cc   *claudeCode
	run  store.Run
	wait time.Duration
	// unanswered is the reason of the runtime's close of a request no one
	// answered within wait (default: the hook's wait).
	unanswered string
	// bridge tells the session's last prompt and stated intent, which the
	// request keeps for its card (sessionNotes).
	bridge *claudegate.Bridge
	// admit, when set, is asked under the run's lock before the request
	// is stored, so that a cap it checks holds for asks made at once;
	// undo, when not nil, is called if the request is then not stored.
	admit func(ctx context.Context) (undo func(), err error)
}

func (a *storeAsker) Ask(ctx context.Context, in *claudegate.Input, c gate.Call, p *gate.Pending) (*tool.Answer, error) {
	if err := a.post(ctx, in, c, p); err != nil {
		return nil, err
	}
	defer a.running(context.WithoutCancel(ctx))
	return a.answer(ctx, p.Request.ID)
}

// post stores p's request as an approval of the session's run, which
// waits for it (pending); in is the hook input of a Claude Code or Codex
// session (nil for an MCP client's), whose reported prompt and intent the
// request keeps.
func (a *storeAsker) post(ctx context.Context, in *claudegate.Input, c gate.Call, p *gate.Pending) error {
	st := a.cc.s.store
	req := p.Request
	if a.bridge != nil && in != nil {
		if prompt, intent := a.bridge.Context(in); prompt != "" || intent != "" {
			req.Data = withSessionNotes(req.Data, sessionNotes{Prompt: prompt, Intent: intent})
		}
	}
	ap := store.Approval{ID: req.ID, RunID: a.run.ID, CallID: c.ID, Tool: c.Name, Digest: p.Digest, Kind: req.Kind, Prompt: req.Prompt, Request: req, ExpiresAt: req.ExpiresAt}
	ev := agentEvent(a.run, agent.Event{Kind: agent.EventPending, RunID: a.run.ID, CallID: c.ID, Request: &req})
	unlock := a.cc.lock(a.run.ID)
	var err error
	var undo func()
	if a.admit != nil {
		undo, err = a.admit(ctx)
	}
	if err == nil {
		_, err = st.UpdateRun(ctx, a.run.ID, store.RunUpdate{Status: store.RunPending, Approvals: []store.Approval{ap}, Events: []store.Event{ev}})
		if err != nil && undo != nil {
			undo()
		}
	}
	unlock()
	if full := (*gateFullError)(nil); errors.As(err, &full) {
		return err
	}
	if err != nil {
		return fmt.Errorf("storing the approval request: %w", err)
	}
	return nil
}

// answer waits at most a.wait for the decision on the approval id and
// returns its answer: nil when no one answered in time (the request is
// then closed, so that no one approves what no longer waits). An approval
// is used once, here.
func (a *storeAsker) answer(ctx context.Context, id string) (*tool.Answer, error) {
	st := a.cc.s.store
	wctx, cancel := context.WithTimeout(ctx, a.wait)
	defer cancel()
	got, err := a.await(wctx, id)
	if err != nil {
		reason := cmp.Or(a.unanswered, "no answer within the hook's wait")
		if ctx.Err() != nil {
			reason = "the caller stopped waiting"
		}
		_, derr := st.Decide(context.WithoutCancel(ctx), a.run.ID, id, store.Answer{By: approval.Runtime, Reason: reason})
		if derr == nil || errors.Is(derr, store.ErrExpired) {
			return nil, nil
		}
		if errors.Is(derr, store.ErrDecided) {
			got, err = st.GetApproval(context.WithoutCancel(ctx), a.run.ID, id)
			if err != nil {
				return nil, err
			}
		} else {
			return nil, derr
		}
	}
	if got.Unverified {
		ans, _ := got.Answer() // declines: written around tollgate
		return &ans, nil
	}
	switch got.Status {
	case store.StatusApproved:
		// Used once, for the arguments it was given for.
		if _, err := st.Consume(context.WithoutCancel(ctx), a.run.ID, got.ID, got.Digest); err != nil {
			return nil, fmt.Errorf("using the approval: %w", err)
		}
		return &tool.Answer{ID: got.ID, OK: true, Principal: got.DecidedBy, Actor: got.Actor, Reason: got.Reason, Data: got.Data}, nil
	case store.StatusDenied:
		return &tool.Answer{ID: got.ID, OK: false, Principal: got.DecidedBy, Actor: got.Actor, Reason: got.Reason}, nil
	}
	return nil, nil // expired
}

// running sets the session's run back to running once nothing waits.
func (a *storeAsker) running(ctx context.Context) {
	defer a.cc.lock(a.run.ID)()
	if _, err := a.cc.s.store.UpdateRun(ctx, a.run.ID, store.RunUpdate{From: store.RunPending, Status: store.RunRunning}); err != nil && !errors.Is(err, store.ErrConflict) {
		a.cc.s.log.Warn("claude-code session status", "error", err)
	}
}

// await returns the approval once it is no longer pending, or ctx's error.
func (a *storeAsker) await(ctx context.Context, id string) (store.Approval, error) {
	st := a.cc.s.store
	for {
		// The wait starts at the log's end, read from where the session's
		// index left it (not from the session's start), and read before
		// the approval: a decision made after it has a larger sequence
		// number, and wakes the wait.
		after, err := a.cc.s.sessionLogs.tail(ctx, st, a.run)
		if err != nil {
			return store.Approval{}, err
		}
		got, err := st.GetApproval(ctx, a.run.ID, id)
		if err != nil {
			return got, err
		}
		if got.Status != store.StatusPending {
			return got, nil
		}
		if err := st.WaitEvents(ctx, store.EventFilter{Tenant: a.run.Tenant, RunID: a.run.ID, AfterSeq: after}); err != nil {
			return got, err
		}
	}
}
