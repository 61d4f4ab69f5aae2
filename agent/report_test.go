package agent_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// A running tool's progress and notices become events of its call, between
// its decision and its result; the model does not see them.
func TestProgressAndNoticeEvents(t *testing.T) {
	slow, err := tool.New("slow", "reports as it goes", func(ctx context.Context, _ struct{}) (tool.Result, error) {
		tool.InvocationFrom(ctx).Progress(tool.Progress{Progress: 1, Total: 2, Message: "half"})
		tool.InvocationFrom(ctx).Notice(tool.Notice{Kind: "restart", Source: "mcp:x", Message: "restarted"})
		tool.InvocationFrom(ctx).Progress(tool.Progress{Progress: 2, Total: 2})
		return tool.Result{Output: "done"}, nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := newAgent(t, agent.Options{Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "slow", nil)}), Tools: agent.ToolList{slow}})
	var kinds []agent.EventKind
	var progress []tool.Progress
	var notices []tool.Notice
	for ev, err := range a.Stream(t.Context(), "go") {
		if err != nil {
			t.Fatal(err)
		}
		if ev.CallID != "c1" {
			continue
		}
		kinds = append(kinds, ev.Kind)
		if ev.Progress != nil {
			progress = append(progress, *ev.Progress)
		}
		if ev.Notice != nil {
			notices = append(notices, *ev.Notice)
		}
	}
	want := []agent.EventKind{agent.EventToolCall, agent.EventDecision, agent.EventProgress, agent.EventNotice, agent.EventProgress, agent.EventToolResult}
	if !slices.Equal(kinds, want) {
		t.Fatalf("events of the call %v, want %v", kinds, want)
	}
	if diff := cmp.Diff([]tool.Progress{{Progress: 1, Total: 2, Message: "half"}, {Progress: 2, Total: 2}}, progress); diff != "" {
		t.Fatalf("progress (-want +got):\n%s", diff)
	}
	if len(notices) != 1 || notices[0].Source != "mcp:x" || notices[0].Kind != "restart" {
		t.Fatalf("notices %+v", notices)
	}
}

// changing is a RefreshingToolset whose next list is set by the test.
type changing struct {
	mu      sync.Mutex
	tools   []tool.Tool
	next    []tool.Tool
	refresh int
}

func (c *changing) Tools() []tool.Tool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.tools)
}

func (c *changing) Refresh(ctx context.Context) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refresh++
	if c.next == nil {
		return false, errors.New("nothing new")
	}
	c.tools, c.next = c.next, nil
	return true, nil
}

// A RefreshingToolset's change between turns is offered from the next turn
// on: a new tool can be called, and a call to one that vanished is an
// unknown tool.
func TestToolsRefreshBetweenTurns(t *testing.T) {
	a1, b := &testkit.Counter{Name: "a"}, &testkit.Counter{Name: "b"}
	ts := &changing{tools: []tool.Tool{a1}}
	var offered [][]string
	m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		var names []string
		for _, d := range req.Tools {
			names = append(names, d.Name)
		}
		offered = append(offered, names)
		switch testkit.Turn(req) {
		case 0:
			ts.mu.Lock()
			ts.next = []tool.Tool{b} // the list changes while turn 1 runs
			ts.mu.Unlock()
			return model.Reply{ToolCalls: []model.FuncCall{testkit.Call("c1", "a", nil)}}, nil
		case 1:
			return model.Reply{ToolCalls: []model.FuncCall{testkit.Call("c2", "b", nil), testkit.Call("c3", "a", nil)}}, nil
		}
		return model.Reply{Content: "done"}, nil
	})
	res, err := newAgent(t, agent.Options{Model: m, Tools: agent.JoinToolsets(agent.ToolList{}, ts)}).Run(t.Context(), "go")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]string{{"a"}, {"b"}, {"b"}}, offered); diff != "" {
		t.Fatalf("tools offered per turn (-want +got):\n%s", diff)
	}
	if a1.Count() != 1 || b.Count() != 1 {
		t.Fatalf("a ran %d times, b %d; want once each", a1.Count(), b.Count())
	}
	if rec := res.ToolCalls[2]; rec.Name != "a" || rec.Decision.Outcome != gate.OutcomeUnknownTool {
		t.Fatalf("the call to the vanished tool: %+v", rec.Decision)
	}
	if ts.refresh != 3 {
		t.Fatalf("Refresh was called %d times; want before each of the 3 turns", ts.refresh)
	}
}
