package inbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/approval/inbox"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/tool"
)

// A person finds a request in their tenant and approves it with the digest
// they were shown; the same approval again is answered as the first, and a
// denial after it is refused with who decided.
func Example() {
	ctx := context.Background()
	s := memory.New(nil)
	defer s.Close()
	args := json.RawMessage(`{"amount":5}`)
	data, _ := json.Marshal(approval.RequestData{Tool: "transfer", CallID: "call_1", Args: args, Digest: approval.Digest(args)})
	_, err := s.CreateRun(ctx, store.CreateRunRequest{
		Run: store.Run{ID: "run_1", Tenant: "acme", Status: store.RunPending},
		Approvals: []store.Approval{{ID: "req_1", CallID: "call_1", Tool: "transfer", Digest: approval.Digest(args),
			Kind: tool.KindApproval, Request: tool.Request{ID: "req_1", Kind: tool.KindApproval, Data: data}}},
	})
	if err != nil {
		panic(err)
	}

	ib := inbox.New(s, nil)
	a, err := ib.Find(ctx, inbox.Query{Tenant: "acme", ID: "req_1"})
	if err != nil {
		panic(err)
	}
	alice := tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}
	approve := inbox.Decision{Approve: true, By: alice, Digest: a.Digest}
	a, err = ib.Decide(ctx, a, approve)
	fmt.Println(a.Status, a.DecidedBy, err)

	a, err = ib.Decide(ctx, a, approve)
	fmt.Println("again:", a.Status, err)

	_, err = ib.Decide(ctx, a, inbox.Decision{By: alice, Reason: "changed my mind"})
	fmt.Println("deny:", errors.Is(err, store.ErrDecided), err)
	// Output:
	// approved person:alice <nil>
	// again: approved <nil>
	// deny: true store: approval already decided: approval req_1 of run run_1 is approved (by person:alice)
}
