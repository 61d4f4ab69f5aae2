package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/internal/layer"
	"github.com/tollgate-dev/tollgate/internal/layerstore"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// maxLayerHistory is how many changes GET /v1/rules shows.
const maxLayerHistory = 100

// noAgentWrites writes 403 for a token that holds the agent role, whatever
// else it holds: what an agent's shell can read never changes the layer.
func noAgentWrites(w http.ResponseWriter, r *http.Request, p Principal) bool {
	if slices.Contains(p.Roles, RoleAgent) {
		writeProblem(w, r, serverapi.Problem{Type: serverapi.ProblemForbidden, Title: "Forbidden", Status: http.StatusForbidden,
			Detail: "a token with the agent role may not change the rule layer"})
		return false
	}
	return true
}

// ruleLayers returns the store's rule layers, or writes 501 when it keeps none.
func (s *Server) ruleLayers(w http.ResponseWriter, r *http.Request) (layerstore.Layers, bool) {
	l, ok := s.store.(layerstore.Layers)
	if !ok {
		problemf(w, r, http.StatusNotImplemented, "this server's store keeps no rule layer")
	}
	return l, ok
}

// getRules is GET /v1/rules (viewer).
func (s *Server) getRules(w http.ResponseWriter, r *http.Request, p Principal) {
	ls, ok := s.ruleLayers(w, r)
	if !ok {
		return
	}
	l, err := ls.GetLayer(r.Context(), p.Tenant)
	if err != nil {
		problemf(w, r, http.StatusInternalServerError, "reading the rule layer failed")
		return
	}
	h, err := ls.LayerHistory(r.Context(), p.Tenant, maxLayerHistory)
	if err != nil {
		problemf(w, r, http.StatusInternalServerError, "reading the rule layer's history failed")
		return
	}
	writeJSON(w, http.StatusOK, serverapi.RuleLayerView{Layer: l, History: h})
}

// proposeRule is POST /v1/rules/proposals (approver): a rule proposed from
// a decided approval of the tenant. 404 for an approval of another
// tenant, 409 for one not decided yet, 422 when no rule can be made of its
// call (a question, a command the analysis cannot see through).
func (s *Server) proposeRule(w http.ResponseWriter, r *http.Request, p Principal) {
	if !noAgentWrites(w, r, p) {
		return
	}
	ls, ok := s.ruleLayers(w, r)
	if !ok {
		return
	}
	var req serverapi.ProposeRequest
	if !s.readJSON(w, r, 4<<10, &req) {
		return
	}
	eff := approval.Effect(req.Effect)
	if eff != approval.Allow && eff != approval.Deny {
		problemf(w, r, http.StatusBadRequest, `effect: want "allow" or "deny"`)
		return
	}
	a, ok := s.findApproval(w, r, p, req.Approval)
	if !ok {
		return
	}
	if a.Status == store.StatusPending {
		problemf(w, r, http.StatusConflict, "approval "+strconv.Quote(a.ID)+" is not decided yet: decide it, then remember the decision")
		return
	}
	if a.Unverified {
		problemf(w, r, http.StatusConflict, "approval "+strconv.Quote(a.ID)+" carries no valid seal (its decision was not made through tollgate): no rule can be made of it")
		return
	}
	d, err := approval.ParseRequestData(a.Request)
	if err != nil || a.Kind != tool.KindApproval {
		problemf(w, r, http.StatusUnprocessableEntity, "approval "+strconv.Quote(a.ID)+" is not about a tool call's arguments: no rule can be made of it")
		return
	}
	args := d.Args
	if len(a.Data) > 0 && (a.Status == store.StatusApproved || a.Status == store.StatusUsed) {
		args = a.Data // approved with edits: what was approved is what the person wrote
	}
	prop, err := layer.ProposeIn(layer.NewID(eff, a.Tool), a.Tool, args, eff, a.RunID+"/"+a.ID, s.runWorkdir(r.Context(), a.RunID))
	if err != nil {
		problemf(w, r, http.StatusUnprocessableEntity, err.Error())
		return
	}
	rule, err := ls.ProposeLayerRule(r.Context(), layerstore.LayerRule{ID: prop.ID, Tenant: p.Tenant, Text: prop.Text, Effect: string(eff),
		Tool: a.Tool, Source: a.RunID + "/" + a.ID, ProposedBy: p.decider()})
	if err != nil {
		writeProblem(w, r, layerProblem(err, prop.ID))
		return
	}
	writeJSON(w, http.StatusCreated, rule)
}

// runWorkdir is the workspace root of the run runID, "" when it is not
// known (a path rule then remembers an absolute path exactly).
func (s *Server) runWorkdir(ctx context.Context, runID string) string {
	run, err := s.store.GetRun(ctx, runID)
	if err != nil {
		return ""
	}
	if cfg, err := runcore.LoadConfig(run); err == nil && cfg.Workdir != "" {
		return cfg.Workdir
	}
	var sc sessionConfig // a Claude Code, Codex or MCP client session's run
	if json.Unmarshal(run.Config, &sc) == nil {
		return sc.Workspace
	}
	return ""
}

// acceptRule is POST /v1/rules/{id}/accept (admin).
func (s *Server) acceptRule(w http.ResponseWriter, r *http.Request, p Principal) {
	s.changeRule(w, r, p, layerstore.LayerAccept)
}

// removeRule is DELETE /v1/rules/{id} (admin): a rule leaves the layer, or
// a proposal is dropped.
func (s *Server) removeRule(w http.ResponseWriter, r *http.Request, p Principal) {
	s.changeRule(w, r, p, layerstore.LayerRemove)
}

func (s *Server) changeRule(w http.ResponseWriter, r *http.Request, p Principal, action layerstore.LayerAction) {
	if !noAgentWrites(w, r, p) {
		return
	}
	ls, ok := s.ruleLayers(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	var c layerstore.LayerChange
	var err error
	if action == layerstore.LayerAccept {
		// What goes into the layer must load: a rule the layer cannot
		// compile would fail every decision of the tenant closed.
		var l layerstore.Layer
		if l, err = ls.GetLayer(r.Context(), p.Tenant); err == nil {
			for _, pr := range l.Proposed {
				if pr.ID == id {
					if _, perr := layer.ParseRule(pr.ID, pr.Text); perr != nil {
						problemf(w, r, http.StatusUnprocessableEntity, perr.Error())
						return
					}
				}
			}
			c, err = ls.AcceptLayerRule(r.Context(), p.Tenant, id, p.decider())
		}
	} else {
		c, err = ls.RemoveLayerRule(r.Context(), p.Tenant, id, p.decider())
	}
	if err != nil {
		writeProblem(w, r, layerProblem(err, id))
		return
	}
	writeJSON(w, http.StatusOK, c)
}

// layerProblem is the problem of a layerstore.Layers error.
func layerProblem(err error, id string) serverapi.Problem {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return serverapi.Problem{Status: http.StatusNotFound, Detail: "no rule " + strconv.Quote(id)}
	case errors.Is(err, store.ErrDecided), errors.Is(err, store.ErrExists):
		return serverapi.Problem{Status: http.StatusConflict, Detail: err.Error()}
	case errors.Is(err, store.ErrInvalid):
		return serverapi.Problem{Status: http.StatusUnprocessableEntity, Detail: err.Error()}
	}
	return serverapi.Problem{Status: http.StatusInternalServerError, Detail: "changing the rule layer failed"}
}
