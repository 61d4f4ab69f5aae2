package runcore

import (
	"fmt"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/storeimpl"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/tool"
)

// A halt stores only the requests that are new: every stored approval of
// the run is known, past the store's first page, or the next halt would
// store one again and fail (store.ErrExists), losing the run's end.
func TestKnownApprovalsReadsEveryPage(t *testing.T) {
	st := memory.New(nil)
	n := storeimpl.DefaultLimit + 50
	var as []store.Approval
	for i := range n {
		id := fmt.Sprintf("req_%03d", i)
		as = append(as, store.Approval{ID: id, CallID: "c" + id, Tool: "write", Digest: "sha256:x", Kind: tool.KindApproval, Request: tool.Request{ID: id, Kind: tool.KindApproval}})
	}
	if _, err := st.CreateRun(t.Context(), store.CreateRunRequest{Run: store.Run{ID: "run_k", Status: store.RunPending}, Approvals: as}); err != nil {
		t.Fatal(err)
	}
	known, err := KnownApprovals(t.Context(), st, "run_k")
	if err != nil || len(known) != n || !known["req_000"] || !known[fmt.Sprintf("req_%03d", n-1)] {
		t.Fatalf("known approvals: %d of %d (%v)", len(known), n, err)
	}
}
