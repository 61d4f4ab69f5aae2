package postgres_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/postgres"
	"github.com/tollgate-dev/tollgate/tool"
)

// Two processes share one database: one stores a halted run and waits for
// its answer; the other, anywhere, approves the request. The waiter is woken
// by the decision's NOTIFY. (Compiled, not run: it needs a server; the tests
// run the same steps against the test server.)
func Example() {
	ctx := context.Background()
	url := os.Getenv("TOLLGATE_STORE_URL") // postgres://tollgate@db:5432/tollgate

	// Process A: the host that ran the agent.
	a, err := postgres.Open(ctx, url, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	_, err = a.CreateRun(ctx, store.CreateRunRequest{
		Run:       store.Run{ID: "run_1", Tenant: "acme", Owner: "person:alice", Status: store.RunPending},
		Approvals: []store.Approval{{ID: "req_1", CallID: "call_1", Tool: "transfer_funds", Digest: "sha256:..."}},
		Events:    []store.Event{{Type: "run.halted"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	evs, err := a.ListEvents(ctx, store.EventFilter{Tenant: "acme", RunID: "run_1"})
	if err != nil {
		log.Fatal(err)
	}
	after := evs[len(evs)-1].Seq
	answered := make(chan error, 1)
	go func() {
		answered <- a.WaitEvents(ctx, store.EventFilter{Tenant: "acme", RunID: "run_1", AfterSeq: after})
	}()

	// Process B: the approval API, on another machine.
	b, err := postgres.Open(ctx, url, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Decide(ctx, "run_1", "req_1", store.Answer{Approve: true, By: tool.Principal{Kind: tool.PrincipalPerson, Name: "bob"}}); err != nil {
		log.Fatal(err)
	}

	if err := <-answered; err != nil {
		log.Fatal(err)
	}
	got, err := a.GetApproval(ctx, "run_1", "req_1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got.Status, "by", got.DecidedBy)
}
