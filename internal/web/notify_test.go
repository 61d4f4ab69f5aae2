package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/tollgate-dev/tollgate/internal/browsertest"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/store"
)

// notificationStub stands in for the browser's Notification: permission
// "default" until requested, then "granted"; every notification made is
// kept in window.notes.
const notificationStub = `window.notes = []; window.perm = 'default';
window.Notification = class { constructor(title, o) { window.notes.push(title + ' | ' + o.body); }
  static get permission() { return window.perm; }
  static requestPermission() { window.perm = 'granted'; return Promise.resolve('granted'); } };
true`

// The page never notifies before the person allows it; once allowed, a
// new approval raises a notification naming its tool and run.
func TestPageNotifiesNewApprovals(t *testing.T) {
	f := newFixture(t, testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer", map[string]int{"amount": 5})}, []model.FuncCall{testkit.Call("c2", "transfer", map[string]int{"amount": 6})}), "")
	ctx := tab(t)
	signIn(t, ctx, f, aliceToken)
	browsertest.Value(t, ctx, chromedp.Evaluate[bool](notificationStub))
	// The stub is installed after the page looked: look again.
	browsertest.Value(t, ctx, chromedp.Evaluate[bool](`document.getElementById('notify').hidden = false, true`))

	first := f.startRun()
	f.waitRun(first, store.RunPending)
	run(t, ctx, chromedp.WaitVisible(chromedp.CSS(`li.approval button.approve`)))
	waitText(t, ctx, `#announcer`, "New approval: transfer")
	if n := browsertest.Value(t, ctx, chromedp.Evaluate[int](`window.notes.length`)); n != 0 {
		t.Fatalf("%d notifications before the person allowed them", n)
	}
	run(t, ctx, chromedp.Click(chromedp.CSS(`#notify`)))
	waitText(t, ctx, `#notify-state`, "New approvals raise a notification.")
	second := f.startRun()
	f.waitRun(second, store.RunPending)
	run(t, ctx, chromedp.Poll[chromedp.Void](`window.notes.length === 1`))
	if got := browsertest.Value(t, ctx, chromedp.Evaluate[string](`window.notes[0]`)); got != "tollgate: approval needed | transfer in run "+second {
		t.Fatalf("notification: %q", got)
	}
}
