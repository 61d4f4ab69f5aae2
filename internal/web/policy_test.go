package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/tollgate-dev/tollgate/internal/browsertest"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/store"
)

// The rule that asked links, from the card and from the audit, to its
// line in the agent's policy file, which the page shows read-only with
// that line marked and focused.
func TestPageRuleLinksToItsLine(t *testing.T) {
	line := 0
	for i, l := range strings.Split(pagePolicy, "\n") {
		if strings.TrimSpace(l) == "- id: ask-transfer" {
			line = i + 1
		}
	}
	f := newFixture(t, testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer", map[string]int{"amount": 5})}), "")
	ctx := tab(t)
	signIn(t, ctx, f, aliceToken)
	id := f.startRun()
	card := `li.approval`
	run(t, ctx, chromedp.WaitVisible(chromedp.CSS(card+` a.policy-link`)))
	want := fmt.Sprintf("#policy=payer&line=%d", line)
	if href := attr(t, ctx, card+` a.policy-link`, "href"); href != want {
		t.Fatalf("the card's rule link %q, want %q", href, want)
	}
	waitText(t, ctx, card+` a.policy-link`, fmt.Sprintf("policy.yaml:%d:5", line))
	run(t, ctx, chromedp.Click(chromedp.CSS(card+` a.policy-link`)))
	follows := func() {
		t.Helper()
		target := `#policy-lines li.target`
		run(t, ctx, chromedp.WaitVisible(chromedp.CSS(target)))
		if got := text(t, ctx, target); got != "  - id: ask-transfer" {
			t.Errorf("the marked line %q", got)
		}
		if got := attr(t, ctx, target, "id"); got != fmt.Sprintf("policy-L%d", line) {
			t.Errorf("the marked line's id %q", got)
		}
		if n := browsertest.Value(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('#policy-lines li').length`)); n != strings.Count(pagePolicy, "\n") {
			t.Errorf("%d lines shown", n)
		}
		if !browsertest.Value(t, ctx, chromedp.Evaluate[bool](`document.activeElement === document.querySelector('#policy-lines li.target')`)) {
			t.Error("the marked line does not have the focus")
		}
		waitText(t, ctx, `#policy-heading`, "policy.yaml of agent payer")
	}
	follows()
	screenshot(t, ctx, "policy-line.png")
	run(t, ctx, chromedp.Click(chromedp.CSS(`#policy-close`)))
	run(t, ctx, chromedp.WaitNotVisible(chromedp.CSS(`#policy-view`)))

	a := f.pending(id)[0]
	if code := f.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, nil); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	f.waitRun(id, store.RunDone)
	run(t, ctx, chromedp.Click(chromedp.CSS(`#audit-submit`)))
	waitText(t, ctx, `#audit-count`, "1 decision")
	if href := attr(t, ctx, `#audit-results a.policy-link`, "href"); href != want {
		t.Fatalf("the audit's rule link %q, want %q", href, want)
	}
	run(t, ctx, chromedp.Click(chromedp.CSS(`#audit-results a.policy-link`)))
	follows()
}

// attr is the attribute name of the element sel finds.
func attr(t *testing.T, ctx context.Context, sel, name string) string {
	t.Helper()
	return browsertest.Value(t, ctx, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%q).getAttribute(%q) || ''`, sel, name)))
}
