package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// A state written before principals were typed (version 2: who voted as
// text) is still resumed, and what the resume records is typed.
func TestResumeVersion2StateWithTextPrincipals(t *testing.T) {
	files := &testkit.Counter{Name: "file_op", Schema: `{"type":"object"}`}
	ask := approval.AuthorizerFunc(func(ctx context.Context, c approval.Call) (approval.Verdict, error) {
		return approval.Verdict{Decision: approval.Ask, Reason: "look first", By: approval.Principal{Kind: approval.PrincipalRule, Name: "ask"}}, nil
	})
	newA := func() *agent.Agent {
		return newAgent(t, agent.Options{Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "file_op", map[string]string{"op": "read"})}),
			Tools: agent.ToolList{files}, Authorizers: []approval.Authorizer{ask}})
	}
	res, err := newA().Run(context.Background(), "x")
	if err != nil || res.Status != agent.StatusPending {
		t.Fatalf("%v %+v", err, res)
	}
	b, err := json.Marshal(res.State)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"source":{"kind":"rule","name":"ask"}`) || !strings.Contains(string(b), `"version":3`) {
		t.Fatalf("state does not hold a typed vote at version 3:\n%s", b)
	}
	old := strings.Replace(string(b), `"source":{"kind":"rule","name":"ask"}`, `"source":"rule:ask"`, 1)
	old = strings.Replace(old, `"version":3`, `"version":2`, 1)
	var st agent.State
	if err := json.Unmarshal([]byte(old), &st); err != nil {
		t.Fatal(err)
	}
	if got := st.Batch[0].Pending.Votes[0].Source; got != (approval.Principal{Kind: approval.PrincipalRule, Name: "ask"}) {
		t.Fatalf("vote read from text as %+v", got)
	}
	res2, err := newA().Resume(context.Background(), &st, tool.Answer{ID: res.Pending[0].ID, OK: true, By: "alice"})
	if err != nil || res2.Status != agent.StatusDone {
		t.Fatalf("%v %+v", err, res2)
	}
	d := res2.ToolCalls[0].Decision
	want := agent.Decision{Outcome: agent.OutcomeApproved, By: approval.Principal{Kind: approval.PrincipalPerson, Name: "alice"}, Votes: []agent.Vote{
		{Source: approval.Principal{Kind: approval.PrincipalPerson, Name: "alice"}, Decision: "allow"},
		{Source: approval.Principal{Kind: approval.PrincipalRule, Name: "ask"}, Decision: "ask", Reason: "look first"},
	}}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("decision (-want +got):\n%s", diff)
	}
	if files.Count() != 1 {
		t.Errorf("the tool ran %d times, want 1", files.Count())
	}
}
