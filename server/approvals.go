package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/approval/inbox"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// findApproval returns the approval with the request ID id in p's tenant,
// or writes 404.
func (s *Server) findApproval(w http.ResponseWriter, r *http.Request, p Principal, id string) (store.Approval, bool) {
	a, err := s.inbox(nil).Find(r.Context(), inbox.Query{Tenant: p.Tenant, ID: id})
	if err != nil {
		writeProblem(w, r, findProblem(err, id))
		return store.Approval{}, false
	}
	return a, true
}

// findProblem is the problem of an error of inbox.Find: 404 for a request
// ID that names no single request of the tenant.
func findProblem(err error, id string) serverapi.Problem {
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, inbox.ErrAmbiguous) || errors.Is(err, inbox.ErrNoID) {
		return serverapi.Problem{Status: http.StatusNotFound, Detail: "no approval " + strconv.Quote(id)}
	}
	return serverapi.Problem{Status: http.StatusInternalServerError, Detail: "reading the approval failed"}
}

func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request, p Principal) {
	limit, cursor, ok := pageParams(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	f := store.ApprovalFilter{Tenant: p.Tenant, Limit: limit, Cursor: cursor, RunID: q.Get("run"), Status: store.Status(q.Get("status"))}
	switch f.Status {
	case "", store.StatusPending, store.StatusApproved, store.StatusDenied, store.StatusExpired, store.StatusUsed:
	default:
		problemf(w, r, http.StatusBadRequest, "status: want pending, approved, denied, expired or used")
		return
	}
	page, err := s.store.ListApprovals(r.Context(), f)
	if errors.Is(err, store.ErrBadCursor) {
		problemf(w, r, http.StatusBadRequest, "cursor: not a cursor of this listing")
		return
	}
	if err != nil {
		problemf(w, r, http.StatusInternalServerError, "listing approvals failed")
		return
	}
	out := serverapi.ApprovalPage{Approvals: []serverapi.ApprovalView{}, Next: page.Next}
	runsSeen := map[string]*store.Run{}
	for _, a := range page.Approvals {
		run, ok := runsSeen[a.RunID]
		if !ok {
			if got, err := s.store.GetRun(r.Context(), a.RunID); err == nil {
				run = &got
			}
			runsSeen[a.RunID] = run
		}
		out.Approvals = append(out.Approvals, s.approvalView(r.Context(), a, run))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getApproval(w http.ResponseWriter, r *http.Request, p Principal) {
	a, ok := s.findApproval(w, r, p, r.PathValue("id"))
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, s.viewOf(r.Context(), a))
}

// approvalView shows a; run (may be nil) adds the agent and the owner.
func (s *Server) approvalView(ctx context.Context, a store.Approval, run *store.Run) serverapi.ApprovalView {
	v := serverapi.ApprovalView{
		ID: a.ID, RunID: a.RunID, Status: a.Status, Kind: a.Kind, Tool: a.Tool, CallID: a.CallID, Prompt: a.Prompt,
		ArgsDigest: a.Digest, CreatedAt: a.CreatedAt, ExpiresAt: a.ExpiresAt,
		DecidedBy: a.DecidedBy, Actor: a.Actor, DecisionReason: a.Reason, DecidedAt: a.DecidedAt, EditedArguments: a.Data,
	}
	now := s.now()
	if a.Status == store.StatusPending && a.Expired(now) {
		v.Status = store.StatusExpired
	}
	if a.ExpiresAt != nil && v.Status == store.StatusPending {
		left := int64(a.ExpiresAt.Sub(now) / time.Second)
		v.SecondsLeft = &left
	}
	if a.Kind == tool.KindQuestion {
		showQuestions(&v, a)
	} else if d, err := approval.ParseRequestData(a.Request); err == nil {
		v.Arguments, v.Hints, v.AskedBy, v.Reason, v.InputSchema = d.Args, d.Hints, d.By.String(), d.Reason, d.Schema
		v.Risk = approval.RiskOf(d.Hints)
		s.showPolicy(&v, a, run, d.Args)
		var buf bytes.Buffer
		if json.Indent(&buf, d.Args, "", "  ") == nil {
			v.ArgumentsPretty = buf.String()
		}
	}
	v.Context = runContext(a, run)
	if run != nil {
		v.RunOwner = run.Owner
		if cfg, err := runcore.LoadConfig(*run); err == nil {
			v.Agent = cfg.Agent
		}
		if claudeSession(*run) {
			v.Agent = s.sessionContext(ctx, v.Context, a, *run)
		}
	}
	return v
}

func (s *Server) decide(w http.ResponseWriter, r *http.Request, p Principal) {
	var req serverapi.DecisionRequest
	a, ok := s.findApproval(w, r, p, r.PathValue("id"))
	if !ok {
		return
	}
	if !s.readJSON(w, r, maxBodyBytes, &req) {
		return
	}
	v, prob := s.decideOn(r.Context(), p, a, req)
	if prob != nil {
		writeProblem(w, r, *prob)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// decideCore records p's decision on the approval id of p's tenant: the
// checks and answers of POST /v1/approvals/{id}/decision, for HTTP and the
// WebSocket alike.
func (s *Server) decideCore(ctx context.Context, p Principal, id string, req serverapi.DecisionRequest) (serverapi.ApprovalView, *serverapi.Problem) {
	a, err := s.inbox(nil).Find(ctx, inbox.Query{Tenant: p.Tenant, ID: id})
	if err != nil {
		prob := findProblem(err, id)
		return serverapi.ApprovalView{}, &prob
	}
	return s.decideOn(ctx, p, a, req)
}

// decideOn is decideCore on the approval a, read from the store in p's
// tenant by the caller: each decision reads its approval and its run once.
// The checks are the inbox's (approval/inbox); the role, the body's
// fields and the problems are the API's.
func (s *Server) decideOn(ctx context.Context, p Principal, a store.Approval, req serverapi.DecisionRequest) (serverapi.ApprovalView, *serverapi.Problem) {
	if !p.Has(RoleApprover) {
		return serverapi.ApprovalView{}, &serverapi.Problem{Type: serverapi.ProblemForbidden, Title: "Forbidden", Status: http.StatusForbidden, Detail: "deciding needs the approver role"}
	}
	d := inbox.Decision{By: p.decider(), Reason: req.Reason, Digest: req.ArgsDigest}
	switch req.Decision {
	case "approve":
		d.Approve = true
	case "deny":
	default:
		return serverapi.ApprovalView{}, &serverapi.Problem{Status: http.StatusBadRequest, Detail: `decision: want "approve" or "deny"`}
	}
	data, prob := decisionData(a, req, d.Approve)
	if prob != nil {
		return serverapi.ApprovalView{}, prob
	}
	d.Data = data
	if req.ArgsDigest == "" && d.Approve {
		return serverapi.ApprovalView{}, &serverapi.Problem{Status: http.StatusBadRequest, Detail: "argsDigest: required; send the argsDigest of the approval you were shown"}
	}
	// The run is read once, when the answer is recorded, for its kind and
	// for the view: what the view shows of it (owner, agent) does not
	// change with the decision.
	var run *store.Run
	answer := func(ctx context.Context, runID, id string, ans store.Answer) (store.Approval, error) {
		run = s.readRun(ctx, runID)
		if s.durable != nil && run != nil && durableRun(*run) {
			return s.durable.Answer(ctx, runID, id, ans) // records it, then wakes the waiting workflow
		}
		return s.host.Answer(ctx, runID, id, ans)
	}
	got, err := s.inbox(answer).Decide(ctx, a, d)
	if err != nil {
		return serverapi.ApprovalView{}, decisionProblem(err, a.ID)
	}
	if run == nil {
		return s.viewOf(ctx, got), nil // the same decision again: nothing was recorded
	}
	if s.gate != nil {
		s.gate.ledger.done(got.Tenant, got.RunID, got.ID) // an MCP client's ask no longer counts
	}
	if got.DecidedAt != nil {
		s.metrics.decided(got.DecidedAt.Sub(got.CreatedAt))
	}
	return s.approvalView(ctx, got, run), nil
}

// inbox is the approvals driver on the server's store; answer records a
// decision (nil: the store's Decide).
func (s *Server) inbox(answer func(context.Context, string, string, store.Answer) (store.Approval, error)) *inbox.Inbox {
	return inbox.New(s.store, &inbox.Options{Answer: answer, Now: s.now, Log: s.log})
}

// decidedWords says a decided approval's status to the person who tried
// to decide it again: "used" is an approval its call consumed.
func decidedWords(st store.Status) string {
	if st == store.StatusUsed {
		return "approved (and used by its call)"
	}
	return string(st)
}

// decisionProblem is the problem of an error of inbox.Decide.
func decisionProblem(err error, id string) *serverapi.Problem {
	var decided *inbox.DecidedError
	var bad *inbox.DataError
	switch {
	case errors.Is(err, inbox.ErrDataOnDeny):
		return &serverapi.Problem{Status: http.StatusBadRequest, Detail: "editedArgs: only an approval edits the arguments"}
	case errors.Is(err, inbox.ErrDigestMismatch):
		return &serverapi.Problem{Type: serverapi.ProblemDigestMismatch, Title: "Arguments changed", Status: http.StatusPreconditionFailed,
			Detail: "argsDigest is not the digest of this approval's arguments: reload the approval and decide on what it shows"}
	case errors.Is(err, store.ErrExpired):
		return &serverapi.Problem{Type: serverapi.ProblemExpired, Title: "Approval expired", Status: http.StatusGone,
			Detail: "the request expired before it was decided; the run goes on without the call"}
	case errors.As(err, &decided):
		by := decided.Approval.DecidedBy.String()
		if !decided.Approval.Actor.IsZero() {
			by += "; recorded by " + decided.Approval.Actor.String()
		}
		return &serverapi.Problem{Type: serverapi.ProblemDecided, Title: "Already decided", Status: http.StatusConflict,
			Detail: fmt.Sprintf("the approval is already %s (by %s)", decidedWords(decided.Approval.Status), by)}
	case errors.As(err, &bad):
		detail := "editedArgs do not fit the tool's input schema"
		if bad.Kind != tool.KindApproval {
			detail = "editedArgs: " + bad.What + " does not fit the " + string(bad.Kind) + " request"
		}
		return &serverapi.Problem{Type: serverapi.ProblemInvalidEdit, Title: "Invalid edited arguments", Status: http.StatusUnprocessableEntity,
			Detail: detail, Errors: bad.Problems}
	case errors.Is(err, store.ErrNotFound):
		return &serverapi.Problem{Status: http.StatusNotFound, Detail: "no approval " + strconv.Quote(id)}
	}
	return &serverapi.Problem{Status: http.StatusInternalServerError, Detail: "storing the decision failed"}
}

func (s *Server) viewOf(ctx context.Context, a store.Approval) serverapi.ApprovalView {
	return s.approvalView(ctx, a, s.readRun(ctx, a.RunID))
}

// readRun returns the run id, or nil when it cannot be read.
func (s *Server) readRun(ctx context.Context, id string) *store.Run {
	run, err := s.store.GetRun(ctx, id)
	if err != nil {
		return nil
	}
	return &run
}
