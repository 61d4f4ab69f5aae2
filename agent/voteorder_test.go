package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/tool"
)

// After an approval the person's vote came first, before the rule that had
// asked. Votes are now in the order they were heard: the source that asked,
// then the answer, then whoever is heard after it; with WaitFor and with a
// halt and a resume alike.
func TestVotesAfterAnAnswerAreInHeardOrder(t *testing.T) {
	const pol = `
rules:
  - id: review-writes
    tool: write
    decision: ask
    reason: writes are reviewed
  - id: rest
    decision: allow
`
	p, _, err := policy.ParsePolicy("p.yaml", strings.NewReader(pol))
	if err != nil {
		t.Fatal(err)
	}
	allow := func(context.Context, *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		return hooks.Allow("fine"), nil
	}
	h := (&hooks.Hooks{}).
		BeforeTool("first", allow).
		BeforeTool("gate", func(_ context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
			if ev.Name == "gated" {
				return hooks.Ask(tool.Request{Kind: tool.KindApproval, Prompt: "gated?"}), nil
			}
			return nil, nil
		}).
		BeforeTool("last", allow)
	bob := tool.PrincipalOf("bob")
	opts := func(wait tool.WaitFunc) agent.Options {
		return agent.Options{
			Model: testkit.Script([]model.FuncCall{testkit.Call("w", "write", nil), testkit.Call("g", "gated", nil)}),
			Tools: agent.ToolList{&testkit.Counter{Name: "write"}, &testkit.Counter{Name: "gated"}},
			Hooks: h, Authorizers: []approval.Authorizer{p}, WaitFor: wait, MaxParallel: 1,
		}
	}
	votes := func(res *agent.Result) map[string]string {
		out := map[string]string{}
		for _, rec := range res.ToolCalls {
			var vs []string
			for _, v := range rec.Decision.Votes {
				vs = append(vs, fmt.Sprintf("%s %s", v.Source, v.Decision))
			}
			out[rec.ID] = strings.Join(vs, ", ")
		}
		return out
	}
	want := map[string]string{
		"w": "hook:first allow, hook:last allow, rule:review-writes ask, person:bob allow",
		"g": "hook:first allow, hook:gate ask, person:bob allow, hook:last allow, rule:rest allow",
	}
	check := func(how string, res *agent.Result) {
		t.Helper()
		got := votes(res)
		for id, w := range want {
			if got[id] != w {
				t.Errorf("%s: votes of %s:\n got  %s\n want %s", how, id, got[id], w)
			}
		}
	}

	res, err := newAgent(t, opts(func(_ context.Context, req tool.Request) (tool.Answer, error) {
		return tool.Answer{ID: req.ID, OK: true, Principal: bob}, nil
	})).Run(context.Background(), "x")
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("WaitFor: %v %v", res.Status, err)
	}
	check("WaitFor", res)

	a := newAgent(t, opts(nil))
	res, err = a.Run(context.Background(), "x")
	if err != nil || res.Status != agent.StatusPending {
		t.Fatalf("halt: %v %v", res.Status, err)
	}
	var answers []tool.Answer
	for _, q := range res.Pending {
		answers = append(answers, tool.Answer{ID: q.ID, OK: true, Principal: bob})
	}
	res, err = a.Resume(context.Background(), res.State, answers...)
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("resume: %v %v", res.Status, err)
	}
	check("resume", res)
}
