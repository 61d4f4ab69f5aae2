package server_test

import (
	"context"
	"net/http"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/internal/storeimpl/storeimpltest"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/sqlite"
)

// TestDecisionWrites counts the store's writes from a decision's POST to
// its run's end: the decision; the resume's claim, which uses the approval
// and stores run.resumed in the same write; the checkpoint after the call;
// the run's end (the state after the call's result, with no event waiting,
// is stored with the end). SQLite takes one writer at a time,
// so that with decisions in flight each write more is a wait for the others.
// The resume reads the approval once, to see that it is answered and how.
func TestDecisionWrites(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	wc := &storeimpltest.Calls{Store: st}
	f := newFixture(t, wc, nil, nil)
	id := benchStart(f)
	ap := f.pending(id)
	wc.Take()
	var got serverapi.ApprovalView
	if code := f.do("POST", "/v1/approvals/"+ap.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: ap.ArgsDigest}, &got); code != http.StatusOK {
		t.Fatalf("decision: %d", code)
	}
	f.waitRun(id, store.RunDone)
	want := []string{"Decide", "GetApproval", "ClaimRun", "UpdateRun resuming", "UpdateRun done"}
	// The server's tick expires approvals on its own time: not the decision's.
	calls := slices.DeleteFunc(wc.Take(), func(c string) bool { return c == "ExpireApprovals" })
	if !slices.Equal(calls, want) {
		t.Fatalf("store calls from the decision to the run's end = %v, want %v", calls, want)
	}
	if f.transfer.Count() != 1 {
		t.Fatalf("transfer ran %d times, want once", f.transfer.Count())
	}
}
