package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/claudegate"
	"github.com/tollgate-dev/tollgate/internal/serveconfig"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/server"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
)

const agentToken = "tg_agent"

const claudeTeamPolicy = `rules:
  - id: no-rm
    tool: bash
    command: {program: rm}
    decision: deny
    reason: no deletions
  - id: review-notes
    tool: write
    args:
      path: {regex: 'notes'}
    decision: ask
    reason: the notes are reviewed
`

// claudeFixture is a server with a claudeCode: policy and the tokens of
// testTokens plus an agent's (ci-bot, tenant acme).
func claudeFixture(t testing.TB) *fixture {
	t.Helper()
	return claudeFixtureOn(t, memory.New(nil))
}

// claudeFixtureOn is claudeFixture on the store st.
func claudeFixtureOn(t testing.TB, st store.Store) *fixture {
	t.Helper()
	pol, _, err := policy.ParsePolicy("team.yaml", strings.NewReader(claudeTeamPolicy))
	if err != nil {
		t.Fatal(err)
	}
	entries := []serveconfig.TokenEntry{
		{SHA256: serveconfig.HashToken(aliceToken), Name: "alice", Tenant: "acme", Roles: []server.Role{server.RoleOperator, server.RoleApprover}},
		{SHA256: serveconfig.HashToken(agentToken), Name: "ci-bot", Tenant: "acme", Roles: []server.Role{server.RoleAgent}},
		{SHA256: serveconfig.HashToken(agentAdminToken), Name: "ada", Tenant: "acme", Roles: []server.Role{server.RoleAgent, server.RoleAdmin}},
	}
	tk, err := serveconfig.NewTokens(entries)
	if err != nil {
		t.Fatal(err)
	}
	return newFixture(t, st, nil, &server.Options{Tokens: tk.Lookup,
		ClaudeCode: &server.ClaudeCodeOptions{Policies: []*policy.Policy{pol}, StateDir: t.TempDir()}})
}

func hookEvent(ev, toolName, input, id string) []byte {
	b, _ := json.Marshal(map[string]any{"session_id": "sess-1", "cwd": "/work/ws", "hook_event_name": ev, "tool_name": toolName, "tool_input": json.RawMessage(input), "tool_use_id": id})
	return b
}

func permission(out claudegate.Output) string {
	if out.Specific == nil {
		return "none"
	}
	return out.Specific.PermissionDecision + ": " + out.Specific.PermissionDecisionReason
}

// Claude Code's http hook: a deny of the team's policy with its reason; bad
// input denied with a 200 (an http hook's error status would let the call
// run); the endpoint is the agent role's alone.
func TestClaudeHookHTTP(t *testing.T) {
	f := claudeFixture(t)
	var out claudegate.Output
	if code := f.do("POST", "/v1/hooks/claude-code", agentToken, hookEvent("PreToolUse", "Bash", `{"command":"env rm -rf /srv"}`, "t1"), &out); code != http.StatusOK || permission(out) != "deny: denied by rule:no-rm: no deletions" {
		t.Errorf("rm: %d %s", code, permission(out))
	}
	out = claudegate.Output{}
	if code := f.do("POST", "/v1/hooks/claude-code", agentToken, []byte(`{"hook_event_name": "PreToolUse"`), &out); code != http.StatusOK || !strings.HasPrefix(permission(out), "deny: ") {
		t.Errorf("bad input: %d %s", code, permission(out))
	}
	if code := f.do("POST", "/v1/hooks/claude-code", aliceToken, hookEvent("PreToolUse", "Bash", `{"command":"ls"}`, "t2"), nil); code != http.StatusForbidden {
		t.Errorf("an approver's token: %d, want 403", code)
	}
	if code := f.do("GET", "/v1/runs", agentToken, nil, nil); code != http.StatusForbidden {
		t.Errorf("the agent's token listing runs: %d, want 403", code)
	}
	var runs serverapi.RunPage
	f.do("GET", "/v1/runs", aliceToken, nil, &runs)
	if len(runs.Runs) != 1 || runs.Runs[0].Agent != serverapi.ClaudeAgent || runs.Runs[0].Owner != "person:ci-bot" || runs.Runs[0].Status != store.RunRunning {
		t.Errorf("runs %+v", runs.Runs)
	}
	var view struct {
		ToolCalls []struct {
			Name     string
			Decision struct{ Outcome, Reason string }
		}
	}
	f.do("GET", "/v1/runs/"+runs.Runs[0].ID, aliceToken, nil, &view)
	if len(view.ToolCalls) != 1 || view.ToolCalls[0].Name != "bash" || view.ToolCalls[0].Decision.Outcome != "denied" || view.ToolCalls[0].Decision.Reason != "no deletions" {
		t.Errorf("the run's calls: %+v", view.ToolCalls)
	}
	f.do("POST", "/v1/hooks/claude-code", agentToken, []byte(`{"session_id":"sess-1","hook_event_name":"SessionEnd","reason":"exit"}`), nil)
	f.do("GET", "/v1/runs", aliceToken, nil, &runs)
	if len(runs.Runs) != 1 || runs.Runs[0].Status != store.RunDone {
		t.Errorf("after SessionEnd: %+v", runs.Runs)
	}
	// A resumed session goes on in its run.
	f.do("POST", "/v1/hooks/claude-code", agentToken, hookEvent("PreToolUse", "Bash", `{"command":"ls"}`, "t3"), nil)
	f.do("GET", "/v1/runs", aliceToken, nil, &runs)
	if len(runs.Runs) != 1 || runs.Runs[0].Status != store.RunRunning {
		t.Errorf("after a resume: %+v", runs.Runs)
	}
}

