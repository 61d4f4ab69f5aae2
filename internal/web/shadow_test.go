package web_test

import (
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/store"
)

// A shadow rule decides nothing: the transfer it would deny is approved
// and runs, and the page counts the shadow rule's would-be vote once the
// run ends, without a reload.
func TestPageShowsShadowCounts(t *testing.T) {
	f := newFixture(t, testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer", map[string]int{"amount": 5})}), "")
	ctx := tab(t)
	signIn(t, ctx, f, aliceToken)
	run(t, ctx, chromedp.WaitVisible(chromedp.CSS(`#shadow-empty`)))
	id := f.startRun()
	f.waitRun(id, store.RunPending)
	a := f.pending(id)[0]
	var v serverapi.ApprovalView
	if code := f.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, &v); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	f.waitRun(id, store.RunDone)
	if n := len(f.transfer.runs(t)); n != 1 {
		t.Fatalf("the transfer a shadow rule would deny ran %d times, want 1", n)
	}
	waitText(t, ctx, `#shadow-counts`, "rule:watch-transfer would deny: 1 call")
	var page serverapi.ShadowPage
	if code := f.do("GET", "/v1/shadow", vicToken, nil, &page); code != http.StatusOK || page.Calls != 1 || len(page.Rules) != 1 || page.Rules[0].Count != 1 {
		t.Fatalf("GET /v1/shadow: %d %+v", code, page)
	}
}
