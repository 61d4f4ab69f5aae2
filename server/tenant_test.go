package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/server"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// A token of tenant globex sees nothing of tenant acme: its run, approval
// and event stream are 404, its listings are empty, and it cannot decide.
func TestTenantIsolation(t *testing.T) {
	f := newFixture(t, nil, nil, nil)
	id := f.startRun()
	a := f.pending(id)
	var p serverapi.Problem
	for _, path := range []string{"/v1/runs/" + id, "/v1/approvals/" + a.ID, "/v1/events?run=" + id} {
		if code := f.do("GET", path, bobToken, nil, &p); code != http.StatusNotFound {
			t.Errorf("globex GET %s: %d, want 404", path, code)
		}
	}
	if code := f.do("POST", "/v1/runs/"+id+"/cancel", bobToken, nil, &p); code != http.StatusNotFound {
		t.Errorf("globex cancel: %d, want 404", code)
	}
	if code := f.do("PUT", "/v1/autonomy", bobToken, serverapi.AutonomyRequest{Level: "full_auto", Run: id}, &p); code != http.StatusNotFound {
		t.Errorf("globex autonomy of acme's run: %d, want 404", code)
	}
	var runs serverapi.RunPage
	if code := f.do("GET", "/v1/runs", bobToken, nil, &runs); code != http.StatusOK || len(runs.Runs) != 0 {
		t.Errorf("globex run list: %d %+v", code, runs)
	}
	var aps serverapi.ApprovalPage
	if code := f.do("GET", "/v1/approvals", bobToken, nil, &aps); code != http.StatusOK || len(aps.Approvals) != 0 {
		t.Errorf("globex approval list: %d %+v", code, aps)
	}
	// acme sees them.
	if code := f.do("GET", "/v1/runs", vicToken, nil, &runs); code != http.StatusOK || len(runs.Runs) != 1 || runs.Runs[0].ID != id {
		t.Errorf("acme run list: %d %+v", code, runs)
	}
	if got, _ := f.store.GetApproval(t.Context(), id, a.ID); got.Status != store.StatusPending {
		t.Fatalf("approval %s after globex's attempts", got.Status)
	}
}

// Roles: a viewer reads but neither starts, cancels nor decides; an operator
// starts and cancels; the tenant's autonomy needs an admin.
func TestRoles(t *testing.T) {
	f := newFixture(t, nil, nil, nil)
	var p serverapi.Problem
	if code := f.do("POST", "/v1/runs", vicToken, serverapi.StartRunRequest{Agent: "payer", Prompt: "x"}, &p); code != http.StatusForbidden || p.Type != serverapi.ProblemForbidden {
		t.Fatalf("viewer starts: %d %+v", code, p)
	}
	var v serverapi.RunView
	if code := f.do("POST", "/v1/runs", olgaToken, serverapi.StartRunRequest{Agent: "payer", Prompt: "pay"}, &v); code != http.StatusCreated || v.Owner != "person:olga" {
		t.Fatalf("operator starts: %d %+v", code, v)
	}
	f.waitRun(v.ID, store.RunPending)
	if code := f.do("POST", "/v1/runs/"+v.ID+"/cancel", vicToken, nil, &p); code != http.StatusForbidden {
		t.Fatalf("viewer cancels: %d", code)
	}
	if code := f.do("PUT", "/v1/autonomy", aliceToken, serverapi.AutonomyRequest{Level: "manual"}, &p); code != http.StatusForbidden {
		t.Fatalf("approver sets the tenant's autonomy: %d", code)
	}
	if code := f.do("PUT", "/v1/autonomy", olgaToken, serverapi.AutonomyRequest{Level: "full_auto", Run: v.ID}, &p); code != http.StatusForbidden {
		t.Fatalf("operator without approver sets a run's autonomy: %d", code)
	}
	var cancelled serverapi.RunView
	if code := f.do("POST", "/v1/runs/"+v.ID+"/cancel", olgaToken, nil, &cancelled); code != http.StatusAccepted || cancelled.Status != store.RunCancelled {
		t.Fatalf("operator cancels a halted run: %d %+v", code, cancelled)
	}
	if code := f.do("POST", "/v1/runs/"+v.ID+"/cancel", olgaToken, nil, &p); code != http.StatusConflict {
		t.Fatalf("cancel of a cancelled run: %d", code)
	}
	if code := f.do("POST", "/v1/runs", aliceToken, serverapi.StartRunRequest{Agent: "nope", Prompt: "x"}, &p); code != http.StatusNotFound {
		t.Fatalf("unknown agent: %d", code)
	}
	if code := f.do("POST", "/v1/runs", aliceToken, serverapi.StartRunRequest{Agent: "payer", Prompt: " "}, &p); code != http.StatusUnprocessableEntity {
		t.Fatalf("empty prompt: %d", code)
	}
	if code := f.do("GET", "/v1/nothing", aliceToken, nil, &p); code != http.StatusNotFound || p.Status != 404 {
		t.Fatalf("unknown endpoint: %d %+v", code, p)
	}
	var agents struct {
		Agents []serverapi.AgentInfo `json:"agents"`
	}
	if code := f.do("GET", "/v1/agents", vicToken, nil, &agents); code != http.StatusOK || len(agents.Agents) != 1 || agents.Agents[0].Name != "payer" || agents.Agents[0].Model != "script" {
		t.Fatalf("agents: %d %+v", code, agents)
	}
	var me server.Principal
	if code := f.do("GET", "/v1/me", adaToken, nil, &me); code != http.StatusOK || me.Name != "ada" || me.Tenant != "acme" {
		t.Fatalf("me: %d %+v", code, me)
	}
}