// An ask waits for a person: an approval with edited arguments becomes
// updatedInput in Claude Code's shape; the agent's token cannot decide.
func TestClaudeHookAskApprovedWithEdit(t *testing.T) {
	f := claudeFixture(t)
	got := make(chan claudegate.Output, 1)
	go func() {
		var out claudegate.Output
		f.do("POST", "/v1/hooks/claude-code?wait=1m", agentToken, hookEvent("PreToolUse", "Write", `{"file_path":"/work/ws/notes.txt","content":"a"}`, "t1"), &out)
		got <- out
	}()
	var a serverapi.ApprovalView
	waitFor(t, "the hook's approval", func() bool {
		var page serverapi.ApprovalPage
		f.do("GET", "/v1/approvals?status=pending", aliceToken, nil, &page)
		if len(page.Approvals) > 0 {
			a = page.Approvals[0]
		}
		return a.ID != ""
	})
	edit := json.RawMessage(`{"path":"/work/ws/notes.txt","content":"b"}`)
	if code := f.do("POST", "/v1/approvals/"+a.ID+"/decision", agentToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, nil); code != http.StatusForbidden {
		t.Errorf("the agent deciding: %d, want 403", code)
	}
	if code := f.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest, EditedArgs: edit}, nil); code != http.StatusOK {
		t.Fatalf("deciding: %d", code)
	}
	out := <-got
	var in bytes.Buffer
	if out.Specific != nil {
		_ = json.Compact(&in, out.Specific.UpdatedInput)
	}
	if permission(out) != "allow: approved by person:alice" || in.String() != `{"content":"b","file_path":"/work/ws/notes.txt"}` {
		t.Errorf("%s %s", permission(out), in.String())
	}
}

// No answer within ?wait= denies, says so, and closes the request.
func TestClaudeHookNoAnswer(t *testing.T) {
	f := claudeFixture(t)
	var out claudegate.Output
	f.do("POST", "/v1/hooks/claude-code?wait=50ms", agentToken, hookEvent("PreToolUse", "Write", `{"file_path":"/work/ws/notes.txt","content":"a"}`, "t1"), &out)
	if !strings.Contains(permission(out), "deny: no one answered") {
		t.Errorf("%s", permission(out))
	}
	var page serverapi.ApprovalPage
	f.do("GET", "/v1/approvals?status=pending", aliceToken, nil, &page)
	if len(page.Approvals) != 0 {
		t.Errorf("still pending: %+v", page.Approvals)
	}
}

// The hook's own policy's ask (the Tollgate-Ask header) makes the server
// ask a person where its own policy has no rule; it never allows.
func TestClaudeHookLocalAsk(t *testing.T) {
	f := claudeFixture(t)
	var out claudegate.Output
	f.do("POST", "/v1/hooks/claude-code?wait=50ms", agentToken, hookEvent("PreToolUse", "Bash", `{"command":"git push"}`, "t1"), &out, serverapi.HeaderAsk, "the hook's policy asks")
	if !strings.Contains(permission(out), "deny: no one answered") {
		t.Errorf("with the header: %s", permission(out))
	}
	out = claudegate.Output{}
	f.do("POST", "/v1/hooks/claude-code?wait=50ms", agentToken, hookEvent("PreToolUse", "Bash", `{"command":"git push"}`, "t2"), &out)
	if permission(out) != "none" {
		t.Errorf("without: %s", permission(out))
	}
}

// BenchmarkClaudeHookHTTP is a PreToolUse decision through the http hook
// on loopback (the server's policy denies; the call is recorded on the
// session's run); it reports the median (p50-ns).
func BenchmarkClaudeHookHTTP(b *testing.B) {
	f := claudeFixture(b)
	ev := hookEvent("PreToolUse", "Bash", `{"command":"env rm -rf /srv"}`, "t1")
	var times []time.Duration
	for b.Loop() {
		start := time.Now()
		var out claudegate.Output
		if f.do("POST", "/v1/hooks/claude-code", agentToken, ev, &out) != http.StatusOK {
			b.Fatal("status")
		}
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns")
}

// agentAdminToken is a token with the agent role and the admin role.
const agentAdminToken = "tg_agent_admin_0123456789abcdef0123456789"

// A token that may decide approvals is refused on the hook routes, with a
// deny (not an error status, which an http hook lets through): the
// agent's shell can read its hooks' token, and with one that may decide it
// would approve its own asks. A malformed ?wait= is a deny too.
func TestClaudeHookRefusesATokenThatMayDecide(t *testing.T) {
	f := claudeFixture(t)
	var out claudegate.Output
	if code := f.do("POST", "/v1/hooks/claude-code?wait=50ms", agentAdminToken, hookEvent("PreToolUse", "Write", `{"file_path":"/work/ws/notes.txt","content":"a"}`, "t1"), &out); code != http.StatusOK || !strings.HasPrefix(permission(out), "deny: ") || !strings.Contains(permission(out), "may decide approvals") {
		t.Fatalf("an admin agent token: %d %q, want a deny", code, permission(out))
	}
	out = claudegate.Output{}
	if code := f.do("POST", "/v1/hooks/claude-code?wait=ten", agentToken, hookEvent("PreToolUse", "Bash", `{"command":"ls"}`, "t2"), &out); code != http.StatusOK || !strings.HasPrefix(permission(out), "deny: ") {
		t.Fatalf("a bad wait: %d %q, want a deny", code, permission(out))
	}
}
