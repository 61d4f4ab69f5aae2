package server

import (
	"net/http"
	"slices"
	"strings"
)

// AgentInfo is an agent of the server, as GET /v1/agents lists it.
type AgentInfo struct {
	Name string `json:"name"`
	// Model is the model reference ("openai:gpt-4.1-mini").
	Model string `json:"model"`
	// Autonomy is the agent's configured autonomy level (the tenant's or a
	// run's may override it).
	Autonomy string `json:"autonomy,omitempty"`
}

func (s *Server) listAgents(w http.ResponseWriter, r *http.Request, p Principal) {
	out := []AgentInfo{}
	for name, cfg := range s.agents {
		if _, ok := s.agent(name, p.Tenant); !ok {
			continue
		}
		out = append(out, AgentInfo{Name: name, Model: cfg.Model.Provider, Autonomy: cfg.Autonomy})
		if cfg.Model.Provider != "script" {
			out[len(out)-1].Model = cfg.Model.String()
		}
	}
	slices.SortFunc(out, func(a, b AgentInfo) int { return strings.Compare(a.Name, b.Name) })
	writeJSON(w, http.StatusOK, map[string]any{"agents": out})
}
