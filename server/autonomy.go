package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/store"
)

func (s *Server) getAutonomy(w http.ResponseWriter, r *http.Request, p Principal) {
	writeJSON(w, http.StatusOK, map[string]string{"scope": "tenant", "level": string(s.autonomy.ofTenant(p.Tenant))})
}

func (s *Server) putAutonomy(w http.ResponseWriter, r *http.Request, p Principal) {
	var req serverapi.AutonomyRequest
	if !s.readJSON(w, r, maxBodyBytes, &req) {
		return
	}
	change, prob := s.setAutonomy(r.Context(), p, req)
	if prob != nil {
		writeProblem(w, r, *prob)
		return
	}
	writeJSON(w, http.StatusOK, change)
}

// setAutonomy is seed 000's set_autonomy, for HTTP and the WebSocket: it
// appends an autonomy.changed event and applies it.
func (s *Server) setAutonomy(ctx context.Context, p Principal, req serverapi.AutonomyRequest) (serverapi.AutonomyChange, *serverapi.Problem) {
	var level approval.Autonomy
	if req.Level != "" {
		a, err := approval.ParseAutonomy(req.Level)
		if err != nil {
			return serverapi.AutonomyChange{}, &serverapi.Problem{Status: http.StatusUnprocessableEntity, Detail: "level: " + err.Error()}
		}
		level = a
	}
	change := serverapi.AutonomyChange{Scope: "tenant", Run: req.Run, Level: level, By: p.decider().String()}
	ev := store.Event{Tenant: p.Tenant, Type: serverapi.EventAutonomyChanged}
	if req.Run != "" {
		if !p.Has(RoleApprover) {
			return change, &serverapi.Problem{Type: serverapi.ProblemForbidden, Title: "Forbidden", Status: http.StatusForbidden, Detail: "setting a run's autonomy level needs the approver role"}
		}
		run, err := s.store.GetRun(ctx, req.Run)
		if err != nil || run.Tenant != p.Tenant {
			return change, &serverapi.Problem{Status: http.StatusNotFound, Detail: "no run " + strconv.Quote(req.Run)}
		}
		if run.Status.Finished() {
			return change, &serverapi.Problem{Status: http.StatusConflict, Detail: "the run has ended"}
		}
		change.Scope, ev.RunID = "run", run.ID
	} else if !p.Has(RoleAdmin) {
		return change, &serverapi.Problem{Type: serverapi.ProblemForbidden, Title: "Forbidden", Status: http.StatusForbidden, Detail: "setting the tenant's autonomy level needs the admin role"}
	}
	ev.Data, _ = json.Marshal(change)
	seqs, err := s.store.AppendEvents(ctx, ev)
	if err != nil {
		return change, &serverapi.Problem{Status: http.StatusInternalServerError, Detail: "storing the change failed"}
	}
	ev.Seq = seqs[0]
	s.autonomy.apply(ev)
	return change, nil
}
