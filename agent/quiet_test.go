package agent_test

import (
	"context"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// Run builds no event but the last, yet numbers the events it skips as
// Stream does, so that a halted state and the checkpoints go on from the
// same sequence number whether the run was read or not (with a model that
// does not stream, both see the same events).
func TestRunNumbersEventsAsStream(t *testing.T) {
	reporting, err := tool.New("reporting", "", func(ctx context.Context, _ struct{}) (string, error) {
		tool.InvocationFrom(ctx).Progress(tool.Progress{Progress: 1, Total: 2})
		tool.InvocationFrom(ctx).Notice(tool.Notice{Kind: "restart", Message: "restarted"})
		tool.InvocationFrom(ctx).Progress(tool.Progress{Progress: 2, Total: 2})
		return "ok", nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	gated := &testkit.Counter{Name: "gated"}
	h := &hooks.Hooks{}
	h.BeforeTool("gate", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		if ev.Name == "gated" {
			return hooks.Ask(tool.Request{Prompt: "may I?"}), nil
		}
		return nil, nil
	})
	newRun := func(seqs *[]int64) *agent.Agent {
		return newAgent(t, agent.Options{
			Model: testkit.Script(
				[]model.FuncCall{testkit.Call("c1", "reporting", nil), testkit.Call("c2", "nope", nil)},
				[]model.FuncCall{testkit.Call("c3", "reporting", nil), testkit.Call("c4", "gated", nil)},
			),
			Tools: agent.ToolList{reporting, gated}, Hooks: h, MaxParallel: 1,
			Checkpoint: func(_ context.Context, c agent.Checkpoint) error {
				*seqs = append(*seqs, c.Seq)
				return nil
			},
		})
	}
	var runSeqs, streamSeqs []int64
	res, err := newRun(&runSeqs).Run(context.Background(), "go")
	if err != nil || res.Status != agent.StatusPending {
		t.Fatalf("Run: %v %+v", err, res)
	}
	var events int64
	var str *agent.Result
	for ev, err := range newRun(&streamSeqs).Stream(context.Background(), "go") {
		if err != nil {
			t.Fatal(err)
		}
		events++
		if ev.Seq != events {
			t.Fatalf("event %d has number %d", events, ev.Seq)
		}
		str = ev.Result
	}
	if got, want := agent.StateSeq(res.State), agent.StateSeq(str.State); got != want || want != events {
		t.Fatalf("Run's halted state goes on from event %d, Stream's from %d (%d events)", got, want, events)
	}
	if len(runSeqs) != len(streamSeqs) || len(runSeqs) == 0 {
		t.Fatalf("checkpoints at %v (Run), %v (Stream)", runSeqs, streamSeqs)
	}
	for i := range runSeqs {
		if runSeqs[i] != streamSeqs[i] {
			t.Fatalf("checkpoints at %v (Run), %v (Stream)", runSeqs, streamSeqs)
		}
	}
}
