package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/tollgate-dev/tollgate/internal/browsertest"
	"github.com/tollgate-dev/tollgate/internal/layerstore"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/store"
)

// The audit view searches the tenant's decisions by tool, rule, person,
// source, outcome and time, offers the search as JSON Lines, and links a
// decision the rule layer made to the layer's version in its history.
func TestPageAuditSearch(t *testing.T) {
	f := newFixture(t, testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer", map[string]int{"amount": 5})}), "")
	approved, declined := f.startRun(), f.startRun()
	asked := map[string]string{} // run -> its approval
	for _, c := range []struct {
		run string
		req serverapi.DecisionRequest
	}{
		{approved, serverapi.DecisionRequest{Decision: "approve"}},
		{declined, serverapi.DecisionRequest{Decision: "deny", Reason: "not this month"}},
	} {
		f.waitRun(c.run, store.RunPending)
		a := f.pending(c.run)[0]
		c.req.ArgsDigest, asked[c.run] = a.ArgsDigest, a.ID
		if code := f.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, c.req, nil); code != http.StatusOK {
			t.Fatalf("decision: %d", code)
		}
		f.waitRun(c.run, store.RunDone)
	}
	// The approved transfer remembered and accepted: a third run is
	// approved by the layer's version 1.
	a := asked[approved]
	var rule layerstore.LayerRule
	if code := f.do("POST", "/v1/rules/proposals", aliceToken, serverapi.ProposeRequest{Approval: a, Effect: "allow"}, &rule); code != http.StatusCreated {
		t.Fatalf("propose: %d", code)
	}
	if code := f.do("POST", "/v1/rules/"+rule.ID+"/accept", adaToken, nil, nil); code != http.StatusOK {
		t.Fatalf("accept: %d", code)
	}
	remembered := f.startRun()
	f.waitRun(remembered, store.RunDone)

	ctx := tab(t)
	signIn(t, ctx, f, vicToken)
	run(t, ctx, chromedp.Click(chromedp.CSS(`#audit-submit`)))
	waitText(t, ctx, `#audit-count`, "3 decisions")
	waitText(t, ctx, `#audit-export`, "Export as JSON Lines (3 lines)")
	if href := browsertest.Value(t, ctx, chromedp.Evaluate[string](`document.getElementById('audit-export').href`)); !strings.HasPrefix(href, "blob:") {
		t.Errorf("export link %q", href)
	}
	rows := text(t, ctx, `#audit-results tbody`)
	for _, want := range []string{approved, declined, remembered, "person:alice", "not this month", "hook:rule-layer", "rule layer v1"} {
		if !strings.Contains(rows, want) {
			t.Errorf("the audit rows lack %q: %s", want, rows)
		}
	}
	// The layer's decision links to the version in the layer's history.
	if href := browsertest.Value(t, ctx, chromedp.Evaluate[string](`document.querySelector('#audit-results a.layer-link').getAttribute('href')`)); href != "#layer-v1" {
		t.Errorf("layer link %q", href)
	}
	waitText(t, ctx, `#layer-v1`, "version 1: accepted allow rule "+rule.ID)

	choose(t, ctx, "audit-outcome", "declined")
	run(t, ctx,
		chromedp.SetValue(chromedp.CSS(`#audit-person`), "alice"),
		chromedp.SetValue(chromedp.CSS(`#audit-since`), "1h"),
		chromedp.Click(chromedp.CSS(`#audit-submit`)))
	waitText(t, ctx, `#audit-count`, "1 decision")
	waitText(t, ctx, `#audit-export`, "(1 line)")
	if rows := text(t, ctx, `#audit-results tbody`); !strings.Contains(rows, declined) || strings.Contains(rows, approved) {
		t.Errorf("declined by alice: %s", rows)
	}
	choose(t, ctx, "audit-outcome", "")
	choose(t, ctx, "audit-person", "")
	run(t, ctx,
		chromedp.SetValue(chromedp.CSS(`#audit-tool`), "note"),
		chromedp.Click(chromedp.CSS(`#audit-submit`)))
	waitText(t, ctx, `#audit-count`, "0 decisions")
	choose(t, ctx, "audit-source", "agent")
	run(t, ctx,
		chromedp.SetValue(chromedp.CSS(`#audit-tool`), "transfer"),
		chromedp.SetValue(chromedp.CSS(`#audit-rule`), "ask-transfer"),
		chromedp.Click(chromedp.CSS(`#audit-submit`)))
	waitText(t, ctx, `#audit-count`, "3 decisions")
	screenshot(t, ctx, "audit.png")
}

// choose sets the value of the form field id (a select's option, or
// nothing).
func choose(t *testing.T, ctx context.Context, id, value string) {
	t.Helper()
	if got := browsertest.Value(t, ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.getElementById(%q).value = %q)`, id, value))); got != value {
		t.Fatalf("%s = %q", id, got)
	}
}
