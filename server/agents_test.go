package server_test

import (
	"net/http"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/store"
)

// An agent is built once per tenant and configuration, before the server
// is ready (one for each of the two tenants of the tokens), so that no
// run waits for its build: the first run, a second one, and the resume
// after an approval use it; a configuration changed by an autonomy level
// gets its own, built by its first run.
func TestAgentBuiltOncePerConfiguration(t *testing.T) {
	f := newFixture(t, nil, nil, nil)
	builds := func(want int64, when string) {
		t.Helper()
		if n := f.builder.builds.Load(); n != want {
			t.Fatalf("%s: %d builds, want %d", when, n, want)
		}
	}
	builds(2, "the server is ready")
	first := f.startRun()
	a := f.pending(first)
	builds(2, "the first run halted")
	var got serverapi.ApprovalView
	if code := f.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, &got); code != http.StatusOK {
		t.Fatalf("decision: %d", code)
	}
	f.waitRun(first, store.RunDone)
	builds(2, "the first run resumed and ended")
	second := f.startRun()
	f.pending(second)
	builds(2, "a second run of the tenant halted")

	var v serverapi.RunView
	if code := f.do("POST", "/v1/runs", bobToken, serverapi.StartRunRequest{Agent: "payer", Prompt: "pay"}, &v); code != http.StatusCreated {
		t.Fatalf("bob's run: %d", code)
	}
	f.pending2(v.ID, bobToken)
	builds(2, "another tenant's run halted")

	var ch serverapi.AutonomyChange
	if code := f.do("PUT", "/v1/autonomy", adaToken, serverapi.AutonomyRequest{Level: "full_auto"}, &ch); code != http.StatusOK {
		t.Fatalf("PUT /v1/autonomy: %d", code)
	}
	f.pending(f.startRun())
	builds(3, "a run under another autonomy level halted")
	if n := f.transfer.Count(); n != 1 {
		t.Fatalf("transfer ran %d times, want 1 (the approved call)", n)
	}
}

// pending2 waits until the run halts with one pending approval that token
// sees.
func (f *fixture) pending2(runID, token string) serverapi.ApprovalView {
	f.t.Helper()
	f.waitRun(runID, store.RunPending)
	var page serverapi.ApprovalPage
	if code := f.do("GET", "/v1/approvals?status=pending&run="+runID, token, nil, &page); code != http.StatusOK || len(page.Approvals) != 1 {
		f.t.Fatalf("pending approvals of %s: %d %+v", runID, code, page)
	}
	return page.Approvals[0]
}
