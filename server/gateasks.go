package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// A gate of another process (today `tollgate gateway --server`) asks a
// person on this server's page through these routes, with a token of the
// agent role alone, as the Claude Code hook does: it decides its calls
// itself and sends only what needs a person, and the records of its
// calls, so that each of its client sessions is a run here.
//
//	POST   /v1/gate/asks                an approval for a pending call (serverapi.GateAskRequest) -> 201 serverapi.GateAskView; 429 past a cap of gatecap.go (session, token, tenant, open sessions)
//	GET    /v1/gate/asks/{run}/{id}     its state, waiting up to ?wait= (default 50s) for a decision; 429 past the token's places (gatewayRuns.polls)
//	DELETE /v1/gate/asks/{run}/{id}     withdrawn: the runtime closes it, no one can approve it any more
//	POST   /v1/gate/records             a record of a call (serverapi.GateRecordRequest) -> 204; 422 for one naming a person without that person's decision, or a second one (keepGateRecord)
//	POST   /v1/gate/sessions/end        the session ended (serverapi.GateRecordRequest without a record) -> 204

// Bounds of what an external gate sends.
const (
	maxGateID  = 256
	maxGateTTL = 24 * time.Hour
)

// gateCaller refuses, with 403, a token that may decide approvals (the
// agent's side can read it) and one of a tenant the gateway is not for.
func (s *Server) gateCaller(w http.ResponseWriter, r *http.Request, p Principal) bool {
	if s.gate == nil {
		problemf(w, r, http.StatusNotFound, "this server serves no MCP gateway: add a gateway: section to its server.yaml")
		return false
	}
	if err := mayCallTools(p, s.gateTenants); err != nil {
		writeProblem(w, r, serverapi.Problem{Type: serverapi.ProblemForbidden, Title: "Forbidden", Status: http.StatusForbidden, Detail: err.Error()})
		return false
	}
	return true
}

func (s *Server) gateAsk(w http.ResponseWriter, r *http.Request, p Principal) {
	if !s.gateCaller(w, r, p) {
		return
	}
	var req serverapi.GateAskRequest
	if !s.readJSON(w, r, maxBodyBytes, &req) {
		return
	}
	if err := checkGateAsk(req, s.now()); err != nil {
		problemf(w, r, http.StatusUnprocessableEntity, err.Error())
		return
	}
	run, err := s.gate.open(r.Context(), p, req.Session)
	if full := (*gateFullError)(nil); errors.As(err, &full) {
		problemf(w, r, http.StatusTooManyRequests, full.msg)
		return
	}
	if err != nil {
		problemf(w, r, http.StatusInternalServerError, "opening the session's run failed")
		return
	}
	a := s.gate.asker(run, &req.Pending)
	a.admit = func(ctx context.Context) (func(), error) {
		full, err := s.gatePendingFull(ctx, run, s.now())
		if err == nil && full {
			return nil, errGatePendingFull
		}
		if err != nil {
			return nil, err
		}
		return s.gate.admit(ctx, p, run, &req.Pending)
	}
	if err := a.post(r.Context(), nil, req.Call, &req.Pending); err != nil {
		if full := (*gateFullError)(nil); errors.As(err, &full) {
			problemf(w, r, http.StatusTooManyRequests, full.msg)
			return
		}
		if errors.Is(err, store.ErrExists) {
			problemf(w, r, http.StatusConflict, "this session has a request "+req.Pending.Request.ID+" already")
			return
		}
		problemf(w, r, http.StatusInternalServerError, "storing the approval failed")
		return
	}
	s.gate.noteAsked(run.ID, req.Call.ID, req.Pending.Request.ID)
	writeJSON(w, http.StatusCreated, serverapi.GateAskView{RunID: run.ID, ApprovalID: req.Pending.Request.ID, Status: store.StatusPending, ExpiresAt: req.Pending.Request.ExpiresAt})
}

