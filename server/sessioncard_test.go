package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/claudegate"
	"github.com/tollgate-dev/tollgate/internal/serveconfig"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/server"
)

const teePolicy = `rules:
  - id: review-tee
    tool: bash
    command: {program: tee}
    decision: ask
    reason: the notes are reviewed
`

// sessionFixture is a server that answers the hooks of Claude Code and
// Codex with teePolicy, with alice (approver) and ci-bot (agent) of acme.
func sessionFixture(t *testing.T) *fixture {
	t.Helper()
	pol, _, err := policy.ParsePolicy("team.yaml", strings.NewReader(teePolicy))
	if err != nil {
		t.Fatal(err)
	}
	tk, err := serveconfig.NewTokens([]serveconfig.TokenEntry{
		{SHA256: serveconfig.HashToken(aliceToken), Name: "alice", Tenant: "acme", Roles: []server.Role{server.RoleOperator, server.RoleApprover}},
		{SHA256: serveconfig.HashToken(agentToken), Name: "ci-bot", Tenant: "acme", Roles: []server.Role{server.RoleAgent}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return newFixture(t, nil, nil, &server.Options{Tokens: tk.Lookup,
		ClaudeCode: &server.ClaudeCodeOptions{Policies: []*policy.Policy{pol}, StateDir: t.TempDir()},
		Codex:      &server.ClaudeCodeOptions{Policies: []*policy.Policy{pol}, StateDir: t.TempDir()}})
}

// A card of a Claude Code or Codex session names the session's source,
// never "agent claude-code" or "command line"; shows the workspace the
// session reported, its last prompt and the model's stated intent marked
// as the agent's report, and the earlier decisions on the tool in the
// session; the runs list and the audit name the source too.
func TestSessionCardContext(t *testing.T) {
	for _, c := range []struct{ path, source string }{
		{"/v1/hooks/claude-code", serverapi.SourceClaudeCode},
		{"/v1/hooks/codex", serverapi.SourceCodex},
	} {
		t.Run(c.source, func(t *testing.T) {
			f := sessionFixture(t)
			event := func(id, prompt, intent string) []byte {
				b, _ := json.Marshal(map[string]any{"session_id": "sess-1", "cwd": "/work/ws", "hook_event_name": "PreToolUse",
					"tool_name": "Bash", "tool_input": map[string]string{"command": "echo hi | tee -a notes.txt"}, "tool_use_id": id,
					"tollgate_prompt": prompt, "tollgate_intent": intent})
				return b
			}
			// A first call nobody answers: an earlier decision on bash.
			var out claudegate.Output
			f.do("POST", c.path+"?wait=50ms", agentToken, event("t1", "", ""), &out)
			if !strings.Contains(permission(out), "no one answered") {
				t.Fatalf("first call: %s", permission(out))
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				var out claudegate.Output
				f.do("POST", c.path+"?wait=1m", agentToken, event("t2", "tidy the notes", "I'll add a line to notes.txt."), &out)
			}()
			a := f.waitPending()
			x := a.Context
			if x == nil || x.Source != c.source || x.Workspace != "/work/ws" || x.Prompt != "tidy the notes" ||
				x.Intent != "I'll add a line to notes.txt." || !x.Reported {
				t.Errorf("context %+v", x)
			}
			if x != nil && (len(x.Earlier) != 1 || x.Earlier[0].Outcome != "expired") {
				t.Errorf("earlier decisions %+v", x.Earlier)
			}
			if a.Agent != c.source || a.RunOwner != "person:ci-bot" || a.AskedBy != "rule:review-tee" {
				t.Errorf("agent %q, owner %q, asked by %q", a.Agent, a.RunOwner, a.AskedBy)
			}
			var runs serverapi.RunPage
			if code := f.do("GET", "/v1/runs", aliceToken, nil, &runs); code != http.StatusOK || len(runs.Runs) != 1 || runs.Runs[0].Source != c.source {
				t.Errorf("runs: %d %+v", code, runs)
			}
			if code := f.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "deny", Reason: "not now", ArgsDigest: a.ArgsDigest}, nil); code != http.StatusOK {
				t.Fatalf("deny: %d", code)
			}
			<-done
			var page serverapi.AuditPage
			if code := f.do("GET", "/v1/audit?source="+c.source, aliceToken, nil, &page); code != http.StatusOK || len(page.Entries) != 2 ||
				page.Entries[1].Outcome != "declined" || page.Entries[1].By != "person:alice" || page.Entries[1].Source != c.source {
				t.Errorf("audit: %d %+v", code, page)
			}
			if code := f.do("GET", "/v1/audit?source=agent", aliceToken, nil, &page); code != http.StatusOK || len(page.Entries) != 0 {
				t.Errorf("audit of agents: %d %+v", code, page)
			}
		})
	}
}