// An agent limited to tenants does not exist for the others: listing leaves
// it out and starting it is 404, worded as for an unknown agent; an agent
// without tenants stays open to all.
func TestAgentTenants(t *testing.T) {
	f := newFixture(t, nil, nil, &server.Options{
		Agents:       map[string]runs.RunConfig{"payer": payerConfig(t), "open": payerConfig(t)},
		AgentTenants: map[string][]string{"payer": {"acme"}},
	})
	var agents struct {
		Agents []serverapi.AgentInfo `json:"agents"`
	}
	names := func(token string) string {
		t.Helper()
		if code := f.do("GET", "/v1/agents", token, nil, &agents); code != http.StatusOK {
			t.Fatalf("GET /v1/agents: %d", code)
		}
		var out []string
		for _, a := range agents.Agents {
			out = append(out, a.Name)
		}
		return strings.Join(out, ",")
	}
	if got := names(vicToken); got != "open,payer" {
		t.Errorf("acme's agents: %s", got)
	}
	if got := names(bobToken); got != "open" {
		t.Errorf("globex's agents: %s", got)
	}
	var foreign, unknown serverapi.Problem
	if code := f.do("POST", "/v1/runs", bobToken, serverapi.StartRunRequest{Agent: "payer", Prompt: "pay"}, &foreign); code != http.StatusNotFound {
		t.Fatalf("globex starts acme's agent: %d %+v", code, foreign)
	}
	f.do("POST", "/v1/runs", bobToken, serverapi.StartRunRequest{Agent: "nope", Prompt: "pay"}, &unknown)
	if strings.ReplaceAll(foreign.Detail, "payer", "nope") != unknown.Detail || foreign.Status != unknown.Status {
		t.Errorf("a foreign agent is told apart from an unknown one: %+v vs %+v", foreign, unknown)
	}
	var page serverapi.RunPage
	if f.do("GET", "/v1/runs", bobToken, nil, &page); len(page.Runs) != 0 {
		t.Fatalf("globex has runs: %+v", page)
	}
	var v serverapi.RunView
	if code := f.do("POST", "/v1/runs", bobToken, serverapi.StartRunRequest{Agent: "open", Prompt: "pay"}, &v); code != http.StatusCreated {
		t.Fatalf("globex starts the open agent: %d", code)
	}
	if id := f.startRun(); id == "" {
		t.Fatal("acme cannot start its agent")
	}
	if _, err := server.New(memory.New(nil), f.builder, &server.Options{Agents: map[string]runs.RunConfig{"payer": payerConfig(t)}, AgentTenants: map[string][]string{"typo": {"acme"}}}); err == nil {
		t.Fatal("AgentTenants naming no agent is accepted")
	}
}

// The same Idempotency-Key from the same principal is the same run; from
// another principal, another run; with another agent or prompt, 422.
func TestIdempotencyKey(t *testing.T) {
	f := newFixture(t, nil, nil, &server.Options{Agents: map[string]runs.RunConfig{"payer": payerConfig(t), "payer2": payerConfig(t)}})
	var first, again, other serverapi.RunView
	body := serverapi.StartRunRequest{Agent: "payer", Prompt: "pay"}
	if code := f.do("POST", "/v1/runs", aliceToken, body, &first, "Idempotency-Key", "k-1"); code != http.StatusCreated {
		t.Fatalf("first: %d", code)
	}
	if code := f.do("POST", "/v1/runs", aliceToken, body, &again, "Idempotency-Key", "k-1"); code != http.StatusOK || again.ID != first.ID {
		t.Fatalf("again: %d %s, want 200 %s", code, again.ID, first.ID)
	}
	if code := f.do("POST", "/v1/runs", olgaToken, body, &other, "Idempotency-Key", "k-1"); code != http.StatusCreated || other.ID == first.ID {
		t.Fatalf("another principal's key: %d %s", code, other.ID)
	}
	for _, changed := range []serverapi.StartRunRequest{{Agent: "payer", Prompt: "pay twice"}, {Agent: "payer2", Prompt: "pay"}} {
		var p serverapi.Problem
		if code := f.do("POST", "/v1/runs", aliceToken, changed, &p, "Idempotency-Key", "k-1"); code != http.StatusUnprocessableEntity || p.Type != serverapi.ProblemIdempotencyKeyReused || !strings.Contains(p.Detail, first.ID) {
			t.Fatalf("the key again with %+v: %d %+v", changed, code, p)
		}
	}
	var page serverapi.RunPage
	f.do("GET", "/v1/runs", vicToken, nil, &page)
	if len(page.Runs) != 2 {
		t.Fatalf("%d runs stored, want 2", len(page.Runs))
	}
}

// Listings page with opaque cursors; a bad cursor is 400.
func TestListPaging(t *testing.T) {
	f := newFixture(t, nil, nil, nil)
	ids := map[string]bool{}
	for range 3 {
		ids[f.startRun()] = true
	}
	seen := map[string]bool{}
	cursor := ""
	for {
		var page serverapi.RunPage
		if code := f.do("GET", "/v1/runs?limit=2&cursor="+cursor, vicToken, nil, &page); code != http.StatusOK {
			t.Fatalf("page: %d", code)
		}
		for _, r := range page.Runs {
			if seen[r.ID] {
				t.Fatalf("run %s listed twice", r.ID)
			}
			seen[r.ID] = true
		}
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	if len(seen) != 3 {
		t.Fatalf("listed %v, want %v", seen, ids)
	}
	var p serverapi.Problem
	if code := f.do("GET", "/v1/runs?cursor=bogus", vicToken, nil, &p); code != http.StatusBadRequest {
		t.Fatalf("bad cursor: %d", code)
	}
	if code := f.do("GET", "/v1/approvals?status=maybe", vicToken, nil, &p); code != http.StatusBadRequest {
		t.Fatalf("bad status: %d", code)
	}
}