// checkGateAsk checks what an external gate asks: an approval of an MCP
// client's call, bound to its arguments, that expires within maxGateTTL.
func checkGateAsk(req serverapi.GateAskRequest, now time.Time) error {
	q := req.Pending.Request
	switch {
	case req.Session.ID == "" || len(req.Session.ID) > maxGateID:
		return errors.New("session.id: want an ID of 1 to 256 bytes")
	case req.Call.Source != gate.SourceMCP:
		return fmt.Errorf("call.source: want %q (an MCP client's call), got %q", gate.SourceMCP, req.Call.Source)
	case req.Call.Name == "" || len(req.Call.Name) > maxGateID:
		return errors.New("call.name: want a tool name of 1 to 256 bytes")
	case len(req.Call.ID) > maxGateID:
		return errors.New("call.id: want an ID of at most 256 bytes")
	case q.Kind != tool.KindApproval:
		return fmt.Errorf("pending.request.kind: want %q, got %q", tool.KindApproval, q.Kind)
	case q.ID == "" || len(q.ID) > maxGateID:
		return errors.New("pending.request.id: want an ID of 1 to 256 bytes")
	case req.Pending.Digest != approval.Digest(req.Pending.Args):
		return errors.New("pending.digest: not the digest of pending.args")
	case q.ExpiresAt == nil || !q.ExpiresAt.After(now) || q.ExpiresAt.After(now.Add(maxGateTTL)):
		return errors.New("pending.request.expiresAt: want a time within the next 24 hours")
	}
	// What the page shows is what the answer is bound to.
	if rd, err := approval.ParseRequestData(q); err != nil || len(rd.Args) == 0 || approval.Digest(rd.Args) != req.Pending.Digest {
		return errors.New("pending.request.data.args: want the arguments of pending.digest (what the page shows is what the answer is bound to)")
	}
	return nil
}

// gateRun returns p's session run named in the path, 404 for any other.
func (s *Server) gateRun(w http.ResponseWriter, r *http.Request, p Principal) (store.Run, bool) {
	run, err := s.store.GetRun(r.Context(), r.PathValue("run"))
	if err != nil || run.Tenant != p.Tenant || run.Owner != p.decider().String() || !mcpSession(run) {
		problemf(w, r, http.StatusNotFound, "no such asked call")
		return store.Run{}, false
	}
	return run, true
}

func (s *Server) gateAnswer(w http.ResponseWriter, r *http.Request, p Principal) {
	if !s.gateCaller(w, r, p) {
		return
	}
	run, ok := s.gateRun(w, r, p)
	if !ok {
		return
	}
	wait, err := s.gate.cc.wait(r)
	if err != nil {
		problemf(w, r, http.StatusBadRequest, err.Error())
		return
	}
	id := r.PathValue("id")
	ap, err := s.store.GetApproval(r.Context(), run.ID, id)
	if err != nil {
		problemf(w, r, http.StatusNotFound, "no such asked call")
		return
	}
	if ap.Status == store.StatusUsed {
		problemf(w, r, http.StatusConflict, "the approval was given to its caller already, and is used")
		return
	}
	v := serverapi.GateAskView{RunID: run.ID, ApprovalID: id, Status: ap.Status, ExpiresAt: ap.ExpiresAt}
	if ap.Status == store.StatusPending {
		// A pending ask is waited for: one place among the token's polls.
		release, ok := s.gate.polls.take(p)
		if !ok {
			w.Header().Set("Retry-After", "10")
			problemf(w, r, http.StatusTooManyRequests, fmt.Sprintf("too many waits on asks open (at most %d per token, %d per tenant, %d in all); let one end or retry later", s.gate.polls.perPrincipal, s.gate.polls.perTenant, s.gate.polls.max))
			return
		}
		defer release()
	}
	a := &storeAsker{cc: s.gate.cc, run: run, wait: wait, unanswered: "no answer before the request expired"}
	// A request that expires within this wait is closed at its expiry;
	// any other is waited for and left open.
	expiring := ap.ExpiresAt != nil && time.Until(*ap.ExpiresAt) <= wait
	if expiring {
		a.wait = max(time.Until(*ap.ExpiresAt), 0)
	}
	if ap.Status == store.StatusPending && !expiring {
		wctx, cancel := context.WithTimeout(r.Context(), wait)
		got, err := a.await(wctx, id)
		cancel()
		if r.Context().Err() != nil {
			return
		}
		if err != nil || got.Status == store.StatusPending {
			writeJSON(w, http.StatusOK, v)
			return
		}
	}
	defer a.running(context.WithoutCancel(r.Context()))
	defer s.gate.ledger.done(run.Tenant, run.ID, id)
	ans, err := a.answer(r.Context(), id)
	if err != nil {
		problemf(w, r, http.StatusConflict, "the approval could not be used: "+err.Error())
		return
	}
	v.Answer, v.Status = ans, store.StatusExpired
	if ans != nil {
		v.Status = store.StatusDenied
		if ans.OK {
			v.Status = store.StatusApproved
		}
	}
	writeJSON(w, http.StatusOK, v)
}

