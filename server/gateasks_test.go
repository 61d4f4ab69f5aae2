package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/serveconfig"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/mcpgateway"
	"github.com/tollgate-dev/tollgate/server"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/tool"
)

// globexAgentToken is an agent of tenant globex.
const globexAgentToken = "tg_globex_agent"

// gateFixture is a server with a gateway: section (no mounted gateway):
// the tokens of testTokens, ci-bot (agent, acme) and gbot (agent, globex).
func gateFixture(t testing.TB) *fixture {
	t.Helper()
	tk, err := serveconfig.NewTokens([]serveconfig.TokenEntry{
		{SHA256: serveconfig.HashToken(aliceToken), Name: "alice", Tenant: "acme", Roles: []server.Role{server.RoleOperator, server.RoleApprover}},
		{SHA256: serveconfig.HashToken(agentToken), Name: "ci-bot", Tenant: "acme", Roles: []server.Role{server.RoleAgent}},
		{SHA256: serveconfig.HashToken(bobToken), Name: "bob", Tenant: "globex", Roles: []server.Role{server.RoleAdmin}},
		{SHA256: serveconfig.HashToken(globexAgentToken), Name: "gbot", Tenant: "globex", Roles: []server.Role{server.RoleAgent}},
		{SHA256: serveconfig.HashToken(agentAdminToken), Name: "ada", Tenant: "acme", Roles: []server.Role{server.RoleAgent, server.RoleAdmin}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return newFixture(t, memory.New(nil), nil, &server.Options{Tokens: tk.Lookup, Gateway: &server.GatewayOptions{}})
}

// gateAsk is what `tollgate gateway --server` sends for a call of
// mcp__fs__write with args, expiring in ttl.
func gateAsk(id, args string, ttl time.Duration) serverapi.GateAskRequest {
	exp := time.Now().Add(ttl)
	raw := json.RawMessage(args)
	data, _ := json.Marshal(approval.RequestData{Tool: "mcp__fs__write", CallID: "mcp_1", Args: raw, Digest: approval.Digest(raw)})
	return serverapi.GateAskRequest{
		Session: mcpgateway.Session{ID: "sess-1", Name: "editor", Version: "2.0"},
		Call:    gate.Call{ID: "mcp_1", Name: "mcp__fs__write", Args: raw, Source: gate.SourceMCP},
		Pending: gate.Pending{Request: tool.Request{ID: id, Kind: tool.KindApproval, Prompt: "Allow mcp__fs__write?", Data: data, ExpiresAt: &exp},
			Digest: approval.Digest(raw), Args: raw},
	}
}

// An external gateway's ask is an approval of the client session's run, in
// the agent token's tenant: a person edits and approves it once, denies
// another with a reason; the agent's token asks and waits and never
// decides; another tenant neither sees nor reaches it.
func TestGateAsks(t *testing.T) {
	f := gateFixture(t)
	ask := gateAsk("req_1", `{"path":"a.txt"}`, time.Hour)
	for _, tok := range []string{aliceToken, agentAdminToken} {
		if code := f.do("POST", "/v1/gate/asks", tok, ask, nil); code != http.StatusForbidden {
			t.Errorf("a token that may decide (%s) asking: %d, want 403", tok, code)
		}
	}
	bad := gateAsk("req_x", `{"path":"a.txt"}`, time.Hour)
	bad.Pending.Digest = approval.Digest(json.RawMessage(`{"path":"b.txt"}`))
	if code := f.do("POST", "/v1/gate/asks", agentToken, bad, nil); code != http.StatusUnprocessableEntity {
		t.Errorf("a digest of other arguments: %d, want 422", code)
	}
	var v serverapi.GateAskView
	if code := f.do("POST", "/v1/gate/asks", agentToken, ask, &v); code != http.StatusCreated || !strings.HasPrefix(v.RunID, "mc_") || v.Status != store.StatusPending {
		t.Fatalf("ask: %d %+v", code, v)
	}
	path := "/v1/gate/asks/" + v.RunID + "/req_1"
	var got serverapi.GateAskView
	if code := f.do("GET", path+"?wait=0s", agentToken, nil, &got); code != http.StatusOK || got.Status != store.StatusPending {
		t.Errorf("waiting: %d %+v", code, got)
	}
	// Another tenant's agent does not reach it, nor its admin see it.
	if code := f.do("GET", path+"?wait=0s", globexAgentToken, nil, nil); code != http.StatusNotFound {
		t.Errorf("globex's agent reading acme's ask: %d, want 404", code)
	}
	var page serverapi.ApprovalPage
	if f.do("GET", "/v1/approvals", bobToken, nil, &page); len(page.Approvals) != 0 {
		t.Errorf("globex's admin sees %d approvals", len(page.Approvals))
	}
	if code := f.do("POST", "/v1/approvals/req_1/decision", bobToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: ask.Pending.Digest}, nil); code != http.StatusNotFound {
		t.Errorf("globex's admin deciding acme's approval: %d, want 404", code)
	}
	if code := f.do("POST", "/v1/approvals/req_1/decision", agentToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: ask.Pending.Digest}, nil); code != http.StatusForbidden {
		t.Errorf("the agent deciding: %d, want 403", code)
	}
	// The run is the session's: its owner the agent's principal, source mcp.
	var runs serverapi.RunPage
	f.do("GET", "/v1/runs", aliceToken, nil, &runs)
	if len(runs.Runs) != 1 || runs.Runs[0].Owner != "person:ci-bot" || runs.Runs[0].Source != serverapi.SourceMCP || runs.Runs[0].Agent != "editor" {
		t.Errorf("runs: %+v", runs.Runs)
	}
	edited := json.RawMessage(`{"path":"b.txt"}`)
	if code := f.do("POST", "/v1/approvals/req_1/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: ask.Pending.Digest, EditedArgs: edited}, nil); code != http.StatusOK {
		t.Fatalf("alice approving: %d", code)
	}
	got = serverapi.GateAskView{}
	if code := f.do("GET", path, agentToken, nil, &got); code != http.StatusOK || got.Status != store.StatusApproved || got.Answer == nil ||
		!got.Answer.OK || got.Answer.Who().String() != "person:alice" || approval.Digest(got.Answer.Data) != approval.Digest(edited) {
		t.Errorf("the answer: %d %+v %+v", code, got, got.Answer)
	}
	if code := f.do("GET", path, agentToken, nil, nil); code != http.StatusConflict {
		t.Errorf("the approval given twice: %d, want 409", code)
	}

	if code := f.do("POST", "/v1/gate/asks", agentToken, gateAsk("req_2", `{"path":"c.txt"}`, time.Hour), &v); code != http.StatusCreated {
		t.Fatalf("second ask: %d", code)
	}
	done := make(chan serverapi.GateAskView, 1)
	go func() {
		var got serverapi.GateAskView
		f.do("GET", "/v1/gate/asks/"+v.RunID+"/req_2?wait=30s", agentToken, nil, &got)
		done <- got
	}()
	if code := f.do("POST", "/v1/approvals/req_2/decision", aliceToken, serverapi.DecisionRequest{Decision: "deny", Reason: "not that file"}, nil); code != http.StatusOK {
		t.Fatalf("alice denying: %d", code)
	}
	if got := <-done; got.Status != store.StatusDenied || got.Answer == nil || got.Answer.OK || got.Answer.Reason != "not that file" {
		t.Errorf("the denial: %+v", got)
	}

	// Withdrawn: no one may approve it any more.
	f.do("POST", "/v1/gate/asks", agentToken, gateAsk("req_3", `{"path":"d.txt"}`, time.Hour), &v)
	if code := f.do("DELETE", "/v1/gate/asks/"+v.RunID+"/req_3", agentToken, nil, nil); code != http.StatusOK {
		t.Errorf("withdrawing: %d", code)
	}
	if code := f.do("POST", "/v1/approvals/req_3/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: approval.Digest(json.RawMessage(`{"path":"d.txt"}`))}, nil); code != http.StatusConflict {
		t.Errorf("approving a withdrawn ask: %d, want 409", code)
	}

	// Unanswered: expired at its time, and the caller told so.
	f.do("POST", "/v1/gate/asks", agentToken, gateAsk("req_4", `{"path":"e.txt"}`, 300*time.Millisecond), &v)
	got = serverapi.GateAskView{}
	if code := f.do("GET", "/v1/gate/asks/"+v.RunID+"/req_4?wait=30s", agentToken, nil, &got); code != http.StatusOK || got.Status != store.StatusExpired || got.Answer != nil {
		t.Errorf("unanswered: %d %+v", code, got)
	}

	// The session's records are its run's calls.
	// (alice's approval names her: the record runs her edit)
	rec := gate.Record{ID: "mcp_1", Name: "mcp__fs__write", Source: gate.SourceMCP, Ran: true, Output: "wrote b.txt",
		RequestedArgs: ask.Pending.Args, RequestedDigest: ask.Pending.Digest, Args: edited, ArgsDigest: approval.Digest(edited),
		Decision: gate.Decision{Outcome: gate.OutcomeApproved, By: tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}}}
	if code := f.do("POST", "/v1/gate/records", agentToken, serverapi.GateRecordRequest{Session: ask.Session, Record: rec}, nil); code != http.StatusNoContent {
		t.Errorf("record: %d", code)
	}
	var run struct {
		Status    store.RunStatus
		ToolCalls []gate.Record
	}
	f.do("GET", "/v1/runs/"+v.RunID, aliceToken, nil, &run)
	if len(run.ToolCalls) != 1 || run.ToolCalls[0].Output != "wrote b.txt" {
		t.Errorf("the run's calls: %+v", run.ToolCalls)
	}
	// The session's end is its run's.
	if code := f.do("POST", "/v1/gate/sessions/end", agentToken, serverapi.GateRecordRequest{Session: ask.Session}, nil); code != http.StatusNoContent {
		t.Errorf("end: %d", code)
	}
	f.do("GET", "/v1/runs/"+v.RunID, aliceToken, nil, &run)
	if run.Status != store.RunDone {
		t.Errorf("the ended session's run is %s, want done", run.Status)
	}
}

