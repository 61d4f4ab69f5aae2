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

// A candidate policy pasted on the page is replayed on the tenant's
// recorded calls: without the rule that asked about the transfer, the
// approval alice gave would have been saved. A policy that does not load
// shows its problem at its line.
func TestPageReplaysAPolicy(t *testing.T) {
	f := newFixture(t, testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer", map[string]int{"amount": 5})}), "")
	ctx := tab(t)
	signIn(t, ctx, f, aliceToken)
	id := f.startRun()
	f.waitRun(id, store.RunPending)
	a := f.pending(id)[0]
	if code := f.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, nil); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	f.waitRun(id, store.RunDone)
	run(t, ctx,
		chromedp.SetValue(chromedp.CSS(`#replay-policy`), "rules:\n  - id: x\n    tool: transfer\n    decision: maybe\n"),
		chromedp.Click(chromedp.CSS(`#replay-submit`)),
	)
	waitText(t, ctx, `#replay-error`, `candidate.yaml:4:15: error: unknown decision "maybe"`)
	run(t, ctx,
		chromedp.SetValue(chromedp.CSS(`#replay-policy`), "rules:\n  - id: no-note\n    tool: note\n    decision: deny\n    reason: r\n"),
		chromedp.Click(chromedp.CSS(`#replay-submit`)),
	)
	waitText(t, ctx, `#replay-result`, "replayed 1 call(s) of 1 run(s) against candidate.yaml: 0 unchanged, 1 changed")
	waitText(t, ctx, `#replay-result`, "ask -> allow: 1\n  "+id+` "c1" "transfer" "{\"amount\":5}": was rule:ask-transfer (approved), now runtime:default`)
}
