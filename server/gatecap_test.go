package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/serveconfig"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/mcpgateway"
	"github.com/tollgate-dev/tollgate/server"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/tool"
)

// An external gateway's session may have at most 32 asks pending on the
// page: one more is refused (429) until one is answered or withdrawn;
// another session is not affected.
func TestGateAsksPerSessionAreCapped(t *testing.T) {
	f := gateFixture(t)
	var runID string
	for i := range 32 {
		a := gateAskFor(fmt.Sprintf("req_%d", i), fmt.Sprintf("mcp_%d", i), fmt.Sprintf(`{"path":"%d.txt"}`, i))
		var v struct{ RunID string }
		if code := f.do("POST", "/v1/gate/asks", agentToken, a, &v); code != http.StatusCreated {
			t.Fatalf("ask %d: %d", i, code)
		}
		runID = v.RunID
	}
	over := gateAskFor("req_over", "mcp_over", `{"path":"over.txt"}`)
	if code := f.do("POST", "/v1/gate/asks", agentToken, over, nil); code != http.StatusTooManyRequests {
		t.Errorf("ask 33 of one session: %d, want 429", code)
	}
	other := gateAskFor("req_other", "mcp_other", `{"path":"other.txt"}`)
	other.Session.ID = "sess-2"
	if code := f.do("POST", "/v1/gate/asks", agentToken, other, nil); code != http.StatusCreated {
		t.Errorf("another session's ask: %d, want 201", code)
	}
	if code := f.do("DELETE", "/v1/gate/asks/"+runID+"/req_0", agentToken, nil, nil); code != http.StatusOK {
		t.Fatalf("withdrawing: %d", code)
	}
	if code := f.do("POST", "/v1/gate/asks", agentToken, over, nil); code != http.StatusCreated {
		t.Errorf("ask 33 once one was withdrawn: %d, want 201", code)
	}
}

// Asks of one session made at once are counted one after another: 60 at
// once leave exactly 32 pending, however they interleave.
func TestGateAsksCapHoldsAtOnce(t *testing.T) {
	f := gateFixture(t)
	var wg sync.WaitGroup
	var created atomic.Int32
	for i := range 60 {
		wg.Go(func() {
			a := gateAskFor(fmt.Sprintf("req_%d", i), fmt.Sprintf("mcp_%d", i), fmt.Sprintf(`{"path":"%d.txt"}`, i))
			if f.do("POST", "/v1/gate/asks", agentToken, a, nil) == http.StatusCreated {
				created.Add(1)
			}
		})
	}
	wg.Wait()
	if n := created.Load(); n != 32 {
		t.Errorf("%d asks created at once, want %d", n, 32)
	}
}

// gateCapFixture is a server with five agent tokens of tenant acme
// (agent0 … agent4, tokens "tg_agent0" …), one of globex, and alice, an
// approver of acme.
func gateCapFixture(t *testing.T) *fixture {
	t.Helper()
	entries := []serveconfig.TokenEntry{
		{SHA256: serveconfig.HashToken(aliceToken), Name: "alice", Tenant: "acme", Roles: []server.Role{server.RoleApprover}},
		{SHA256: serveconfig.HashToken(globexAgentToken), Name: "gbot", Tenant: "globex", Roles: []server.Role{server.RoleAgent}},
	}
	for i := range 5 {
		entries = append(entries, serveconfig.TokenEntry{SHA256: serveconfig.HashToken(fmt.Sprintf("tg_agent%d", i)), Name: fmt.Sprintf("agent%d", i), Tenant: "acme", Roles: []server.Role{server.RoleAgent}})
	}
	tk, err := serveconfig.NewTokens(entries)
	if err != nil {
		t.Fatal(err)
	}
	return newFixture(t, memory.New(nil), nil, &server.Options{Tokens: tk.Lookup, Gateway: &server.GatewayOptions{}})
}

// askIn posts ask n of session sess with token and returns the status,
// the problem's detail and the session's run. The ask's ID is
// req_TOKEN_SESS_N.
func askIn(f *fixture, token, sess string, n int) (code int, detail, run string) {
	id := fmt.Sprintf("%s_%s_%d", token, sess, n)
	a := gateAskFor("req_"+id, "mcp_"+id, fmt.Sprintf(`{"path":"%d.txt"}`, n))
	a.Session.ID = sess
	var out struct {
		RunID  string `json:"runId"`
		Detail string `json:"detail"`
	}
	code = f.do("POST", "/v1/gate/asks", token, a, &out)
	return code, out.Detail, out.RunID
}

