package server

import (
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/runs"
)

func (s *Server) listAgents(w http.ResponseWriter, r *http.Request, p Principal) {
	out := []serverapi.AgentInfo{}
	for name, cfg := range s.agents {
		if _, ok := s.agent(name, p.Tenant); !ok {
			continue
		}
		out = append(out, serverapi.AgentInfo{Name: name, Model: cfg.Model.Provider, Autonomy: cfg.Autonomy})
		if cfg.Model.Provider != "script" {
			out[len(out)-1].Model = cfg.Model.String()
		}
	}
	slices.SortFunc(out, func(a, b serverapi.AgentInfo) int { return strings.Compare(a.Name, b.Name) })
	writeJSON(w, http.StatusOK, map[string]any{"agents": out})
}

// agentBuildProblem words the error of building agent name's run
// configuration: by Options.AgentProblem when set, else as "KEY: MESSAGE",
// KEY the server.yaml key of the [runs.FieldError]'s field ("policy" for
// "policyFile"), or the error's text for an error about no one field.
func (s *Server) agentBuildProblem(name string, err error) string {
	if s.agentProblem != nil {
		return s.agentProblem(name, err)
	}
	if rfe, ok := errors.AsType[*runs.FieldError](err); ok {
		return configKey(rfe.Field) + ": " + rfe.Err.Error()
	}
	return err.Error()
}

// configKeys maps the JSON names of [runs.RunConfig] fields that differ
// from their keys in server.yaml to those keys.
var configKeys = map[string]string{
	runcore.FieldPolicyFile: "policy", runcore.FieldHooksFiles: "hooks", runcore.FieldMCPFiles: "mcp",
	runcore.FieldRecordsFile: "records", "model.baseUrl": "baseUrl", "model.apiKeyEnv": "apiKeyEnv",
	"model.name": "model", "model.provider": "model",
}

// configKey returns the server.yaml key of a field ("policyFile" is at
// policy:, "sandbox.bash" at sandbox.bash:).
func configKey(field string) string {
	if k, ok := configKeys[field]; ok {
		return k
	}
	return field
}
