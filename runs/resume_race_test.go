package runs_test

import (
	"context"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/tool"
)

// heldBuilder is a testBuilder whose builds, once hold is set, tell
// building that they started and wait until hold is closed.
type heldBuilder struct {
	*testBuilder
	building chan struct{}
	hold     chan struct{}
}

func (b *heldBuilder) Build(ctx context.Context, cfg runs.RunConfig) (*runs.Built, error) {
	if b.hold != nil {
		b.building <- struct{}{}
		<-b.hold
	}
	return b.testBuilder.Build(ctx, cfg)
}

// A request answered while a resume builds its agent is answered in the
// resumed run: the resume reads a still-pending approval again after the
// build, so that the run does not halt again on a request already answered
// (which nothing would resume).
func TestResumeSeesAnAnswerMadeDuringItsBuild(t *testing.T) {
	ctx := context.Background()
	transfer := &testkit.Counter{Name: "transfer_funds"}
	calls := []model.FuncCall{testkit.Call("c1", "transfer_funds", map[string]int{"amount": 5}), testkit.Call("c2", "transfer_funds", map[string]int{"amount": 7})}
	b := &heldBuilder{testBuilder: &testBuilder{m: testkit.Script(calls), tools: agent.ToolList{transfer}}}
	h := newHost(t, memory.New(nil), b, "host-a", time.Minute)
	res, err := h.Start(ctx, runs.StartRequest{RunID: "run_1", Config: testConfig(t), Prompt: "pay twice"})
	if err != nil || res.Status != agent.StatusPending || len(res.Pending) != 2 {
		t.Fatalf("start: %+v %v, want halted on two requests", res, err)
	}
	bob := store.Answer{Approve: true, By: tool.PrincipalOf("person:bob")}
	if _, err := h.Answer(ctx, "run_1", res.Pending[0].ID, bob); err != nil {
		t.Fatal(err)
	}
	b.building, b.hold = make(chan struct{}), make(chan struct{})
	resumed := make(chan *agent.Result)
	go func() {
		res, err := h.Resume(ctx, runs.ResumeRequest{RunID: "run_1"})
		if err != nil {
			t.Errorf("resume: %v", err)
		}
		resumed <- res
	}()
	<-b.building
	if _, err := h.Answer(ctx, "run_1", res.Pending[1].ID, bob); err != nil {
		t.Fatal(err)
	}
	close(b.hold)
	if res := <-resumed; res == nil || res.Status != agent.StatusDone || transfer.Count() != 2 {
		t.Fatalf("resumed: %v, transfer ran %d times; want done, both transfers run", status(res), transfer.Count())
	}
}

// status is res's status, or "no result".
func status(res *agent.Result) string {
	if res == nil {
		return "no result"
	}
	return string(res.Status)
}