// One token's sessions may have at most 64 approvals pending together,
// however many session IDs it chooses: the 65th is refused (429, saying
// so) until one is withdrawn; another token of the tenant still asks.
func TestGateAsksPerTokenAreCapped(t *testing.T) {
	f := gateCapFixture(t)
	var run0 string
	for s := range 2 {
		for i := range 32 {
			code, detail, run := askIn(f, "tg_agent0", fmt.Sprint("s", s), i)
			if code != http.StatusCreated {
				t.Fatalf("session %d ask %d: %d %s", s, i, code, detail)
			}
			if s == 0 {
				run0 = run
			}
		}
	}
	code, detail, _ := askIn(f, "tg_agent0", "s2", 0)
	if code != http.StatusTooManyRequests || !strings.Contains(detail, "64 approvals pending already, the most one token may have") {
		t.Errorf("ask 65 of one token in a third session: %d %q, want 429 saying the token's cap", code, detail)
	}
	if code, detail, _ := askIn(f, "tg_agent1", "s0", 0); code != http.StatusCreated {
		t.Errorf("another token's ask: %d %s", code, detail)
	}
	if code := f.do("DELETE", "/v1/gate/asks/"+run0+"/req_tg_agent0_s0_0", "tg_agent0", nil, nil); code != http.StatusOK {
		t.Fatalf("withdrawing: %d", code)
	}
	if code, detail, _ := askIn(f, "tg_agent0", "s2", 0); code != http.StatusCreated {
		t.Errorf("ask 65 once one was withdrawn: %d %s", code, detail)
	}
}

// A tenant's MCP clients may have at most 256 approvals pending together:
// four tokens at their own cap fill it, a fifth token is refused (429,
// saying so); an approval a person decides on the page frees its place
// although its gateway never asked again; another tenant still asks.
func TestGateAsksPerTenantAreCapped(t *testing.T) {
	f := gateCapFixture(t)
	for tok := range 4 {
		for s := range 2 {
			for i := range 32 {
				if code, detail, _ := askIn(f, fmt.Sprintf("tg_agent%d", tok), fmt.Sprint("s", s), i); code != http.StatusCreated {
					t.Fatalf("token %d session %d ask %d: %d %s", tok, s, i, code, detail)
				}
			}
		}
	}
	code, detail, _ := askIn(f, "tg_agent4", "s0", 0)
	if code != http.StatusTooManyRequests || !strings.Contains(detail, "256 approvals pending already, the most one tenant may have") {
		t.Errorf("ask 257 of the tenant: %d %q, want 429 saying the tenant's cap", code, detail)
	}
	if code, detail, _ := askIn(f, globexAgentToken, "s0", 0); code != http.StatusCreated {
		t.Errorf("another tenant's ask: %d %s", code, detail)
	}
	if code := f.do("POST", "/v1/approvals/req_tg_agent0_s0_0/decision", aliceToken, serverapi.DecisionRequest{Decision: "deny", Reason: "no"}, nil); code != http.StatusOK {
		t.Fatalf("deny on the page: %d", code)
	}
	if code, detail, _ := askIn(f, "tg_agent4", "s0", 0); code != http.StatusCreated {
		t.Errorf("an ask once a person decided one: %d %s", code, detail)
	}
}

// One token may have at most 32 sessions open: a 33rd session's ask or
// record is refused (429, saying so) until one ends; another token still
// opens sessions.
func TestGateSessionsPerTokenAreCapped(t *testing.T) {
	f := gateCapFixture(t)
	rec := func(token, sess string) (int, string) {
		var prob struct{ Detail string }
		code := f.do("POST", "/v1/gate/records", token, serverapi.GateRecordRequest{Session: mcpgateway.Session{ID: sess},
			Record: gateRecordOf("mcp_x", `{"path":"x.txt"}`, gate.Decision{Outcome: gate.OutcomeAllowed, By: tool.Principal{Kind: tool.PrincipalRule, Name: "ok"}})}, &prob)
		return code, prob.Detail
	}
	for s := range 32 {
		if code, detail := rec("tg_agent0", fmt.Sprint("s", s)); code != http.StatusNoContent {
			t.Fatalf("session %d: %d %s", s, code, detail)
		}
	}
	code, detail := rec("tg_agent0", "s32")
	if code != http.StatusTooManyRequests || !strings.Contains(detail, "32 MCP client sessions open already") {
		t.Errorf("session 33's record: %d %q, want 429 saying the sessions' cap", code, detail)
	}
	if code, detail, _ := askIn(f, "tg_agent0", "s32", 0); code != http.StatusTooManyRequests || !strings.Contains(detail, "sessions open already") {
		t.Errorf("session 33's ask: %d %q, want 429", code, detail)
	}
	if code, _ := rec("tg_agent0", "s5"); code != http.StatusNoContent {
		t.Errorf("an open session's record: %d", code)
	}
	if code, detail := rec("tg_agent1", "s32"); code != http.StatusNoContent {
		t.Errorf("another token's session: %d %s", code, detail)
	}
	if code := f.do("POST", "/v1/gate/sessions/end", "tg_agent0", serverapi.GateRecordRequest{Session: mcpgateway.Session{ID: "s0"}}, nil); code != http.StatusNoContent {
		t.Fatalf("end: %d", code)
	}
	if code, detail := rec("tg_agent0", "s32"); code != http.StatusNoContent {
		t.Errorf("session 33 once one ended: %d %s", code, detail)
	}
}

