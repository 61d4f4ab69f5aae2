package server_test

import (
	"context"
	"database/sql"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/claudegate"
	"github.com/tollgate-dev/tollgate/internal/layerstore"
	"github.com/tollgate-dev/tollgate/internal/serveconfig"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/server"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/sqlite"
	"github.com/tollgate-dev/tollgate/tool"
)

// rulesTokens are the test tokens and an agent's token of tenant acme.
func rulesTokens(t *testing.T) *serveconfig.Tokens {
	t.Helper()
	tk, err := serveconfig.NewTokens([]serveconfig.TokenEntry{
		{SHA256: serveconfig.HashToken(aliceToken), Name: "alice", Tenant: "acme", Roles: []server.Role{server.RoleOperator, server.RoleApprover}},
		{SHA256: serveconfig.HashToken(vicToken), Name: "vic", Tenant: "acme", Roles: []server.Role{server.RoleViewer}},
		{SHA256: serveconfig.HashToken(adaToken), Name: "ada", Tenant: "acme", Roles: []server.Role{server.RoleAdmin}},
		{SHA256: serveconfig.HashToken(bobToken), Name: "bob", Tenant: "globex", Roles: []server.Role{server.RoleAdmin}},
		{SHA256: serveconfig.HashToken(agentToken), Name: "claude", Tenant: "acme", Roles: []server.Role{server.RoleAgent}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// approveFirst approves the pending transfer of a new run of tenant acme
// and returns the approval.
func approveFirst(t *testing.T, f *fixture) serverapi.ApprovalView {
	t.Helper()
	run := f.startRun()
	a := f.pending(run)
	if code := f.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, nil); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	f.waitRun(run, store.RunDone)
	return a
}

// Approve and remember: an approver proposes, an admin accepts, and the
// next identical call of the tenant runs without asking, approved by the
// layer's version; another tenant's run still asks.
func TestRememberAllow(t *testing.T) {
	f := newFixture(t, nil, nil, &server.Options{Tokens: rulesTokens(t).Lookup})
	a := approveFirst(t, f)

	var rule layerstore.LayerRule
	if code := f.do("POST", "/v1/rules/proposals", aliceToken, serverapi.ProposeRequest{Approval: a.ID, Effect: "allow"}, &rule); code != http.StatusCreated {
		t.Fatalf("propose: %d %+v", code, rule)
	}
	if rule.Status != layerstore.LayerProposed || !strings.Contains(rule.Text, `"amount": {equals: 5}`) || rule.ProposedBy.Name != "alice" || rule.Source != a.RunID+"/"+a.ID {
		t.Fatalf("proposal = %+v", rule)
	}
	// Proposed is not accepted: the next run still asks.
	f.pending(f.startRun())

	if code := f.do("POST", "/v1/rules/"+rule.ID+"/accept", aliceToken, nil, nil); code != http.StatusForbidden {
		t.Fatalf("an approver accepted: %d", code)
	}
	var change layerstore.LayerChange
	if code := f.do("POST", "/v1/rules/"+rule.ID+"/accept", adaToken, nil, &change); code != http.StatusOK || change.Version != 1 || change.By.Name != "ada" {
		t.Fatalf("accept: %d %+v", code, change)
	}

	before := f.transfer.Count()
	run := f.startRun()
	f.waitRun(run, store.RunDone)
	if got := f.transfer.Count(); got != before+1 {
		t.Fatalf("transfer ran %d times, want once without asking", got-before)
	}
	var audit serverapi.AuditPage
	f.do("GET", "/v1/audit?outcome=approved", vicToken, nil, &audit)
	found := false
	for _, e := range audit.Entries {
		if e.RunID == run {
			found = true
			if e.By != "hook:rule-layer" || !strings.Contains(e.Reason, "approved by rule layer v1 (rule "+rule.ID+"), accepted by person:ada") || e.LayerVersion != 1 {
				t.Fatalf("the remembered decision: by %s, %q", e.By, e.Reason)
			}
		}
	}
	if !found {
		t.Fatalf("no approved audit entry of run %s: %+v", run, audit.Entries)
	}

	// Another tenant's run is not answered by acme's layer.
	var v serverapi.RunView
	if code := f.do("POST", "/v1/runs", bobToken, serverapi.StartRunRequest{Agent: "payer", Prompt: "pay"}, &v); code != http.StatusCreated {
		t.Fatalf("globex run: %d", code)
	}
	f.waitRun(v.ID, store.RunPending)

	// The history names the change; removing the rule asks again.
	var layer serverapi.RuleLayerView
	if code := f.do("GET", "/v1/rules", vicToken, nil, &layer); code != http.StatusOK || layer.Version != 1 || len(layer.Rules) != 1 || len(layer.History) != 1 || layer.History[0].Action != layerstore.LayerAccept {
		t.Fatalf("GET /v1/rules: %d %+v", code, layer)
	}
	if code := f.do("DELETE", "/v1/rules/"+rule.ID, adaToken, nil, &change); code != http.StatusOK || change.Version != 2 {
		t.Fatalf("remove: %d %+v", code, change)
	}
	f.pending(f.startRun())
}

// Always deny: the remembered deny is one more deny vote.
func TestRememberDeny(t *testing.T) {
	f := newFixture(t, nil, nil, &server.Options{Tokens: rulesTokens(t).Lookup})
	a := approveFirst(t, f)
	var rule layerstore.LayerRule
	if code := f.do("POST", "/v1/rules/proposals", aliceToken, serverapi.ProposeRequest{Approval: a.ID, Effect: "deny"}, &rule); code != http.StatusCreated {
		t.Fatalf("propose: %d", code)
	}
	if code := f.do("POST", "/v1/rules/"+rule.ID+"/accept", adaToken, nil, nil); code != http.StatusOK {
		t.Fatalf("accept: %d", code)
	}
	before := f.transfer.Count()
	run := f.startRun()
	f.waitRun(run, store.RunDone)
	if f.transfer.Count() != before {
		t.Fatal("a remembered deny let the call run")
	}
	var audit serverapi.AuditPage
	f.do("GET", "/v1/audit?outcome=denied", vicToken, nil, &audit)
	if len(audit.Entries) != 1 || audit.Entries[0].RunID != run || audit.Entries[0].By != "rule:"+rule.ID || !strings.Contains(audit.Entries[0].Reason, "rule layer v1, accepted by person:ada") || audit.Entries[0].LayerVersion != 1 {
		t.Fatalf("denied entries: %+v", audit.Entries)
	}
}

// Each endpoint: roles, tenants, and what it refuses.
func TestRulesEndpoints(t *testing.T) {
	f := newFixture(t, nil, nil, &server.Options{Tokens: rulesTokens(t).Lookup})
	run := f.startRun()
	pending := f.pending(run)
	if code := f.do("POST", "/v1/rules/proposals", aliceToken, serverapi.ProposeRequest{Approval: pending.ID, Effect: "allow"}, nil); code != http.StatusConflict {
		t.Fatalf("proposing from a pending approval: %d, want 409", code)
	}
	f.do("POST", "/v1/approvals/"+pending.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "deny", Reason: "no", ArgsDigest: pending.ArgsDigest}, nil)
	f.waitRun(run, store.RunDone)
	for _, c := range []struct {
		token string
		body  serverapi.ProposeRequest
		want  int
	}{
		{vicToken, serverapi.ProposeRequest{Approval: pending.ID, Effect: "allow"}, http.StatusForbidden},
		{agentToken, serverapi.ProposeRequest{Approval: pending.ID, Effect: "allow"}, http.StatusForbidden},
		{"", serverapi.ProposeRequest{Approval: pending.ID, Effect: "allow"}, http.StatusUnauthorized},
		{bobToken, serverapi.ProposeRequest{Approval: pending.ID, Effect: "allow"}, http.StatusNotFound},
		{aliceToken, serverapi.ProposeRequest{Approval: pending.ID, Effect: "ask"}, http.StatusBadRequest},
		{aliceToken, serverapi.ProposeRequest{Approval: "req_nope", Effect: "allow"}, http.StatusNotFound},
	} {
		if code := f.do("POST", "/v1/rules/proposals", c.token, c.body, nil); code != c.want {
			t.Errorf("propose as %q %+v: %d, want %d", c.token, c.body, code, c.want)
		}
	}
	var rule layerstore.LayerRule
	if code := f.do("POST", "/v1/rules/proposals", aliceToken, serverapi.ProposeRequest{Approval: pending.ID, Effect: "deny"}, &rule); code != http.StatusCreated {
		t.Fatalf("propose from a denied approval: %d", code)
	}
	for _, c := range []struct {
		method, path, token string
		want                int
	}{
		{"GET", "/v1/rules", agentToken, http.StatusForbidden},
		{"GET", "/v1/rules", "", http.StatusUnauthorized},
		{"POST", "/v1/rules/" + rule.ID + "/accept", vicToken, http.StatusForbidden},
		{"POST", "/v1/rules/" + rule.ID + "/accept", agentToken, http.StatusForbidden},
		{"POST", "/v1/rules/" + rule.ID + "/accept", bobToken, http.StatusNotFound},
		{"DELETE", "/v1/rules/" + rule.ID, bobToken, http.StatusNotFound},
		{"DELETE", "/v1/rules/" + rule.ID, aliceToken, http.StatusForbidden},
		{"POST", "/v1/rules/nope/accept", adaToken, http.StatusNotFound},
	} {
		if code := f.do(c.method, c.path, c.token, nil, nil); code != c.want {
			t.Errorf("%s %s as %q: %d, want %d", c.method, c.path, c.token, code, c.want)
		}
	}
	var globex serverapi.RuleLayerView
	if code := f.do("GET", "/v1/rules", bobToken, nil, &globex); code != http.StatusOK || len(globex.Proposed) != 0 || globex.Version != 0 {
		t.Fatalf("globex sees acme's layer: %d %+v", code, globex)
	}
	if code := f.do("POST", "/v1/rules/"+rule.ID+"/accept", adaToken, nil, nil); code != http.StatusOK {
		t.Fatalf("accept: %d", code)
	}
	if code := f.do("POST", "/v1/rules/"+rule.ID+"/accept", adaToken, nil, nil); code != http.StatusConflict {
		t.Fatalf("accepting twice: %d, want 409", code)
	}
}

// A Claude Code session of the tenant is decided with its layer too: a
// write approved once and remembered is allowed at the next PreToolUse
// without a person.
func TestRememberClaudeCode(t *testing.T) {
	f := claudeFixture(t)
	got := make(chan claudegate.Output, 1)
	go func() {
		var out claudegate.Output
		f.do("POST", "/v1/hooks/claude-code?wait=1m", agentToken, hookEvent("PreToolUse", "Write", `{"file_path":"/work/ws/notes/a.txt","content":"a"}`, "t1"), &out)
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
	if code := f.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, nil); code != http.StatusOK {
		t.Fatalf("deciding: %d", code)
	}
	<-got
	var rule layerstore.LayerRule
	if code := f.do("POST", "/v1/rules/proposals", aliceToken, serverapi.ProposeRequest{Approval: a.ID, Effect: "allow"}, &rule); code != http.StatusCreated || !strings.Contains(rule.Text, `path: {pathPrefix: "/work/ws/notes"}`) {
		t.Fatalf("propose: %d %+v", code, rule)
	}
	var out claudegate.Output
	f.do("POST", "/v1/hooks/claude-code?wait=50ms", agentToken, hookEvent("PreToolUse", "Write", `{"file_path":"/work/ws/notes/b.txt","content":"b"}`, "t2"), &out)
	if strings.HasPrefix(permission(out), "allow") {
		t.Fatalf("a proposal answered: %s", permission(out))
	}
	if code := f.do("POST", "/v1/rules/"+rule.ID+"/accept", agentAdminToken, nil, nil); code != http.StatusForbidden {
		t.Fatalf("an agent's token that is also an admin's accepted: %d, want 403", code)
	}
	if _, err := f.store.(layerstore.Layers).AcceptLayerRule(t.Context(), "acme", rule.ID, tool.Principal{Kind: tool.PrincipalPerson, Name: "ada"}); err != nil {
		t.Fatal(err)
	}
	f.do("POST", "/v1/hooks/claude-code?wait=50ms", agentToken, hookEvent("PreToolUse", "Write", `{"file_path":"/work/ws/notes/b.txt","content":"b"}`, "t3"), &out)
	if p := permission(out); p != "allow: approved by hook:rule-layer" {
		t.Fatalf("the remembered write: %s", p)
	}
	f.do("POST", "/v1/hooks/claude-code?wait=50ms", agentToken, hookEvent("PreToolUse", "Write", `{"file_path":"/work/ws/other/notes.txt","content":"b"}`, "t4"), &out)
	if strings.HasPrefix(permission(out), "allow") {
		t.Fatalf("a write outside the rule's scope: %s", permission(out))
	}
}

// An approval with edited arguments is remembered as what the person
// approved: the edited arguments.
func TestRememberEdited(t *testing.T) {
	f := newFixture(t, nil, nil, &server.Options{Tokens: rulesTokens(t).Lookup})
	run := f.startRun()
	a := f.pending(run)
	if code := f.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest, EditedArgs: []byte(`{"amount":3}`)}, nil); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	f.waitRun(run, store.RunDone)
	var rule layerstore.LayerRule
	if code := f.do("POST", "/v1/rules/proposals", aliceToken, serverapi.ProposeRequest{Approval: a.ID, Effect: "allow"}, &rule); code != http.StatusCreated || !strings.Contains(rule.Text, `"amount": {equals: 3}`) {
		t.Fatalf("propose: %d\n%s", code, rule.Text)
	}
}

// A decision the store cannot verify (written into the database by a
// writer without its key) is no ground for a rule.
func TestProposeRefusesUnverified(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tollgate.db")
	s, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f := newFixture(t, s, nil, &server.Options{Tokens: rulesTokens(t).Lookup})
	a := approveFirst(t, f)
	// The run goes on after the approval and writes the store meanwhile:
	// the forger waits for SQLite's writer lock as the store does.
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE approvals SET mac = '' WHERE id = ?`, a.ID); err != nil {
		t.Fatal(err)
	}
	var p serverapi.Problem
	if code := f.do("POST", "/v1/rules/proposals", aliceToken, serverapi.ProposeRequest{Approval: a.ID, Effect: "allow"}, &p); code != http.StatusConflict || !strings.Contains(p.Detail, "no valid seal") {
		t.Fatalf("proposing from an unverified approval: %d %+v, want 409", code, p)
	}
}
