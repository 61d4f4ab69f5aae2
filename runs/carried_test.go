package runs_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// askingTransfer is a transfer_funds tool that asks for the account while
// it runs (a request of kind input) until the answer it runs with carries
// a JSON string; ran counts its runs.
func askingTransfer(ran *atomic.Int64) tool.Tool {
	type in struct {
		Amount int `json:"amount"`
	}
	return tool.Must("transfer_funds", "moves money", func(ctx context.Context, _ in) (tool.Result, error) {
		if ans, _ := tool.AnswerFrom(ctx); !strings.HasPrefix(string(ans.Data), `"`) {
			return tool.Pending(tool.Request{Kind: tool.KindInput, Prompt: "to which account?"}), nil
		}
		ran.Add(1)
		return tool.Text("moved"), nil
	}, nil)
}

// approvedThenAsking starts a run whose one call the policy asks about,
// has alice approve it and resumes: the tool asks for input, and the run
// halts again on that request with alice's approval carried. It returns
// the tool's request.
func approvedThenAsking(t *testing.T, h *runs.Host, runID string) tool.Request {
	t.Helper()
	ctx := context.Background()
	res, err := h.Start(ctx, runs.StartRequest{RunID: runID, Owner: approval.Principal{Kind: approval.PrincipalPerson, Name: "alice"}, Config: testConfig(t), Prompt: "pay"})
	if err != nil || res.Status != agent.StatusPending || res.Pending[0].Kind != tool.KindApproval {
		t.Fatalf("start: %+v %v", res, err)
	}
	if _, err := h.Answer(ctx, runID, res.Pending[0].ID, store.Answer{Approve: true, By: tool.PrincipalOf("person:alice"), Reason: "ok"}); err != nil {
		t.Fatal(err)
	}
	res, err = h.Resume(ctx, runs.ResumeRequest{RunID: runID})
	if err != nil || res.Status != agent.StatusPending || res.Pending[0].Kind != tool.KindInput {
		t.Fatalf("resume after the approval: %+v %v", res, err)
	}
	return res.Pending[0]
}

// A call a person approved whose tool then asks for input halts again;
// answered, it runs once, without its approval asked again, and the
// record names who approved and who answered. A state changed in the
// store so that the call carries an approval the store does not hold
// (here: in another person's name) is declined in the runtime's name,
// and the tool never runs.
func TestCarriedApprovalIsCheckedAgainstTheStore(t *testing.T) {
	ctx := context.Background()
	var ran atomic.Int64
	call := []model.FuncCall{testkit.Call("c1", "transfer_funds", map[string]int{"amount": 5})}
	s := store.NewMemory(nil)
	b := &testBuilder{m: testkit.Script(call), tools: agent.ToolList{askingTransfer(&ran)}}
	h := newHost(t, s, b, "host-a", time.Minute)

	req := approvedThenAsking(t, h, "run_real")
	if _, err := h.Answer(ctx, "run_real", req.ID, store.Answer{Approve: true, By: tool.PrincipalOf("person:bob"), Data: json.RawMessage(`"acc-1"`)}); err != nil {
		t.Fatal(err)
	}
	res, err := h.Resume(ctx, runs.ResumeRequest{RunID: "run_real"})
	if err != nil || res.Status != agent.StatusDone || ran.Load() != 1 {
		t.Fatalf("resume: ran %d times, %+v %v", ran.Load(), res, err)
	}
	d := res.ToolCalls[0].Decision
	var votes []string
	for _, v := range d.Votes {
		votes = append(votes, v.Source.String()+"="+string(v.Decision))
	}
	if d.Outcome != agent.OutcomeApproved || d.By.String() != "person:alice" || strings.Join(votes, " ") != "rule:ask-transfer=ask person:alice=allow person:bob=allow" {
		t.Fatalf("decision %s by %s, votes %v", d.Outcome, d.By, votes)
	}

	req = approvedThenAsking(t, h, "run_forged")
	run, err := s.GetRun(ctx, "run_forged")
	if err != nil {
		t.Fatal(err)
	}
	forged := strings.Replace(string(run.State), `"principal":{"kind":"person","name":"alice"}`, `"principal":{"kind":"person","name":"mallory"}`, 1)
	if forged == string(run.State) {
		t.Fatalf("the state carries no approval by alice: %s", run.State)
	}
	if _, err := s.UpdateRun(ctx, "run_forged", store.RunUpdate{From: store.RunPending, State: json.RawMessage(forged)}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Answer(ctx, "run_forged", req.ID, store.Answer{Approve: true, By: tool.PrincipalOf("person:bob"), Data: json.RawMessage(`"acc-1"`)}); err != nil {
		t.Fatal(err)
	}
	res, err = h.Resume(ctx, runs.ResumeRequest{RunID: "run_forged"})
	if err != nil || ran.Load() != 1 {
		t.Fatalf("resume of the forged state: ran %d times in all, %v", ran.Load(), err)
	}
	d = res.ToolCalls[0].Decision
	if d.Outcome != agent.OutcomeDeclined || d.By.Kind != tool.PrincipalRuntime || !strings.Contains(d.Reason, "was decided otherwise") {
		t.Fatalf("decision %+v", d)
	}
}
