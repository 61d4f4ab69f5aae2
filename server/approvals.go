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

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/approval/inbox"
	"github.com/tollgate-dev/tollgate/builtin"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// ApprovalView is an approval as the API shows it: what a person needs to
// decide, and how it was decided.
type ApprovalView struct {
	ID     string       `json:"id"`
	RunID  string       `json:"runId"`
	Agent  string       `json:"agent,omitempty"`
	Status store.Status `json:"status"`
	Kind   tool.Kind    `json:"kind"`
	// Tool and CallID name the tool call.
	Tool   string `json:"tool"`
	CallID string `json:"callId"`
	// Prompt is the request's question, as the agent wrote it.
	Prompt string `json:"prompt"`
	// Arguments are the call's arguments; ArgumentsPretty the same,
	// indented for display.
	Arguments       json.RawMessage `json:"arguments,omitempty"`
	ArgumentsPretty string          `json:"argumentsPretty,omitempty"`
	// ArgsDigest is the digest a decision must send back: the approval
	// covers these arguments only.
	ArgsDigest string      `json:"argsDigest"`
	Hints      *tool.Hints `json:"hints,omitempty"`
	// Risk is the call's risk: as the run's policy file judges it (its
	// risk declarations, then the hints; RiskFrom says which: "hints" or
	// "declared:GLOB"), else from the hints alone (approval.RiskOf).
	Risk     approval.Risk `json:"risk,omitempty"`
	RiskFrom string        `json:"riskFrom,omitempty"`
	// RuleAt is where the rule that asked is written in the run's policy
	// file ("policy.yaml:12:5"), when it is one.
	RuleAt string `json:"ruleAt,omitempty"`
	// RulePolicy, with RuleAt, is the agent whose policy file GET
	// /v1/agents/{name}/policy shows, RuleAt's file as it is now; empty
	// when the server's configuration no longer names that file.
	RulePolicy string `json:"rulePolicy,omitempty"`
	// AskedBy is the rule, hook or autonomy level that asked
	// ("rule:review-notes"), and Reason why.
	AskedBy string `json:"askedBy,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// RunOwner is the principal who started the run.
	RunOwner  string     `json:"runOwner,omitempty"`
	CreatedAt time.Time  `json:"createdAt"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	// SecondsLeft is the time left to decide, in whole seconds, when the
	// request expires and is still pending.
	SecondsLeft *int64 `json:"secondsLeft,omitempty"`
	// InputSchema is the tool's JSON Schema, to edit the arguments against.
	InputSchema *jsonschema.Schema `json:"inputSchema,omitempty"`
	// DecidedBy, Actor, DecisionReason, DecidedAt and EditedArguments record
	// the decision. DecidedBy is who decided ({"kind": "person", "name":
	// "alice"}); Actor, present only when someone acted on DecidedBy's
	// behalf (an administrator at the command line), is who did.
	DecidedBy       approval.Principal `json:"decidedBy,omitzero"`
	Actor           approval.Principal `json:"actor,omitzero"`
	DecisionReason  string             `json:"decisionReason,omitempty"`
	DecidedAt       *time.Time         `json:"decidedAt,omitempty"`
	EditedArguments json.RawMessage    `json:"editedArguments,omitempty"`
	// Questions, on a request of kind question, are the questions the model
	// asks (each with its options and whether it takes several answers):
	// what a person answers with a decision's answer.
	Questions []builtin.Question `json:"questions,omitempty"`
	// Context is what the run says around the call: its source, prompt,
	// workspace, the model's stated intent and the earlier decisions on the
	// same tool; absent when the run cannot be read.
	Context *RunContext `json:"context,omitempty"`
}

// ApprovalPage is GET /v1/approvals.
type ApprovalPage struct {
	Approvals []ApprovalView `json:"approvals"`
	Next      string         `json:"next,omitempty"`
}

// DecisionRequest is the body of POST /v1/approvals/{id}/decision. Who
// decides is the authenticated principal, never a field.
type DecisionRequest struct {
	// Decision is "approve" or "deny".
	Decision string `json:"decision"`
	// Reason explains the decision; on deny, the model sees it.
	Reason string `json:"reason,omitempty"`
	// EditedArgs, on approve, replace the call's arguments (a JSON object,
	// validated against the tool's input schema here and authorized again
	// when the run goes on).
	EditedArgs json.RawMessage `json:"editedArgs,omitempty"`
	// ArgsDigest must be the argsDigest the person was shown: what they saw
	// is what runs (412 otherwise). Required to approve.
	ArgsDigest string `json:"argsDigest"`
	// Answer, on approve, answers a request of kind question (required
	// there): {"answers": [["choice"], ...]} with one list per question, or
	// a shorter form builtin.ParseQuestionAnswer reads (["a", "b"], or "a"
	// for one question). An option's label or the person's own words; 422
	// when it does not fit the questions. On an input request, the value.
	Answer json.RawMessage `json:"answer,omitempty"`
}

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
func findProblem(err error, id string) Problem {
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, inbox.ErrAmbiguous) || errors.Is(err, inbox.ErrNoID) {
		return Problem{Status: http.StatusNotFound, Detail: "no approval " + strconv.Quote(id)}
	}
	return Problem{Status: http.StatusInternalServerError, Detail: "reading the approval failed"}
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
	out := ApprovalPage{Approvals: []ApprovalView{}, Next: page.Next}
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
func (s *Server) approvalView(ctx context.Context, a store.Approval, run *store.Run) ApprovalView {
	v := ApprovalView{
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
		if cfg, err := runs.LoadConfig(*run); err == nil {
			v.Agent = cfg.Agent
		}
		if claudeSession(*run) {
			v.Agent = s.sessionContext(ctx, v.Context, a, *run)
		}
	}
	return v
}