// Without a gateway: section the routes are not there.
func TestGateAsksNeedTheSection(t *testing.T) {
	f := claudeFixture(t)
	if code := f.do("POST", "/v1/gate/asks", agentToken, gateAsk("req_1", `{}`, time.Hour), nil); code != http.StatusNotFound {
		t.Errorf("POST /v1/gate/asks without gateway: %d, want 404", code)
	}
}

// FuzzGateAsk: no body of POST /v1/gate/asks is a server error, and only
// one that checks out stores an approval: a call of source mcp whose
// digest is its arguments'.
func FuzzGateAsk(f *testing.F) {
	good, _ := json.Marshal(gateAsk("req_1", `{"path":"a.txt"}`, time.Hour))
	f.Add(string(good))
	f.Add(`{"session":{"id":"s"},"call":{"name":"x","source":"mcp"},"pending":{"request":{"id":"r","kind":"approval"}}}`)
	f.Add(`{"session":{"id":"s"},"call":{"name":"x","source":"claude-code"}}`)
	f.Add(`[`)
	fx := gateFixture(f)
	f.Fuzz(func(t *testing.T, body string) {
		req, _ := http.NewRequest("POST", fx.ts.URL+"/v1/gate/asks", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+agentToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		switch code := resp.StatusCode; code {
		case http.StatusCreated:
			var req serverapi.GateAskRequest
			if err := json.Unmarshal([]byte(body), &req); err != nil || req.Call.Source != gate.SourceMCP || req.Pending.Digest != approval.Digest(req.Pending.Args) {
				t.Fatalf("stored %q", body)
			}
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity, http.StatusConflict, http.StatusTooManyRequests:
		default:
			t.Fatalf("%d for %q", code, body)
		}
	})
}
