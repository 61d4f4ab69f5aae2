package server

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// maxPolicyFiles bounds the policy files kept read (a file changed on
// disk is read again).
const maxPolicyFiles = 64

// policyFiles keeps the policy files of runs, read once per version on
// disk (size and modification time).
type policyFiles struct {
	mu sync.Mutex
	m  map[string]policyFile
}

type policyFile struct {
	size int64
	mod  time.Time
	p    *policy.Policy // nil when the file does not load
}

// get returns the policy of the file path, or nil when it cannot be read.
func (pf *policyFiles) get(path string) *policy.Policy {
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	pf.mu.Lock()
	defer pf.mu.Unlock()
	if c, ok := pf.m[path]; ok && c.size == fi.Size() && c.mod.Equal(fi.ModTime()) {
		return c.p
	}
	p, _, err := policy.LoadPolicy(path)
	if err != nil {
		p = nil
	}
	if pf.m == nil || len(pf.m) >= maxPolicyFiles {
		pf.m = map[string]policyFile{}
	}
	pf.m[path] = policyFile{size: fi.Size(), mod: fi.ModTime(), p: p}
	return p
}

// showPolicy adds to v what the run's policy file says about the call: the
// risk as the policy judges it (its risk declarations first, then the
// hints) and where the rule that asked is written (FILE:LINE:COL).
func (s *Server) showPolicy(v *serverapi.ApprovalView, a store.Approval, run *store.Run, args []byte) {
	if run == nil {
		return
	}
	path, p := s.runPolicy(*run)
	if p == nil {
		return
	}
	ev := p.Evaluate(approval.Call{Tool: a.Tool, Args: args, Hints: v.Hints, RunID: a.RunID})
	v.Risk, v.RiskFrom = ev.Risk, ev.RiskFrom
	v.RuleAt = ruleAt(p, path, tool.PrincipalOf(v.AskedBy))
	if v.RuleAt != "" {
		v.RulePolicy = s.rulePolicy(*run, path)
	}
}

// ruleAt is where the rule by is written in the policy p of the file
// path ("policy.yaml:12:5"), or "" when by is not one of its rules.
func ruleAt(p *policy.Policy, path string, by tool.Principal) string {
	if p == nil || by.Kind != tool.PrincipalRule {
		return ""
	}
	for _, r := range p.Spec().Rules {
		if r.ID == by.Name && r.Line > 0 {
			return fmt.Sprintf("%s:%d:%d", filepath.Base(path), r.Line, r.Col)
		}
	}
	return ""
}

// runPolicy returns the policy file of run and its policy, or "" and nil:
// the run's configured file, or for a Claude Code or Codex session the
// file of the server's section ([ClaudeCodeOptions.PolicyFile]).
func (s *Server) runPolicy(run store.Run) (string, *policy.Policy) {
	_, path := s.runPolicyFile(run)
	if path == "" {
		return "", nil
	}
	return path, s.policies.get(path)
}

// runPolicyFile returns the agent of run and the policy file its calls
// are decided with ("" when none): the run's configured file, or for a
// Claude Code or Codex session's run the file of the server's section.
func (s *Server) runPolicyFile(run store.Run) (agent, path string) {
	if claudeSession(run) {
		var c sessionConfig
		_ = json.Unmarshal(run.Config, &c)
		if cc := s.sessionAgent(c.Agent); cc != nil {
			return c.Agent, cc.opts.PolicyFile
		}
		return c.Agent, ""
	}
	cfg, err := runcore.LoadConfig(run)
	if err != nil {
		return "", ""
	}
	return cfg.Agent, cfg.PolicyFile
}
