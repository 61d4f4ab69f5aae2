package server

import (
	"fmt"
	"net/http"
	"path/filepath"
	"slices"

	"github.com/tollgate-dev/tollgate/internal/bounded"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/store"
)

// agentPolicy is GET /v1/agents/{name}/policy, for the viewers of the
// tenants that may use the agent. The file is looked up by the agent's
// name in the server's configuration, never by a path the request gives:
// an unknown agent, another tenant's, or one without a policy file is
// 404 alike.
func (s *Server) agentPolicy(w http.ResponseWriter, r *http.Request, p Principal) {
	name := r.PathValue("name")
	path := s.policyFileOf(name, p.Tenant)
	if path == "" {
		problemf(w, r, http.StatusNotFound, fmt.Sprintf("no agent %q with a policy file", name))
		return
	}
	src, err := bounded.ReadFile(path, bounded.Limits{MaxBytes: 4 << 20})
	if err != nil {
		s.log.Warn("policy file unreadable", "agent", name, "error", err)
		problemf(w, r, http.StatusInternalServerError, fmt.Sprintf("the policy file of agent %q cannot be read", name))
		return
	}
	writeJSON(w, http.StatusOK, serverapi.PolicyFileView{Agent: name, File: filepath.Base(path), Text: string(src)})
}

// policyFileOf is the policy file the server's configuration names for
// the agent name, when principals of tenant may use it; "" otherwise.
func (s *Server) policyFileOf(name, tenant string) string {
	if cfg, ok := s.agent(name, tenant); ok {
		return cfg.PolicyFile
	}
	if cc := s.sessionAgent(name); cc != nil && (len(cc.opts.Tenants) == 0 || slices.Contains(cc.opts.Tenants, tenant)) {
		return cc.opts.PolicyFile
	}
	return ""
}

// sessionAgent is the Claude Code or Codex endpoint whose sessions are
// runs of the agent name, or nil.
func (s *Server) sessionAgent(name string) *claudeCode {
	switch {
	case name == serverapi.ClaudeAgent && s.claude != nil:
		return s.claude
	case name == serverapi.CodexAgent && s.codex != nil:
		return s.codex
	}
	return nil
}

// rulePolicy is the agent whose policy file GET /v1/agents/{name}/policy
// serves for run's calls: the run's agent, when the file its rules were
// read from (path) is the one the configuration names for it now; ""
// otherwise.
func (s *Server) rulePolicy(run store.Run, path string) string {
	agent, _ := s.runPolicyFile(run)
	if path == "" || s.policyFileOf(agent, run.Tenant) != path {
		return ""
	}
	return agent
}
