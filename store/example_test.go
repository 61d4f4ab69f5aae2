package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/tool"
)

// A host stores a halted run, waits for its answer through the event log,
// claims the run to resume it, and checkpoints under its lease; a second
// worker's claim is refused while the lease lasts.
func Example() {
	ctx := context.Background()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s := memory.New(&store.Options{Now: func() time.Time { return now }})
	defer s.Close()

	_, err := s.CreateRun(ctx, store.CreateRunRequest{
		Run:       store.Run{ID: "run_1", Tenant: "acme", Owner: "person:alice", Status: store.RunPending, State: json.RawMessage(`{}`)},
		Approvals: []store.Approval{{ID: "req_1", CallID: "call_1", Tool: "transfer_funds", Digest: "sha256:ab"}},
		Events:    []store.Event{{Type: "run.halted"}},
	})
	if err != nil {
		panic(err)
	}
	evs, _ := s.ListEvents(ctx, store.EventFilter{Tenant: "acme", RunID: "run_1"})
	last := evs[len(evs)-1].Seq

	// Someone answers while the host waits for the run's next event.
	go s.Decide(ctx, "run_1", "req_1", store.Answer{Approve: true, By: tool.Principal{Kind: tool.PrincipalPerson, Name: "bob"}})
	if err := s.WaitEvents(ctx, store.EventFilter{Tenant: "acme", RunID: "run_1", AfterSeq: last}); err != nil {
		panic(err)
	}
	evs, _ = s.ListEvents(ctx, store.EventFilter{Tenant: "acme", RunID: "run_1", AfterSeq: last})
	fmt.Println("event:", evs[0].Type, string(evs[0].Data))

	run, _, err := s.ClaimRun(ctx, "run_1", store.Claim{Holder: "worker-1", TTL: time.Minute, From: []store.RunStatus{store.RunPending}, To: store.RunResuming})
	if err != nil {
		panic(err)
	}
	fmt.Println("claimed:", run.Status, run.Lease.Holder, "token", run.Lease.Token)

	_, _, err = s.ClaimRun(ctx, "run_1", store.Claim{Holder: "worker-2", TTL: time.Minute, From: []store.RunStatus{store.RunResuming}})
	fmt.Println("second claim leased:", errors.Is(err, store.ErrLeased))

	run, err = s.UpdateRun(ctx, "run_1", store.RunUpdate{LeaseToken: run.Lease.Token, Status: store.RunDone, ReleaseLease: true,
		Events: []store.Event{{Type: "run.done"}}})
	if err != nil {
		panic(err)
	}
	fmt.Println("checkpoint:", run.Status, "version", run.Version, "lease", run.Lease)
	// Output:
	// event: approval.decided {"approvalId":"req_1","callId":"call_1","tool":"transfer_funds","status":"approved","decidedBy":{"kind":"person","name":"bob"}}
	// claimed: resuming worker-1 token 1
	// second claim leased: true
	// checkpoint: done version 3 lease <nil>
}

// An administrator answers for someone else: the approval keeps the person
// the answer is for (DecidedBy) and the administrator who gave it (Actor),
// and the answer the agent gets names both.
func ExampleAnswer_actor() {
	ctx := context.Background()
	s := memory.New(nil)
	defer s.Close()
	_, err := s.CreateRun(ctx, store.CreateRunRequest{
		Run:       store.Run{ID: "run_1", Status: store.RunPending},
		Approvals: []store.Approval{{ID: "req_1", CallID: "call_1", Tool: "transfer_funds", Digest: "sha256:ab"}},
	})
	if err != nil {
		panic(err)
	}
	a, err := s.Decide(ctx, "run_1", "req_1", store.Answer{
		Approve: true,
		By:      tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"},
		Actor:   tool.Principal{Kind: tool.PrincipalPerson, Name: "root"},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(a.Status, "by", a.DecidedBy, "actor", a.Actor)
	ans, _ := a.Answer()
	b, _ := json.Marshal(ans)
	fmt.Println(string(b))

	_, err = s.Decide(ctx, "run_1", "req_1", store.Answer{Approve: true})
	fmt.Println("no principal:", errors.Is(err, store.ErrInvalid))
	// Output:
	// approved by person:alice actor person:root
	// {"id":"req_1","ok":true,"principal":{"kind":"person","name":"alice"},"actor":{"kind":"person","name":"root"}}
	// no principal: true
}
