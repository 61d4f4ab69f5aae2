package agent_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// tally counts its calls in the run's tool state and reports the count.
type tally struct{}

func (tally) Spec() tool.Spec { return tool.Spec{Name: "tally", Hints: &tool.Hints{ReadOnly: true}} }

func (tally) Call(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
	s := tool.InvocationFrom(ctx).State
	if s == nil {
		return tool.Error("no run state"), nil
	}
	n := 0
	if v, ok := s.Get("tally"); ok {
		_ = json.Unmarshal(v, &n)
	}
	n++
	s.Set("tally", json.RawMessage(strconv.Itoa(n)))
	return tool.Text(strconv.Itoa(n)), nil
}

// asker pends until answered.
type asker struct{}

func (asker) Spec() tool.Spec { return tool.Spec{Name: "ask", Hints: &tool.Hints{ReadOnly: true}} }

func (asker) Call(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
	if tool.InvocationFrom(ctx).Answer != nil {
		return tool.Text("answered"), nil
	}
	return tool.Pending(tool.Request{ID: "q1", Kind: tool.KindQuestion, Prompt: "?"}), nil
}

// TestToolStateSurvivesHaltAndResume: what a tool keeps in the run's state
// is in the halted state's JSON and is there again for the tool after a
// resume by another agent; another run starts empty.
func TestToolStateSurvivesHaltAndResume(t *testing.T) {
	m := testkit.Script(
		[]model.FuncCall{testkit.Call("c1", "tally", nil), testkit.Call("c2", "tally", nil)},
		[]model.FuncCall{testkit.Call("c3", "ask", nil)},
		[]model.FuncCall{testkit.Call("c4", "tally", nil)},
	)
	tools := agent.ToolList{tally{}, asker{}}
	opts := agent.Options{Model: m, Tools: tools, MaxParallel: 1}
	res, err := newAgent(t, opts).Run(context.Background(), "go")
	if err != nil || res.Status != agent.StatusPending {
		t.Fatalf("run: %v, %+v", err, res)
	}
	blob, err := json.Marshal(res.State)
	if err != nil {
		t.Fatal(err)
	}
	var st agent.State
	if err := json.Unmarshal(blob, &st); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(blob), `"toolState":{"tally":2}`) {
		t.Fatalf("halted state's toolState = %s, want tally 2", blob)
	}
	res, err = newAgent(t, opts).Resume(context.Background(), &st, tool.Answer{ID: "q1", OK: true})
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("resume: %v, %+v", err, res)
	}
	if last := res.ToolCalls[len(res.ToolCalls)-1]; last.Output != "3" {
		t.Fatalf("after the resume tally says %q, want 3", last.Output)
	}
	// A new run keeps its own state.
	res, err = newAgent(t, agent.Options{Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "tally", nil)}), Tools: tools}).Run(context.Background(), "again")
	if err != nil || res.ToolCalls[0].Output != "1" {
		t.Fatalf("a new run: %v, %+v", err, res.ToolCalls)
	}
}
