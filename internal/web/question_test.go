package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/tollgate-dev/tollgate/builtin"
	"github.com/tollgate-dev/tollgate/internal/browsertest"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/store"
)

// questionModel asks two questions with the question tool (one answer to
// the first, several to the second), then says as its final text the tool
// result it was given: what reached the model.
func questionModel() model.Model {
	return model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		if testkit.Turn(req) == 0 {
			return model.Reply{ToolCalls: []model.FuncCall{testkit.Call("q1", "question", map[string][]builtin.Question{"questions": {
				{Question: "Which colour?", Header: "Colour", Options: []builtin.QuestionOption{{Label: "Blue"}, {Label: "Green", Description: "the calm one"}}},
				{Question: "Which days?", Options: []builtin.QuestionOption{{Label: "Mon"}, {Label: "Tue"}}, Multiple: true},
			}})}}, nil
		}
		last := req.Messages[len(req.Messages)-1]
		return model.Reply{Content: "saw: " + last.Content}, nil
	})
}

// A question from the model is a card of its questions, not a tool call:
// options as choices (radio buttons for one answer, checkboxes for
// several) and a field for one's own words. Answering with nothing picked
// and declining without a reason are refused on the page; then one
// question is answered in free text (which replaces the option picked
// first) and the other with an option and free text, and the model is told
// exactly those answers.
func TestPageAnswersAQuestion(t *testing.T) {
	f := newFixture(t, questionModel(), "")
	ctx := tab(t)
	signIn(t, ctx, f, aliceToken)
	id := f.startRun()
	card := `li.approval`
	run(t, ctx, chromedp.WaitVisible(chromedp.CSS(card+` button.answer`)))
	if got := text(t, ctx, card+` fieldset.question legend`); got != "Colour: Which colour?" {
		t.Errorf("first question shown as %q", got)
	}
	if got := text(t, ctx, card+` .risk`); got != "risk: read_only" {
		t.Errorf("risk shown: %q", got)
	}
	facts := text(t, ctx, card+` dl.facts`)
	if !strings.Contains(facts, "the model, with the question tool") || strings.Contains(facts, "unknown") {
		t.Errorf("the card's facts: %q", facts)
	}
	n := browsertest.Value(t, ctx, chromedp.Evaluate[[]any](`[...document.querySelectorAll('li.approval input.q-option')].map(b => b.type + ':' + b.value)`))
	if got := strings.Trim(strings.ReplaceAll(strings.Join(anyStrings(n), ","), " ", ""), ","); got != "radio:Blue,radio:Green,checkbox:Mon,checkbox:Tue" {
		t.Errorf("options: %s", got)
	}
	if browsertest.Value(t, ctx, chromedp.Evaluate[bool](`!!document.querySelector('li.approval pre.args') || !!document.querySelector('li.approval button.edit-open')`)) {
		t.Error("a question's card shows raw arguments or an editor")
	}

	// Nothing picked: the page says so and sends nothing.
	run(t, ctx, chromedp.Click(chromedp.CSS(card+` button.answer`)))
	waitText(t, ctx, card+` .error`, "Answer question 1 first")
	// A decline without a reason is refused on the page.
	run(t, ctx,
		chromedp.Click(chromedp.CSS(card+` button.deny-open`)),
		chromedp.Click(chromedp.CSS(card+` button.deny`)),
	)
	waitText(t, ctx, card+` .error`, "Give a reason")
	if got := f.pending(id); len(got) != 1 || got[0].Status != store.StatusPending {
		t.Fatalf("after refused answers: %+v", got)
	}

	run(t, ctx,
		chromedp.Click(chromedp.CSS(card+` .deny-form button.cancel`)),
		chromedp.Click(chromedp.CSS(card+` label[for$="-q0-o1"]`)),
		chromedp.SendKeys(chromedp.CSS(card+` fieldset.question:nth-of-type(1) input.q-own`), "teal, <b>please</b>"),
		chromedp.Click(chromedp.CSS(card+` label[for$="-q1-o0"]`)),
		chromedp.SendKeys(chromedp.CSS(card+` fieldset.question:nth-of-type(2) input.q-own`), "every other Friday"),
	)
	if browsertest.Value(t, ctx, chromedp.Evaluate[bool](`document.querySelector('li.approval input[id$="-q0-o1"]').checked`)) {
		t.Error("own words did not replace the option picked for a one-answer question")
	}
	screenshot(t, ctx, "question-card.png")
	run(t, ctx, chromedp.Click(chromedp.CSS(card+` button.answer`)))
	waitText(t, ctx, card+` .outcome`, "Answered: question")
	f.waitRun(id, store.RunDone)
	var v serverapi.RunView
	if code := f.do("GET", "/v1/runs/"+id, aliceToken, nil, &v); code != http.StatusOK {
		t.Fatalf("GET run: %d", code)
	}
	if want := "saw: Q: Which colour?\nA: teal, <b>please</b>\nQ: Which days?\nA: Mon; every other Friday\n"; v.Text != want {
		t.Fatalf("the model saw %q, want %q", v.Text, want)
	}
}

func anyStrings(xs []any) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i], _ = x.(string)
	}
	return out
}
