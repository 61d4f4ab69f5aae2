package web_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/tollgate-dev/tollgate/internal/browsertest"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/store"
)

// One Chromium for the whole package, started by the first test that needs
// it; each test gets a tab of its own (its own sessionStorage: every
// fixture is another origin).
var chrome browsertest.Chrome

func TestMain(m *testing.M) {
	code := m.Run()
	chrome.Close()
	os.Exit(code)
}

func tab(t *testing.T) context.Context { return chrome.Tab(t) }

var (
	run          = browsertest.Do
	waitText     = browsertest.WaitText
	screenshot   = browsertest.Screenshot
	sameDocument = browsertest.SameDocument
)

// signIn opens the page, signs in with token and waits until the event
// stream is live and the (empty) list of approvals shows.
func signIn(t *testing.T, ctx context.Context, f *fixture, token string) {
	t.Helper()
	browsertest.SignIn(t, ctx, f.url, token)
	run(t, ctx, chromedp.WaitVisible(chromedp.CSS(`#approvals-empty`)))
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return browsertest.Value(t, ctx, chromedp.TextContent(chromedp.CSS(sel)))
}

// A run halts on an approval; the approval appears on the open page without
// a reload, with what a person needs to decide; a click on Approve resumes
// the run, the tool runs exactly once, and the page shows the result.
func TestPageApproveResumesRun(t *testing.T) {
	f := newFixture(t, testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer", map[string]int{"amount": 5})}), "")
	ctx := tab(t)
	signIn(t, ctx, f, aliceToken)

	id := f.startRun()
	f.waitRun(id, store.RunPending)
	card := `li.approval`
	run(t, ctx, chromedp.WaitVisible(chromedp.CSS(card+` button.approve`)))
	sameDocument(t, ctx)

	if got := text(t, ctx, card+` .tool`); got != "transfer" {
		t.Errorf("tool shown: %q", got)
	}
	if got, want := text(t, ctx, card+` pre.args`), "{\n  \"amount\": 5\n}"; got != want {
		t.Errorf("arguments shown:\n%s\nwant\n%s", got, want)
	}
	facts := text(t, ctx, card+` dl.facts`)
	for _, want := range []string{"rule:ask-transfer", "money moves", id, "person:alice", "destructive, open world"} {
		if !strings.Contains(facts, want) {
			t.Errorf("the card's facts %q lack %q", facts, want)
		}
	}
	if got := text(t, ctx, card+` .risk`); got != "risk: destructive" {
		t.Errorf("risk shown: %q", got)
	}
	waitText(t, ctx, card+` .countdown`, "Time left: 9:")
	waitText(t, ctx, `#announcer`, "New approval: transfer in run "+id)
	waitText(t, ctx, `#runs`, id)
	screenshot(t, ctx, "approvals-page.png")
	if n := len(f.transfer.runs(t)); n != 0 {
		t.Fatalf("the tool ran %d times before the approval", n)
	}

	run(t, ctx, chromedp.Click(chromedp.CSS(card+` button.approve`)))
	waitText(t, ctx, card+` .outcome`, "Approved: transfer")
	if focused := browsertest.Value(t, ctx, chromedp.Evaluate[string](`document.activeElement.className`)); focused != "outcome" {
		t.Errorf("after the decision, focus is on %q, want the outcome", focused)
	}
	done := f.waitRun(id, store.RunDone)
	if got := f.transfer.runs(t); len(got) != 1 || got[0] != `{"amount":5}` {
		t.Fatalf("the tool ran with %q, want once with {\"amount\":5}", got)
	}
	a, err := f.store.ListApprovals(context.Background(), store.ApprovalFilter{Tenant: "acme", RunID: id})
	if err != nil || len(a.Approvals) != 1 || a.Approvals[0].DecidedBy.String() != "person:alice" {
		t.Fatalf("the stored decision: %+v %v", a, err)
	}

	// The result, in the run view, reached from the list of runs. The
	// decided card leaves the list above 4 s after the decision, moving the
	// list up: the link is clicked once it has, so that the click lands on
	// it rather than where it was.
	run(t, ctx, chromedp.WaitNotPresent(chromedp.CSS(card)), chromedp.Click(chromedp.CSS(fmt.Sprintf(`#runs a[href="#run=%s"]`, id))))
	waitText(t, ctx, `#run-result`, "done")
	waitText(t, ctx, `#run-calls tr.call`, "ran transfer")
	waitText(t, ctx, `#run-calls tr.call .decision`, "person:alice")
	waitText(t, ctx, `#run-events`, "run.finished")
	sameDocument(t, ctx)
	if done.Status != store.RunDone {
		t.Fatalf("run status %s", done.Status)
	}
	if n := len(f.transfer.runs(t)); n != 1 {
		t.Fatalf("the tool ran %d times, want 1", n)
	}
	screenshot(t, ctx, "run-view.png")
}

// Edit arguments, by keyboard: an edit the tool's schema refuses shows the
// server's 422 problem next to the form and runs nothing; a valid one is
// approved and the run goes on with the edited arguments.
func TestPageEditThenApprove(t *testing.T) {
	f := newFixture(t, testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer", map[string]int{"amount": 50})}), "")
	ctx := tab(t)
	signIn(t, ctx, f, aliceToken)
	id := f.startRun()
	card := `li.approval`
	run(t, ctx,
		chromedp.WaitVisible(chromedp.CSS(card+` button.edit-open`)),
		chromedp.Focus(chromedp.CSS(card+` button.edit-open`)),
		chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(card+` textarea.edited-args`)),
	)
	if focused := browsertest.Value(t, ctx, chromedp.Evaluate[string](`document.activeElement.className`)); focused != "edited-args" {
		t.Errorf("focus after opening the editor is on %q, want the textarea", focused)
	}
	if got := text(t, ctx, card+` details.schema pre`); !strings.Contains(got, `"maximum": 100`) {
		t.Errorf("the input schema shown: %q", got)
	}

	run(t, ctx,
		chromedp.SetValue(chromedp.CSS(card+` textarea.edited-args`), `{"amount": 500}`),
		chromedp.Click(chromedp.CSS(card+` button.approve-edited`)),
	)
	waitText(t, ctx, card+` [role=alert] .detail`, "editedArgs do not fit the tool's input schema")
	if got := text(t, ctx, card+` [role=alert] .problem-errors`); !strings.Contains(got, "100") {
		t.Errorf("the problem's errors shown: %q", got)
	}
	if p := f.pending(id); len(p) != 1 {
		t.Fatalf("after a refused edit, pending approvals: %d, want 1", len(p))
	}

	run(t, ctx,
		chromedp.SetValue(chromedp.CSS(card+` textarea.edited-args`), `{"amount": 7}`),
		chromedp.Focus(chromedp.CSS(card+` button.approve-edited`)),
		chromedp.KeyEvent(kb.Enter),
	)
	waitText(t, ctx, card+` .outcome`, "Approved: transfer")
	f.waitRun(id, store.RunDone)
	if got := f.transfer.runs(t); len(got) != 1 || got[0] != `{"amount":7}` {
		t.Fatalf("the tool ran with %q, want once with the edited {\"amount\":7}", got)
	}
	run(t, ctx, chromedp.Navigate(f.url+"/#run="+id)) // a link to a run opens its view
	waitText(t, ctx, `#run-calls tr.call`, `"amount": 7`)
	waitText(t, ctx, `#run-calls tr.call`, `"amount": 50`) // what the model asked, beside it
}

// Deny with a reason: the tool never runs and the model is told why.
func TestPageDenyWithReason(t *testing.T) {
	f := newFixture(t, testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer", map[string]int{"amount": 5})}), "")
	ctx := tab(t)
	signIn(t, ctx, f, aliceToken)
	id := f.startRun()
	card := `li.approval`
	run(t, ctx,
		chromedp.WaitVisible(chromedp.CSS(card+` button.deny-open`)),
		chromedp.Click(chromedp.CSS(card+` button.deny-open`)),
		chromedp.WaitVisible(chromedp.CSS(card+` textarea.reason`)),
		chromedp.SendKeys(chromedp.CSS(card+` textarea.reason`), "not this month"),
		chromedp.Click(chromedp.CSS(card+` button.deny`)),
	)
	waitText(t, ctx, card+` .outcome`, "Denied: transfer")
	f.waitRun(id, store.RunDone)
	if n := len(f.transfer.runs(t)); n != 0 {
		t.Fatalf("a denied tool ran %d times", n)
	}
	a, err := f.store.ListApprovals(context.Background(), store.ApprovalFilter{Tenant: "acme", RunID: id})
	if err != nil || len(a.Approvals) != 1 || a.Approvals[0].Reason != "not this month" || a.Approvals[0].Status != store.StatusDenied {
		t.Fatalf("the stored decision: %+v %v", a, err)
	}
}

// A request that expires while the page is open counts down to zero and
// leaves the list by itself; the run goes on without the call.
func TestPageExpiredApprovalLeaves(t *testing.T) {
	f := newFixtureTTL(t, testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer", map[string]int{"amount": 5})}), "", 3*time.Second)
	ctx := tab(t)
	signIn(t, ctx, f, aliceToken)
	id := f.startRun()
	run(t, ctx, chromedp.WaitVisible(chromedp.CSS(`li.approval button.approve`)))
	waitText(t, ctx, `li.approval .countdown`, "Time left: 0:0")
	f.waitRun(id, store.RunDone)
	run(t, ctx, chromedp.WaitNotPresent(chromedp.CSS(`li.approval`)), chromedp.WaitVisible(chromedp.CSS(`#approvals-empty`)))
	sameDocument(t, ctx)
	if n := len(f.transfer.runs(t)); n != 0 {
		t.Fatalf("an expired request's tool ran %d times", n)
	}
}

// The event stream's ticket is good for a minute; when the stream drops
// after that (a proxy, a restart), the page gets a new ticket with its token
// and goes on from the last event it saw: a later approval still appears
// without a reload.
func TestPageReconnectsWithANewTicket(t *testing.T) {
	f := newFixture(t, testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer", map[string]int{"amount": 5})}), "")
	ctx := tab(t)
	signIn(t, ctx, f, aliceToken)
	f.skew.Store(int64(2 * time.Minute)) // the page's ticket has expired
	f.ts.CloseClientConnections()
	waitText(t, ctx, `#stream-status`, "Reconnecting")
	waitText(t, ctx, `#stream-status`, "Live")
	id := f.startRun()
	f.waitRun(id, store.RunPending)
	run(t, ctx, chromedp.WaitVisible(chromedp.CSS(`li.approval button.approve`)))
	sameDocument(t, ctx)
	waitText(t, ctx, `li.approval dl.facts`, id)
}

// An operator starts a run from the page: the run view opens, and the
// run's approval appears; a viewer is not offered the form.
func TestPageStartsARun(t *testing.T) {
	f := newFixture(t, testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer", map[string]int{"amount": 5})}), "")
	ctx := tab(t)
	signIn(t, ctx, f, aliceToken)
	run(t, ctx,
		chromedp.WaitVisible(chromedp.CSS(`#start-prompt`)),
		chromedp.SendKeys(chromedp.CSS(`#start-prompt`), "pay the <b>invoice</b>"),
		chromedp.Click(chromedp.CSS(`#start-submit`)),
		chromedp.WaitVisible(chromedp.CSS(`li.approval button.approve`)),
	)
	waitText(t, ctx, `#run-facts`, "payer")
	runs, err := f.store.ListRuns(context.Background(), store.RunFilter{Tenant: "acme"})
	if err != nil || len(runs.Runs) != 1 {
		t.Fatalf("runs after one click: %+v %v", runs, err)
	}
	id := runs.Runs[0].ID
	waitText(t, ctx, `#run-id`, id)
	waitText(t, ctx, `li.approval dl.facts`, id)
	waitText(t, ctx, `#run-events`, "run.halted")
	sameDocument(t, ctx)

	viewer := tab(t)
	browsertest.SignIn(t, viewer, f.url, vicToken)
	run(t, viewer, chromedp.WaitVisible(chromedp.CSS(`li.approval`)))
	if browsertest.Value(t, viewer, chromedp.Evaluate[bool](`!document.getElementById('start').hidden`)) {
		t.Error("a viewer's page offers to start runs")
	}
}

// A viewer sees approvals but cannot decide them.
func TestPageViewerCannotDecide(t *testing.T) {
	f := newFixture(t, testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer", map[string]int{"amount": 5})}), "")
	ctx := tab(t)
	signIn(t, ctx, f, vicToken)
	f.startRun()
	run(t, ctx, chromedp.WaitVisible(chromedp.CSS(`li.approval button.approve`)))
	if !browsertest.Value(t, ctx, chromedp.Evaluate[bool](`[...document.querySelectorAll('li.approval button.approve, li.approval button.deny-open, li.approval button.edit-open')].every(b => b.disabled)`)) {
		t.Error("a viewer's page offers enabled decision buttons")
	}
	waitText(t, ctx, `li.approval .help`, "needs the approver role")
}

// adversary is what the model and the tool write: markup, a script, an
// end of textarea and a right-to-left override, which the page must show
// as text.
const adversary = "</textarea></pre><script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\">\u202Eevil"

// Arguments, tool output and the model's text are adversarial: the page
// shows them as text and runs none of them.
func TestPageShowsAdversarialTextAsText(t *testing.T) {
	m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		if testkit.Turn(req) == 0 {
			return model.Reply{ToolCalls: []model.FuncCall{testkit.Call("c1", "note", map[string]string{"text": adversary})}}, nil
		}
		return model.Reply{Content: "<img src=x onerror=\"window.__pwned=4\"><b>bold</b>"}, nil
	})
	f := newFixture(t, m, "<script>window.__pwned=3</script><b>out</b>")
	ctx := tab(t)
	signIn(t, ctx, f, aliceToken)
	id := f.startRun()
	card := `li.approval`
	run(t, ctx, chromedp.WaitVisible(chromedp.CSS(card+` pre.args`)))

	args := text(t, ctx, card+` pre.args`)
	for _, want := range []string{`</textarea></pre><script>window.__pwned=1</script>`, `\u{202E}evil`} {
		if !strings.Contains(args, want) {
			t.Errorf("the arguments shown %q lack %q as text", args, want)
		}
	}
	if strings.Contains(args, "\u202E") {
		t.Error("a right-to-left override reached the page unmarked")
	}
	waitText(t, ctx, card+` .warning`, "invisible or direction-changing characters")
	run(t, ctx, chromedp.Click(chromedp.CSS(card+` button.edit-open`)), chromedp.WaitVisible(chromedp.CSS(card+` textarea.edited-args`)))
	if v := browsertest.Value(t, ctx, chromedp.Value(chromedp.CSS(card+` textarea.edited-args`))); !strings.Contains(v, `</textarea></pre><script>`) {
		t.Errorf("the editor holds %q, want the arguments with their markup as text", v)
	}
	noMarkup(t, ctx)

	run(t, ctx, chromedp.Click(chromedp.CSS(card+` button.approve`)))
	f.waitRun(id, store.RunDone)
	if n := len(f.note.runs(t)); n != 1 {
		t.Fatalf("the tool ran %d times, want 1", n)
	}
	// Once the decided card has left, the list of runs below it stays put.
	run(t, ctx, chromedp.WaitNotPresent(chromedp.CSS(card)), chromedp.Click(chromedp.CSS(fmt.Sprintf(`a[href="#run=%s"]`, id))))
	waitText(t, ctx, `#run-calls tr.call pre.output`, "<script>window.__pwned=3</script><b>out</b>")
	waitText(t, ctx, `#run-result`, `<img src=x onerror="window.__pwned=4"><b>bold</b>`)
	noMarkup(t, ctx)
}

// noMarkup fails if anything the server sent became an element or ran.
func noMarkup(t *testing.T, ctx context.Context) {
	t.Helper()
	type found struct {
		Pwned    bool `json:"pwned"`
		Elements int  `json:"elements"`
	}
	res := browsertest.Value(t, ctx, chromedp.Evaluate[found](`({pwned: window.__pwned !== undefined, elements: document.querySelectorAll('main script, main img, main b').length})`))
	if res.Pwned || res.Elements != 0 {
		t.Fatalf("adversarial text became markup: ran %v, %d elements", res.Pwned, res.Elements)
	}
}

// Mounted under a path prefix of another mux (http.StripPrefix), the page
// loads its script and style, signs in, follows the event stream, and an
// approval decided on it resumes the run: every URL it uses is relative to
// the page's own.
func TestPageUnderPathPrefix(t *testing.T) {
	f := newFixtureAt(t, testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer", map[string]int{"amount": 5})}), "", 10*time.Minute, "/tg")
	ctx := tab(t)
	signIn(t, ctx, f, aliceToken)
	if got := text(t, ctx, `#whoami`); !strings.Contains(got, "alice") {
		t.Errorf("whoami under /tg: %q", got)
	}
	id := f.startRun()
	card := `li.approval`
	run(t, ctx, chromedp.WaitVisible(chromedp.CSS(card+` button.approve`)))
	run(t, ctx, chromedp.Click(chromedp.CSS(card+` button.approve`)))
	waitText(t, ctx, card+` .outcome`, "Approved: transfer")
	f.waitRun(id, store.RunDone)
	sameDocument(t, ctx)
	if n := len(f.transfer.runs(t)); n != 1 {
		t.Fatalf("the tool ran %d times, want 1", n)
	}
}
