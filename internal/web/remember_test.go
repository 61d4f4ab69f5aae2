package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/tollgate-dev/tollgate/internal/browsertest"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/store"
)

// Approve and remember: alice approves a transfer and, on the decided
// card, asks to remember it; the page shows the rule as the YAML it adds.
// ada, an administrator, accepts it in the rule layer section; the next
// identical call runs without asking, and the layer's history shows the
// change.
func TestPageApproveAndRemember(t *testing.T) {
	f := newFixture(t, testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer", map[string]int{"amount": 5})}), "")
	ctx := tab(t)
	signIn(t, ctx, f, aliceToken)
	id := f.startRun()
	card := `li.approval`
	run(t, ctx, chromedp.WaitVisible(chromedp.CSS(card+` button.approve`)))
	// A decided card leaves 4 s after the decision unless its Remember is
	// pressed: the page itself presses it as soon as it shows, whatever
	// the load on the machine that runs the browser.
	browsertest.Value(t, ctx, chromedp.Evaluate[bool](`(window.__remember = new Promise((done) => {
		const press = () => { const b = document.querySelector('li.approval button.remember-open'); if (b) { b.click(); done(true); } else setTimeout(press, 10); };
		press();
	}), true)`))
	run(t, ctx, chromedp.Click(chromedp.CSS(card+` button.approve`)))
	waitText(t, ctx, card+` .outcome`, "Approved: transfer")
	if !browsertest.Value(t, ctx, chromedp.Evaluate[bool](`window.__remember`, chromedp.EvalAwaitPromise)) {
		t.Fatal("Remember was not pressed")
	}
	waitText(t, ctx, card+` pre.proposal-yaml`, `"amount": {equals: 5}`)
	yaml := text(t, ctx, card+` pre.proposal-yaml`)
	for _, want := range []string{`tool: "transfer"`, "decision: allow", "remembered: always allow transfer with exactly these arguments"} {
		if !strings.Contains(yaml, want) {
			t.Errorf("the proposed YAML lacks %q:\n%s", want, yaml)
		}
	}
	f.waitRun(id, store.RunDone)
	waitText(t, ctx, `#layer-proposed`, `"amount": {equals: 5}`)
	if browsertest.Value(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('#layer-proposed button.accept').length`)) != 0 {
		t.Error("an approver's page offers to accept a rule")
	}
	screenshot(t, ctx, "remember-card.png")

	admin := tab(t)
	signIn(t, admin, f, adaToken)
	run(t, admin, chromedp.WaitVisible(chromedp.CSS(`#layer-proposed button.accept`)), chromedp.Click(chromedp.CSS(`#layer-proposed button.accept`)))
	waitText(t, admin, `#layer-history`, "version 1: accepted allow rule")
	waitText(t, admin, `#layer-history`, "by person:ada")
	waitText(t, admin, `#layer-rules`, "in force since version 1, accepted by person:ada")

	next := f.startRun()
	f.waitRun(next, store.RunDone)
	if got := f.transfer.runs(t); len(got) != 2 {
		t.Fatalf("the transfer ran %d times, want twice (the second without asking)", len(got))
	}
	var asked int
	for a, err := range store.AllApprovals(t.Context(), f.store, store.ApprovalFilter{Tenant: "acme", RunID: next}) {
		if err != nil {
			t.Fatal(err)
		}
		_ = a
		asked++
	}
	if asked != 0 {
		t.Fatalf("the remembered call was asked about %d times", asked)
	}
	screenshot(t, admin, "rule-layer.png")
}
