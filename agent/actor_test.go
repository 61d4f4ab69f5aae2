package agent_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/tool"
)

// An answer given by an administrator for someone keeps both in the
// decision record: By is the person the answer is for, Actor who gave it,
// on the decision and on the answer's vote, whether it approves or declines.
func TestAnswerActorKeptInDecision(t *testing.T) {
	alice := tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}
	root := tool.Principal{Kind: tool.PrincipalPerson, Name: "root"}
	for _, ok := range []bool{true, false} {
		transfer := &testkit.Counter{Name: "transfer_funds"}
		var logs bytes.Buffer
		a := newAgent(t, agent.Options{
			Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
			Model:  testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer_funds", map[string]int{"amount": 5})}), Tools: agent.ToolList{transfer},
			Hooks: (&hooks.Hooks{}).BeforeTool("gate", seedGate),
			WaitFor: func(ctx context.Context, r tool.Request) (tool.Answer, error) {
				return tool.Answer{ID: r.ID, OK: ok, Reason: "on call", Principal: alice, Actor: root}, nil
			},
		})
		res, err := a.Run(context.Background(), "pay")
		if err != nil || res.Status != agent.StatusDone || len(res.ToolCalls) != 1 {
			t.Fatalf("ok=%v: err %v status %s", ok, err, res.Status)
		}
		d := res.ToolCalls[0].Decision
		want := gate.OutcomeApproved
		if !ok {
			want = gate.OutcomeDeclined
		}
		if d.Outcome != want || d.By != alice || d.Actor != root {
			t.Errorf("ok=%v: %s by %+v actor %+v; want %s by alice, actor root", ok, d.Outcome, d.By, d.Actor, want)
		}
		var answered bool
		for _, v := range d.Votes {
			if v.Source == alice {
				answered = true
				if v.Actor != root {
					t.Errorf("ok=%v: alice's vote %+v has no actor root", ok, v)
				}
			} else if !v.Actor.IsZero() {
				t.Errorf("ok=%v: vote %+v of another source has an actor", ok, v)
			}
		}
		if !answered {
			t.Errorf("ok=%v: no vote of alice in %+v", ok, d.Votes)
		}
		if !strings.Contains(logs.String(), `"by":"person:alice","argsDigest"`) || !strings.Contains(logs.String(), `"actor":"person:root"`) {
			t.Errorf("ok=%v: the decision's log names no actor:\n%s", ok, logs.String())
		}
	}
}

// A Permission hook answers as itself: an actor it names is dropped.
func TestPermissionHookCannotNameActor(t *testing.T) {
	pol, err := policy.NewPolicy(policy.PolicySpec{Name: "t", Rules: []policy.Rule{{ID: "ask", Tools: []string{"transfer_funds"}, Decision: approval.Ask}}})
	if err != nil {
		t.Fatal(err)
	}
	a := newAgent(t, agent.Options{
		Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer_funds", map[string]int{"amount": 5})}), Tools: agent.ToolList{&testkit.Counter{Name: "transfer_funds"}},
		Authorizers: []approval.Authorizer{pol},
		Hooks: (&hooks.Hooks{}).Permission("auto", func(ctx context.Context, ev *hooks.PermissionEvent) (*tool.Answer, error) {
			return &tool.Answer{OK: true, By: "ceo", Principal: tool.Principal{Kind: tool.PrincipalPerson, Name: "ceo"}, Actor: tool.Principal{Kind: tool.PrincipalPerson, Name: "ceo"}}, nil
		}),
	})
	res, err := a.Run(context.Background(), "pay")
	if err != nil || len(res.ToolCalls) != 1 {
		t.Fatalf("err %v, %d calls", err, len(res.ToolCalls))
	}
	d := res.ToolCalls[0].Decision
	if d.By != (tool.Principal{Kind: tool.PrincipalHook, Name: "auto"}) || !d.Actor.IsZero() {
		t.Errorf("decided by %+v actor %+v; want hook:auto and no actor", d.By, d.Actor)
	}
}