// gateWithdraw is DELETE /v1/gate/asks/{run}/{id}: the caller no longer
// waits (its client withdrew the call), so no one may approve it.
func (s *Server) gateWithdraw(w http.ResponseWriter, r *http.Request, p Principal) {
	if !s.gateCaller(w, r, p) {
		return
	}
	run, ok := s.gateRun(w, r, p)
	if !ok {
		return
	}
	id := r.PathValue("id")
	got, err := s.store.Decide(r.Context(), run.ID, id, store.Answer{By: approval.Runtime, Reason: "withdrawn: the client stopped waiting"})
	switch {
	case err == nil, errors.Is(err, store.ErrExpired), errors.Is(err, store.ErrDecided):
		if err != nil {
			got, _ = s.store.GetApproval(r.Context(), run.ID, id)
		}
		(&storeAsker{cc: s.gate.cc, run: run}).running(context.WithoutCancel(r.Context()))
		s.gate.ledger.done(run.Tenant, run.ID, id)
		writeJSON(w, http.StatusOK, serverapi.GateAskView{RunID: run.ID, ApprovalID: id, Status: got.Status, ExpiresAt: got.ExpiresAt})
	case errors.Is(err, store.ErrNotFound):
		problemf(w, r, http.StatusNotFound, "no such asked call")
	default:
		problemf(w, r, http.StatusInternalServerError, "withdrawing the approval failed")
	}
}

func (s *Server) gateRecord(w http.ResponseWriter, r *http.Request, p Principal) {
	if !s.gateCaller(w, r, p) {
		return
	}
	var req serverapi.GateRecordRequest
	if !s.readJSON(w, r, maxBodyBytes, &req) {
		return
	}
	if req.Session.ID == "" || len(req.Session.ID) > maxGateID {
		problemf(w, r, http.StatusUnprocessableEntity, "session.id: want an ID of 1 to 256 bytes")
		return
	}
	if req.Record.Source != gate.SourceMCP {
		problemf(w, r, http.StatusUnprocessableEntity, fmt.Sprintf("record.source: want %q", gate.SourceMCP))
		return
	}
	if req.Record.Name == "" || len(req.Record.Name) > maxGateID || len(req.Record.ID) > maxGateID {
		problemf(w, r, http.StatusUnprocessableEntity, "record.name and record.id: want a tool name of 1 to 256 bytes and an ID of at most 256")
		return
	}
	err := s.keepGateRecord(r.Context(), p, req.Session, req.Record)
	full, refused := (*gateFullError)(nil), (*recordError)(nil)
	switch {
	case errors.As(err, &refused):
		problemf(w, r, http.StatusUnprocessableEntity, refused.Error())
	case errors.As(err, &full):
		problemf(w, r, http.StatusTooManyRequests, full.msg)
	case err != nil:
		problemf(w, r, http.StatusInternalServerError, "keeping the record failed")
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// gateEnd is POST /v1/gate/sessions/end: the session's run, if it has one,
// is done.
func (s *Server) gateEnd(w http.ResponseWriter, r *http.Request, p Principal) {
	if !s.gateCaller(w, r, p) {
		return
	}
	var req serverapi.GateRecordRequest
	if !s.readJSON(w, r, maxBodyBytes, &req) {
		return
	}
	if req.Session.ID == "" || len(req.Session.ID) > maxGateID {
		problemf(w, r, http.StatusUnprocessableEntity, "session.id: want an ID of 1 to 256 bytes")
		return
	}
	s.gate.end(r.Context(), p, req.Session)
	w.WriteHeader(http.StatusNoContent)
}

// mcpSession reports whether r is an MCP client session's run.
func mcpSession(r store.Run) bool {
	var c sessionConfig
	return json.Unmarshal(r.Config, &c) == nil && c.Source == string(gate.SourceMCP)
}
