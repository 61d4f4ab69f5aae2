package server_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/claudegate"
	"github.com/tollgate-dev/tollgate/internal/serveconfig"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/server"
	"github.com/tollgate-dev/tollgate/store"
)

const payerPolicy = "# the payer's policy\nrules:\n  - id: ask-transfer\n    tool: transfer\n    decision: ask\n    reason: money moves\n"

// GET /v1/agents/{name}/policy shows the policy file the configuration
// names for an agent to the viewers of its tenants, and nothing else: no
// path a request names, no other tenant's agent's file. A card and an
// audit entry name the agent whose file holds their rule.
func TestAgentPolicyFile(t *testing.T) {
	payer := payerConfig(t)
	payer.PolicyFile = writeFile(t, t.TempDir(), "policy.yaml", payerPolicy)
	theirs := payerConfig(t)
	theirs.PolicyFile = writeFile(t, t.TempDir(), "globex.yaml", "rules: []\n# globex's secret rules\n")
	f := newFixture(t, nil, nil, &server.Options{
		Agents:       map[string]runs.RunConfig{"payer": payer, "theirs": theirs, "bare": payerConfig(t)},
		AgentTenants: map[string][]string{"payer": {"acme"}, "theirs": {"globex"}},
	})
	var v serverapi.PolicyFileView
	if code := f.do("GET", "/v1/agents/payer/policy", vicToken, nil, &v); code != http.StatusOK || v.Agent != "payer" || v.File != "policy.yaml" || v.Text != payerPolicy {
		t.Fatalf("the payer's policy: %d %+v", code, v)
	}
	a := f.pending(f.startRun())
	if a.RuleAt != "policy.yaml:3:5" || a.RulePolicy != "payer" {
		t.Errorf("card: rule at %q in the policy of %q", a.RuleAt, a.RulePolicy)
	}
	if code := f.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, nil); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	f.waitRun(a.RunID, store.RunDone)
	var page serverapi.AuditPage
	if code := f.do("GET", "/v1/audit", vicToken, nil, &page); code != http.StatusOK || len(page.Entries) != 1 ||
		page.Entries[0].RuleAt != "policy.yaml:3:5" || page.Entries[0].RulePolicy != "payer" {
		t.Errorf("audit: %d %+v", code, page)
	}

	for _, c := range []struct {
		path, token string
		want        int
	}{
		{"/v1/agents/payer/policy", bobToken, http.StatusNotFound},  // another tenant
		{"/v1/agents/theirs/policy", vicToken, http.StatusNotFound}, // another tenant's agent
		{"/v1/agents/theirs/policy", adaToken, http.StatusNotFound}, // even for an admin
		{"/v1/agents/bare/policy", vicToken, http.StatusNotFound},   // no policy file
		{"/v1/agents/nobody/policy", vicToken, http.StatusNotFound}, // no such agent
		{"/v1/agents/payer/policy", "", http.StatusUnauthorized},    // no token
		{"/v1/agents/policy.yaml/policy", vicToken, http.StatusNotFound},
		{"/v1/agents/..%2F..%2F..%2F..%2Fetc%2Fpasswd/policy", vicToken, http.StatusNotFound},
		{"/v1/agents/%2Fetc%2Fpasswd/policy", vicToken, http.StatusNotFound},
		{"/v1/agents/" + oneSegment(theirs.PolicyFile) + "/policy", vicToken, http.StatusNotFound},
	} {
		req, err := http.NewRequest("GET", f.ts.URL+c.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want || strings.Contains(string(body), "secret") || strings.Contains(string(body), "root:") {
			t.Errorf("%s as %q: %d %s, want %d", c.path, c.token, resp.StatusCode, body, c.want)
		}
	}
	// A path with dots is cleaned by the router before any handler sees it.
	req, _ := http.NewRequest("GET", f.ts.URL+"/v1/agents/payer/../../../etc/passwd", nil)
	req.Header.Set("Authorization", "Bearer "+vicToken)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK || strings.Contains(string(body), "root:") {
		t.Errorf("dotted path: %d %s", resp.StatusCode, body)
	}
}

// oneSegment escapes every slash of p, as one path segment.
func oneSegment(p string) string { return strings.ReplaceAll(p, "/", "%2F") }

// A Claude Code session's card names the line of the claudeCode: policy's
// rule that asked, in the file GET /v1/agents/claude-code/policy shows.
func TestClaudeSessionRuleAt(t *testing.T) {
	path := writeFile(t, t.TempDir(), "team.yaml", claudeTeamPolicy)
	pol, _, err := policy.LoadPolicy(path)
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
	f := newFixture(t, nil, nil, &server.Options{Tokens: tk.Lookup,
		ClaudeCode: &server.ClaudeCodeOptions{Policies: []*policy.Policy{pol}, PolicyFile: path, StateDir: t.TempDir()}})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var out claudegate.Output
		f.do("POST", "/v1/hooks/claude-code?wait=1m", agentToken, hookEvent("PreToolUse", "Write", `{"file_path":"/work/ws/notes.txt","content":"a"}`, "t1"), &out)
	}()
	a := f.waitPending()
	if a.RuleAt != "team.yaml:7:5" || a.RulePolicy != serverapi.ClaudeAgent {
		t.Errorf("card: rule at %q in the policy of %q", a.RuleAt, a.RulePolicy)
	}
	var v serverapi.PolicyFileView
	if code := f.do("GET", "/v1/agents/claude-code/policy", aliceToken, nil, &v); code != http.StatusOK || v.File != "team.yaml" || v.Text != claudeTeamPolicy {
		t.Errorf("the session's policy: %d %+v", code, v)
	}
	if code := f.do("GET", "/v1/agents/codex/policy", aliceToken, nil, nil); code != http.StatusNotFound {
		t.Errorf("codex, not configured: %d", code)
	}
	if code := f.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "deny", Reason: "no", ArgsDigest: a.ArgsDigest}, nil); code != http.StatusOK {
		t.Fatalf("deny: %d", code)
	}
	<-done
}

// waitPending returns the first pending approval of the tenant acme, once
// there is one, following the store's event log.
func (f *fixture) waitPending() serverapi.ApprovalView {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var after int64
	for {
		var page serverapi.ApprovalPage
		f.do("GET", "/v1/approvals?status=pending", aliceToken, nil, &page)
		if len(page.Approvals) > 0 {
			return page.Approvals[0]
		}
		if evs, _ := f.store.ListEvents(ctx, store.EventFilter{AllTenants: true, AfterSeq: after}); len(evs) > 0 {
			after = evs[len(evs)-1].Seq
			continue
		}
		if err := f.store.WaitEvents(ctx, store.EventFilter{AllTenants: true, AfterSeq: after}); err != nil {
			f.t.Fatal("no approval came")
		}
	}
}