// The long polls of one token on its asks are capped (64 at once, one
// for each ask it may have pending), as event streams are: one more is
// refused with 429 while they wait; another token still waits; once they
// end, the token polls again.
func TestGatePollsPerTokenAreCapped(t *testing.T) {
	f := gateCapFixture(t)
	_, _, run := askIn(f, "tg_agent0", "s0", 0)
	path := "/v1/gate/asks/" + run + "/req_tg_agent0_s0_0"
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() { f.do("GET", path+"?wait=60s", "tg_agent0", nil, nil) })
	}
	deadline := time.Now().Add(60 * time.Second)
	for f.do("GET", path+"?wait=1ms", "tg_agent0", nil, nil) != http.StatusTooManyRequests {
		if time.Now().After(deadline) {
			t.Fatal("64 polls of one token waiting, and one more is still served")
		}
		time.Sleep(50 * time.Millisecond) // the polls' goroutines get to run
	}
	_, _, other := askIn(f, "tg_agent1", "s0", 0)
	if code := f.do("GET", "/v1/gate/asks/"+other+"/req_tg_agent1_s0_0?wait=1ms", "tg_agent1", nil, nil); code != http.StatusOK {
		t.Errorf("another token's poll: %d", code)
	}
	if code := f.do("POST", "/v1/approvals/req_tg_agent0_s0_0/decision", aliceToken, serverapi.DecisionRequest{Decision: "deny", Reason: "no"}, nil); code != http.StatusOK {
		t.Fatalf("deny: %d", code)
	}
	wg.Wait()
	_, _, run = askIn(f, "tg_agent0", "s0", 1)
	if code := f.do("GET", "/v1/gate/asks/"+run+"/req_tg_agent0_s0_1?wait=1ms", "tg_agent0", nil, nil); code != http.StatusOK {
		t.Errorf("a poll once the others ended: %d", code)
	}
}

// An ask posted again with the ID of one still pending is refused (409)
// and leaves that one counted: the token's cap holds however often its
// asks are posted again.
func TestGateAsksPostedAgainStayCounted(t *testing.T) {
	f := gateCapFixture(t)
	for s := range 2 {
		for i := range 32 {
			if code, detail, _ := askIn(f, "tg_agent0", fmt.Sprint("s", s), i); code != http.StatusCreated {
				t.Fatalf("session %d ask %d: %d %s", s, i, code, detail)
			}
			if i == 31 {
				continue
			}
			if code, _, _ := askIn(f, "tg_agent0", fmt.Sprint("s", s), i); code != http.StatusConflict {
				t.Fatalf("session %d ask %d posted again: %d, want 409", s, i, code)
			}
		}
	}
	code, detail, _ := askIn(f, "tg_agent0", "s2", 0)
	if code != http.StatusTooManyRequests || !strings.Contains(detail, "the most one token may have") {
		t.Errorf("ask 65 of one token after asks posted again: %d %q, want 429 saying the token's cap", code, detail)
	}
}

// A session's record that comes after its end (the record of a call
// withdrawn when its client went away is sent after the end) is kept in
// the session's run, which stays ended, and does not open the session
// again: a gateway whose clients go away mid-call would otherwise fill
// its token's 32 sessions with sessions no one ends, for 30 minutes.
func TestGateRecordAfterTheEndOpensNoSession(t *testing.T) {
	f := gateCapFixture(t)
	rec := func(sess, call string) (int, string) {
		var prob struct{ Detail string }
		code := f.do("POST", "/v1/gate/records", "tg_agent0", serverapi.GateRecordRequest{Session: mcpgateway.Session{ID: sess},
			Record: gateRecordOf(call, `{"path":"x.txt"}`, gate.Decision{Outcome: gate.OutcomeDenied, By: tool.Principal{Kind: tool.PrincipalRuntime}})}, &prob)
		return code, prob.Detail
	}
	var runID string
	for s := range 32 {
		code, detail, run := askIn(f, "tg_agent0", fmt.Sprint("s", s), 0)
		if code != http.StatusCreated {
			t.Fatalf("session %d: %d %s", s, code, detail)
		}
		if s == 0 {
			runID = run
		}
		if code := f.do("POST", "/v1/gate/sessions/end", "tg_agent0", serverapi.GateRecordRequest{Session: mcpgateway.Session{ID: fmt.Sprint("s", s)}}, nil); code != http.StatusNoContent {
			t.Fatalf("end of session %d: %d", s, code)
		}
		if code, detail := rec(fmt.Sprint("s", s), "mcp_late"); code != http.StatusNoContent {
			t.Fatalf("session %d's record after its end: %d %s", s, code, detail)
		}
	}
	if code, detail := rec("s32", "mcp_new"); code != http.StatusNoContent {
		t.Errorf("a new session once 32 ended: %d %s", code, detail)
	}
	var run struct {
		Status    string
		ToolCalls []gate.Record
	}
	f.do("GET", "/v1/runs/"+runID, aliceToken, nil, &run)
	if run.Status != "done" || len(run.ToolCalls) != 1 || run.ToolCalls[0].ID != "mcp_late" {
		t.Errorf("the first session's run: %s with %d records, want done with the late record", run.Status, len(run.ToolCalls))
	}
}
