package server_test

import (
	"net/http"
	"testing"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/store"
)

// GET /v1/shadow counts the shadow votes recorded beside the decisions of
// the caller's tenant only; ?since must be a positive duration.
func TestShadowCounts(t *testing.T) {
	f := newFixture(t, nil, nil, nil)
	id := f.startRun()
	a := f.pending(id)
	var v serverapi.ApprovalView
	if code := f.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, &v); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	f.waitRun(id, store.RunDone)
	if n := f.transfer.Count(); n != 1 {
		t.Fatalf("transfer ran %d times: a shadow rule decided", n)
	}
	var page serverapi.ShadowPage
	if code := f.do("GET", "/v1/shadow?since=1h", vicToken, nil, &page); code != http.StatusOK || page.Calls != 1 || len(page.Rules) != 1 ||
		page.Rules[0].Rule != "rule:watch-transfer" || page.Rules[0].Decision != approval.Deny || page.Rules[0].Count != 1 || page.Since == nil {
		t.Fatalf("acme's shadow counts: %d %+v", code, page)
	}
	page = serverapi.ShadowPage{}
	if code := f.do("GET", "/v1/shadow", bobToken, nil, &page); code != http.StatusOK || page.Calls != 0 || len(page.Rules) != 0 {
		t.Fatalf("globex's shadow counts: %d %+v", code, page)
	}
	if code := f.do("GET", "/v1/shadow?since=yesterday", vicToken, nil, nil); code != http.StatusBadRequest {
		t.Fatalf("a bad since: %d", code)
	}
}
