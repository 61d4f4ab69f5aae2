package agent_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// C16: a child agent (an agent used as a tool) calling a tool its parent's
// policy denies is denied too; the record names the parent's rule.
func TestC16SubAgentInheritsParentPolicy(t *testing.T) {
	del := &testkit.Counter{Name: "delete_file"}
	read := &testkit.Counter{Name: "read_file"}
	var mu sync.Mutex
	childRecords := map[string]gate.Record{}
	child := newAgent(t, agent.Options{
		ID:    "child",
		Model: testkit.Script([]model.FuncCall{testkit.Call("k1", "delete_file", nil), testkit.Call("k2", "read_file", nil)}),
		Tools: agent.ToolList{del, read},
		OnRecord: func(ctx context.Context, rec gate.Record) { // called from the calls' goroutines
			mu.Lock()
			childRecords[rec.ID] = rec
			mu.Unlock()
		},
	})
	helper, err := child.AsTool("helper", "a sub-agent that tidies files")
	if err != nil {
		t.Fatal(err)
	}
	noDelete := approval.AuthorizerFunc(func(ctx context.Context, c approval.Call) (approval.Verdict, error) {
		if strings.HasPrefix(c.Tool, "delete_") {
			return approval.Verdict{Decision: approval.Deny, Reason: "no deletes anywhere", By: tool.Principal{Kind: "rule", Name: "no-delete"}}, nil
		}
		return approval.Verdict{Decision: approval.Allow, By: tool.Principal{Kind: "rule", Name: "no-delete"}}, nil
	})
	parent := newAgent(t, agent.Options{
		ID:          "parent",
		Model:       testkit.Script([]model.FuncCall{testkit.Call("p1", "helper", map[string]string{"prompt": "tidy up"})}),
		Tools:       agent.ToolList{helper},
		Authorizers: []approval.Authorizer{noDelete},
	})
	res, err := parent.Run(context.Background(), "go")
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("%v %+v", err, res)
	}
	if del.Count() != 0 || read.Count() != 1 {
		t.Fatalf("delete ran %d times, read %d times; want 0 and 1", del.Count(), read.Count())
	}
	if d := childRecords["k1"].Decision; len(childRecords) != 2 || d.Outcome != gate.OutcomeDenied || d.By.String() != "rule:parent/no-delete" {
		t.Fatalf("child records %+v", childRecords)
	}
	if res.ToolCalls[0].IsError || res.ToolCalls[0].Output != "done" {
		t.Errorf("parent's record of the sub-agent: %+v", res.ToolCalls[0])
	}
	// Run on its own, the child is not governed by the parent.
	if _, err := child.Run(context.Background(), "alone"); err != nil || del.Count() != 1 {
		t.Errorf("standalone child: %v, delete count %d", err, del.Count())
	}
}

// A sub-agent asks its pending requests through the parent's WaitFor, and the
// parent's own approval answer does not leak into the child.
func TestSubAgentUsesParentWaitFor(t *testing.T) {
	del := &testkit.Counter{Name: "delete_file"}
	ask := approval.AuthorizerFunc(func(ctx context.Context, c approval.Call) (approval.Verdict, error) {
		return approval.Verdict{Decision: approval.Ask, Reason: "everything is asked", By: tool.Principal{Kind: "rule", Name: "ask-all"}}, nil
	})
	child := newAgent(t, agent.Options{ID: "child", Model: testkit.Script([]model.FuncCall{testkit.Call("k1", "delete_file", nil)}), Tools: agent.ToolList{del}})
	helper, _ := child.AsTool("helper", "")
	var asked []string
	parent := newAgent(t, agent.Options{
		ID: "parent", Model: testkit.Script([]model.FuncCall{testkit.Call("p1", "helper", map[string]string{"prompt": "x"})}),
		Tools: agent.ToolList{helper}, Authorizers: []approval.Authorizer{ask},
		WaitFor: func(ctx context.Context, r tool.Request) (tool.Answer, error) {
			d, _ := approval.ParseRequestData(r)
			asked = append(asked, d.Tool)
			return tool.Answer{ID: r.ID, OK: d.Tool == "helper"}, nil // approve the sub-agent, decline its delete
		},
	})
	res, err := parent.Run(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(asked, ",") != "helper,delete_file" || del.Count() != 0 {
		t.Fatalf("asked %v, delete ran %d", asked, del.Count())
	}
	if res.ToolCalls[0].IsError {
		t.Errorf("the sub-agent itself was approved and finished: %+v", res.ToolCalls[0])
	}
}