func (s *Server) decide(w http.ResponseWriter, r *http.Request, p Principal) {
	var req DecisionRequest
	a, ok := s.findApproval(w, r, p, r.PathValue("id"))
	if !ok {
		return
	}
	if !s.readJSON(w, r, MaxBodyBytes, &req) {
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
func (s *Server) decideCore(ctx context.Context, p Principal, id string, req DecisionRequest) (ApprovalView, *Problem) {
	a, err := s.inbox(nil).Find(ctx, inbox.Query{Tenant: p.Tenant, ID: id})
	if err != nil {
		prob := findProblem(err, id)
		return ApprovalView{}, &prob
	}
	return s.decideOn(ctx, p, a, req)
}

// decideOn is decideCore on the approval a, read from the store in p's
// tenant by the caller: each decision reads its approval and its run once.
// The checks are the inbox's (approval/inbox); the role, the body's
// fields and the problems are the API's.
func (s *Server) decideOn(ctx context.Context, p Principal, a store.Approval, req DecisionRequest) (ApprovalView, *Problem) {
	if !p.Has(RoleApprover) {
		return ApprovalView{}, &Problem{Type: ProblemForbidden, Title: "Forbidden", Status: http.StatusForbidden, Detail: "deciding needs the approver role"}
	}
	d := inbox.Decision{By: p.Decider(), Reason: req.Reason, Digest: req.ArgsDigest}
	switch req.Decision {
	case "approve":
		d.Approve = true
	case "deny":
	default:
		return ApprovalView{}, &Problem{Status: http.StatusBadRequest, Detail: `decision: want "approve" or "deny"`}
	}
	data, prob := decisionData(a, req, d.Approve)
	if prob != nil {
		return ApprovalView{}, prob
	}
	d.Data = data
	if req.ArgsDigest == "" && d.Approve {
		return ApprovalView{}, &Problem{Status: http.StatusBadRequest, Detail: "argsDigest: required; send the argsDigest of the approval you were shown"}
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
		return ApprovalView{}, decisionProblem(err, a.ID)
	}
	if run == nil {
		return s.viewOf(ctx, got), nil // the same decision again: nothing was recorded
	}
	if got.DecidedAt != nil {
		s.metrics.decided(got.DecidedAt.Sub(got.CreatedAt))
	}
	return s.approvalView(ctx, got, run), nil
}

// inbox is the approvals driver on the server's store; answer records a
// decision (nil: the store's Decide).
func (s *Server) inbox(answer inbox.AnswerFunc) *inbox.Inbox {
	return inbox.New(s.store, &inbox.Options{Answer: answer, Now: s.now, Log: s.log})
}

// decisionProblem is the problem of an error of inbox.Decide.
func decisionProblem(err error, id string) *Problem {
	var decided *inbox.DecidedError
	var bad *inbox.DataError
	switch {
	case errors.Is(err, inbox.ErrDataOnDeny):
		return &Problem{Status: http.StatusBadRequest, Detail: "editedArgs: only an approval edits the arguments"}
	case errors.Is(err, inbox.ErrDigestMismatch):
		return &Problem{Type: ProblemDigestMismatch, Title: "Arguments changed", Status: http.StatusPreconditionFailed,
			Detail: "argsDigest is not the digest of this approval's arguments: reload the approval and decide on what it shows"}
	case errors.Is(err, store.ErrExpired):
		return &Problem{Type: ProblemExpired, Title: "Approval expired", Status: http.StatusGone,
			Detail: "the request expired before it was decided; the run goes on without the call"}
	case errors.As(err, &decided):
		by := decided.Approval.DecidedBy.String()
		if !decided.Approval.Actor.IsZero() {
			by += "; recorded by " + decided.Approval.Actor.String()
		}
		return &Problem{Type: ProblemDecided, Title: "Already decided", Status: http.StatusConflict,
			Detail: fmt.Sprintf("the approval is %s (by %s)", decided.Approval.Status, by)}
	case errors.As(err, &bad):
		detail := "editedArgs do not fit the tool's input schema"
		if bad.Kind != tool.KindApproval {
			detail = "editedArgs: " + bad.What + " does not fit the " + string(bad.Kind) + " request"
		}
		return &Problem{Type: ProblemInvalidEdit, Title: "Invalid edited arguments", Status: http.StatusUnprocessableEntity,
			Detail: detail, Errors: bad.Problems}
	case errors.Is(err, store.ErrNotFound):
		return &Problem{Status: http.StatusNotFound, Detail: "no approval " + strconv.Quote(id)}
	}
	return &Problem{Status: http.StatusInternalServerError, Detail: "storing the decision failed"}
}

func (s *Server) viewOf(ctx context.Context, a store.Approval) ApprovalView {
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
