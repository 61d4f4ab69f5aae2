package web_test

import (
	"slices"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/store"
)

// The three parallel calls of one turn are approved at once: each is sent
// as its own decision with its own digest, each is recorded as alice's,
// and each call runs exactly once.
func TestPageApprovesABatch(t *testing.T) {
	f := newFixture(t, testkit.Script([]model.FuncCall{
		testkit.Call("c1", "transfer", map[string]int{"amount": 1}),
		testkit.Call("c2", "transfer", map[string]int{"amount": 2}),
		testkit.Call("c3", "transfer", map[string]int{"amount": 3}),
	}), "")
	ctx := tab(t)
	signIn(t, ctx, f, aliceToken)
	id := f.startRun()
	f.waitRun(id, store.RunPending)
	waitText(t, ctx, `#batches .batch`, "waits for 3 calls of one turn")
	if got := text(t, ctx, `#batches button.approve-batch`); got != "Approve all 3" {
		t.Fatalf("batch button: %q", got)
	}
	if n := len(f.transfer.runs(t)); n != 0 {
		t.Fatalf("%d transfers ran before the batch", n)
	}
	run(t, ctx, chromedp.Click(chromedp.CSS(`#batches button.approve-batch`)))
	f.waitRun(id, store.RunDone)
	got := f.transfer.runs(t)
	slices.Sort(got)
	if want := []string{`{"amount":1}`, `{"amount":2}`, `{"amount":3}`}; !slices.Equal(got, want) {
		t.Fatalf("transfers ran %q, want each once: %q", got, want)
	}
	a, err := f.store.ListApprovals(t.Context(), store.ApprovalFilter{Tenant: "acme", RunID: id})
	if err != nil || len(a.Approvals) != 3 {
		t.Fatalf("approvals: %+v %v", a, err)
	}
	for _, x := range a.Approvals {
		if x.DecidedBy.String() != "person:alice" || (x.Status != store.StatusApproved && x.Status != store.StatusUsed) {
			t.Fatalf("approval %s: %s by %s", x.ID, x.Status, x.DecidedBy)
		}
	}
}
