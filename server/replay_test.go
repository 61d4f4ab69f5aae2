package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/store"
)

// POST /v1/policy/replay replays a candidate on the calls recorded in the
// caller's tenant only: a policy without the ask-transfer rule would have
// saved alice's approval; another tenant has nothing to replay; a policy
// that does not load is 422 with its problems; a viewer may not replay.
func TestReplayEndpoint(t *testing.T) {
	f := newFixture(t, nil, nil, nil)
	id := f.startRun()
	a := f.pending(id)
	if code := f.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, nil); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	f.waitRun(id, store.RunDone)
	candidate := serverapi.ReplayRequest{Policy: "rules:\n  - id: no-lookup\n    tool: lookup\n    decision: deny\n    reason: r\n", Since: "1h"}
	var got serverapi.ReplayResult
	if code := f.do("POST", "/v1/policy/replay", aliceToken, candidate, &got); code != http.StatusOK {
		t.Fatalf("replay: %d", code)
	}
	r := got.Report
	if r.Calls != 1 || r.ApprovalsSaved != 1 || len(r.Changes) != 1 || r.Changes[0].From != approval.Ask || r.Changes[0].To != approval.Allow ||
		r.Changes[0].Examples[0].RunID != id || !strings.Contains(got.Text, "ask -> allow: 1") {
		t.Fatalf("replay: %+v\n%s", r, got.Text)
	}
	if code := f.do("POST", "/v1/policy/replay", bobToken, candidate, &got); code != http.StatusOK || got.Report.Calls != 0 {
		t.Fatalf("another tenant's replay: %d %+v", code, got.Report)
	}
	var prob serverapi.Problem
	if code := f.do("POST", "/v1/policy/replay", aliceToken, serverapi.ReplayRequest{Policy: "rules:\n  - id: x\n    decision: maybe\n"}, &prob); code != http.StatusUnprocessableEntity ||
		len(prob.Errors) != 2 || prob.Errors[1] != `candidate.yaml:3:15: error: unknown decision "maybe" (want allow, ask or deny)` {
		t.Fatalf("a bad policy: %d %+v", code, prob)
	}
	if code := f.do("POST", "/v1/policy/replay", vicToken, candidate, nil); code != http.StatusForbidden {
		t.Fatalf("a viewer's replay: %d", code)
	}
}
