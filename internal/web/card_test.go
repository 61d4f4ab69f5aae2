package web_test

import (
	"context"
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

// invoiceModel says what it is doing before each of two transfers, the
// second time with markup that must show as text.
func invoiceModel() model.Model {
	return model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		switch testkit.Turn(req) {
		case 0:
			return model.Reply{Content: "I'll pay the first instalment of the March invoice: 5.", ToolCalls: []model.FuncCall{testkit.Call("c1", "transfer", map[string]int{"amount": 5})}}, nil
		case 1:
			return model.Reply{Content: "Now the <b>second</b> instalment: 3.", ToolCalls: []model.FuncCall{testkit.Call("c2", "transfer", map[string]int{"amount": 3})}}, nil
		}
		return model.Reply{Content: "Both instalments are paid."}, nil
	})
}

// A card shows what a person needs to decide: the run's prompt, what the
// model said it was doing (as text, markup and all), the workspace, the
// source and who started the run, and the decisions already made on the
// same tool in the run; the list of runs names the source, never "?".
func TestPageCardShowsContext(t *testing.T) {
	f := newFixture(t, invoiceModel(), "")
	ctx := tab(t)
	signIn(t, ctx, f, aliceToken)
	var v serverapi.RunView
	prompt := "Pay the March invoice of ACME in two instalments, 5 then 3."
	if code := f.do("POST", "/v1/runs", aliceToken, serverapi.StartRunRequest{Agent: "payer", Prompt: prompt}, &v); code != http.StatusCreated {
		t.Fatalf("POST /v1/runs: %d", code)
	}
	card := `li.approval`
	run(t, ctx, chromedp.WaitVisible(chromedp.CSS(card+` button.approve`)))
	if got := text(t, ctx, card+` blockquote.prompt`); got != prompt {
		t.Errorf("prompt shown: %q", got)
	}
	if got := text(t, ctx, card+` blockquote.intent`); got != "I'll pay the first instalment of the March invoice: 5." {
		t.Errorf("intent shown: %q", got)
	}
	facts := text(t, ctx, card+` dl.facts`)
	for _, want := range []string{"agent payer", "started by person:alice", "Workspace"} {
		if !strings.Contains(facts, want) {
			t.Errorf("the card's facts %q lack %q", facts, want)
		}
	}
	waitText(t, ctx, `#runs`, "agent payer · person:alice")
	if strings.Contains(text(t, ctx, `#runs`), "?") {
		t.Errorf("the runs list shows a ?: %q", text(t, ctx, `#runs`))
	}
	screenshot(t, ctx, "approval-card.png")

	run(t, ctx, chromedp.Click(chromedp.CSS(card+` button.approve`)))
	waitText(t, ctx, card+` .outcome`, "Approved: transfer")
	// The next card: the second intent, as text, and the first decision.
	next := `li.approval:not(.decided)`
	run(t, ctx, chromedp.WaitVisible(chromedp.CSS(next+` button.approve`)))
	if got := text(t, ctx, next+` blockquote.intent`); got != "Now the <b>second</b> instalment: 3." {
		t.Errorf("second intent shown: %q", got)
	}
	if browsertest.Value(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('li.approval blockquote.intent b').length`)) != 0 {
		t.Error("the model's markup became elements")
	}
	if got := text(t, ctx, next+` ul.earlier`); !strings.Contains(got, "approved by person:alice") || !strings.Contains(got, `{"amount":5}`) {
		t.Errorf("earlier decisions shown: %q", got)
	}
	run(t, ctx, chromedp.Click(chromedp.CSS(next+` button.approve`)))
	f.waitRun(v.ID, store.RunDone)
	// Recent runs, newest first: a run started now heads the list.
	later := f.startRun()
	waitText(t, ctx, `#runs li:first-child`, later)
	if got := f.transfer.runs(t); len(got) != 2 {
		t.Fatalf("transfer ran %q, want twice", got)
	}
}
