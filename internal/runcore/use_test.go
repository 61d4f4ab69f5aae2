package runcore

import (
	"context"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/tool"
)

// The execute step acts on an approval only for the call it was given
// for: an answer that names another call's approval of the run (a record
// changed in the engine's tables) declines the call and leaves that
// approval unused.
func TestUseRefusesAnotherCallsApproval(t *testing.T) {
	ctx := context.Background()
	st := memory.New(nil)
	req := tool.Request{ID: "req_1", Kind: tool.KindApproval, Prompt: "delete?"}
	ap := store.Approval{ID: "req_1", CallID: "c1", Tool: "rm", Kind: tool.KindApproval, Digest: approval.Digest([]byte(`{}`)), Request: req}
	if _, err := st.CreateRun(ctx, store.CreateRunRequest{Run: store.Run{ID: "run_1", Status: store.RunPending}, Approvals: []store.Approval{ap}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Decide(ctx, "run_1", "req_1", store.Answer{Approve: true, By: tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}}); err != nil {
		t.Fatal(err)
	}
	d := &Durable{store: st}
	got, err := d.use(ctx, "run_1", model.ToolCall{ID: "c2", Name: "rm"}, tool.Answer{ID: "req_1", OK: true})
	if err != nil || got.OK || !strings.Contains(got.Reason, "another call") {
		t.Errorf("another call's approval: %+v, %v", got, err)
	}
	if a, _ := st.GetApproval(ctx, "run_1", "req_1"); a.Status != store.StatusApproved {
		t.Errorf("the approval is %s, want it left approved", a.Status)
	}
	got, err = d.use(ctx, "run_1", model.ToolCall{ID: "c1", Name: "rm"}, tool.Answer{ID: "req_1", OK: true})
	if err != nil || !got.OK {
		t.Errorf("its own call: %+v, %v", got, err)
	}
}
