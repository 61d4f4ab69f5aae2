package server_test

import (
	"context"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/sqlite"
)

// writeCounter is a store that notes its write transactions, by method,
// and its reads of one approval.
type writeCounter struct {
	store.Store
	mu    sync.Mutex
	calls []string
}

func (w *writeCounter) note(m string) {
	w.mu.Lock()
	w.calls = append(w.calls, m)
	w.mu.Unlock()
}

func (w *writeCounter) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.calls
	w.calls = nil
	return c
}

func (w *writeCounter) CreateRun(ctx context.Context, r store.CreateRunRequest) (store.Run, error) {
	w.note("CreateRun")
	return w.Store.CreateRun(ctx, r)
}

func (w *writeCounter) UpdateRun(ctx context.Context, id string, u store.RunUpdate) (store.Run, error) {
	w.note("UpdateRun")
	return w.Store.UpdateRun(ctx, id, u)
}

func (w *writeCounter) ClaimRun(ctx context.Context, id string, c store.Claim) (store.Run, []store.Approval, error) {
	w.note("ClaimRun")
	return w.Store.ClaimRun(ctx, id, c)
}

func (w *writeCounter) RenewLease(ctx context.Context, id, holder string, token int64, ttl time.Duration) (store.Lease, error) {
	w.note("RenewLease")
	return w.Store.RenewLease(ctx, id, holder, token, ttl)
}

func (w *writeCounter) Decide(ctx context.Context, runID, id string, d store.Answer) (store.Approval, error) {
	w.note("Decide")
	return w.Store.Decide(ctx, runID, id, d)
}

func (w *writeCounter) Consume(ctx context.Context, runID, id, digest string) (store.Approval, error) {
	w.note("Consume")
	return w.Store.Consume(ctx, runID, id, digest)
}

func (w *writeCounter) GetApproval(ctx context.Context, runID, id string) (store.Approval, error) {
	w.note("GetApproval")
	return w.Store.GetApproval(ctx, runID, id)
}

func (w *writeCounter) AppendEvents(ctx context.Context, evs ...store.Event) ([]int64, error) {
	w.note("AppendEvents")
	return w.Store.AppendEvents(ctx, evs...)
}

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
	wc := &writeCounter{Store: st}
	f := newFixture(t, wc, nil, nil)
	id := benchStart(f)
	ap := f.pending(id)
	wc.take()
	var got serverapi.ApprovalView
	if code := f.do("POST", "/v1/approvals/"+ap.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: ap.ArgsDigest}, &got); code != http.StatusOK {
		t.Fatalf("decision: %d", code)
	}
	f.waitRun(id, store.RunDone)
	want := []string{"Decide", "GetApproval", "ClaimRun", "UpdateRun", "UpdateRun"}
	if got := wc.take(); !slices.Equal(got, want) {
		t.Fatalf("store calls from the decision to the run's end = %v, want %v", got, want)
	}
	if f.transfer.Count() != 1 {
		t.Fatalf("transfer ran %d times, want once", f.transfer.Count())
	}
}
