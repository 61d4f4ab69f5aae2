package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// A state written before principals were typed (version 2: who voted as
// text) is still resumed, and what the resume records is typed.
func TestResumeVersion2StateWithTextPrincipals(t *testing.T) {
	files := &testkit.Counter{Name: "file_op", Schema: `{"type":"object"}`}
	ask := approval.AuthorizerFunc(func(ctx context.Context, c approval.Call) (approval.Verdict, error) {
		return approval.Verdict{Decision: approval.Ask, Reason: "look first", By: tool.Principal{Kind: tool.PrincipalRule, Name: "ask"}}, nil
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
	if got := st.Waiting()[0].Pending.Votes[0].Source; got != (tool.Principal{Kind: tool.PrincipalRule, Name: "ask"}) {
		t.Fatalf("vote read from text as %+v", got)
	}
	res2, err := newA().Resume(context.Background(), &st, tool.Answer{ID: res.Pending[0].ID, OK: true, By: "alice"})
	if err != nil || res2.Status != agent.StatusDone {
		t.Fatalf("%v %+v", err, res2)
	}
	d := res2.ToolCalls[0].Decision
	want := gate.Decision{Outcome: gate.OutcomeApproved, By: tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}, Votes: []tool.Vote{
		{Source: tool.Principal{Kind: tool.PrincipalRule, Name: "ask"}, Decision: "ask", Reason: "look first"},
		{Source: tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}, Decision: "allow"},
	}}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("decision (-want +got):\n%s", diff)
	}
	if files.Count() != 1 {
		t.Errorf("the tool ran %d times, want 1", files.Count())
	}
}

// A State is read only in a version this package knows, and looked into only
// through its methods, which hand out copies.
func TestStateEncodingAndAccessors(t *testing.T) {
	for _, bad := range []string{`{"runId":"r"}`, `{"version":99,"runId":"r"}`} {
		var st agent.State
		if err := json.Unmarshal([]byte(bad), &st); !errors.Is(err, agent.ErrStateVersion) {
			t.Errorf("%s: err %v, want ErrStateVersion", bad, err)
		}
	}
	var st agent.State
	if err := json.Unmarshal([]byte(`[1]`), &st); err == nil {
		t.Error("an array decoded as a state")
	}
	if _, err := newAgent(t, agent.Options{Model: testkit.Script(nil)}).Resume(context.Background(), &agent.State{}); !errors.Is(err, agent.ErrStateVersion) {
		t.Errorf("resume of the zero State: %v, want ErrStateVersion", err)
	}

	a := newAgent(t, agent.Options{Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "file_op", map[string]string{"op": "x"})}),
		Tools: agent.ToolList{&testkit.Counter{Name: "file_op", Schema: `{"type":"object"}`}}, Authorizers: []approval.Authorizer{askPolicy}})
	res, err := a.Run(context.Background(), "go", agent.WithRunID("run_s"))
	if err != nil || res.Status != agent.StatusPending {
		t.Fatalf("%v %+v", err, res)
	}
	s := res.State
	if s.RunID() != "run_s" || agent.StateVersionOf(s) != agent.StateVersion || agent.StateTurn(s) != 1 || agent.StateSeq(s) == 0 {
		t.Errorf("run %q version %d turn %d seq %d", s.RunID(), agent.StateVersionOf(s), agent.StateTurn(s), agent.StateSeq(s))
	}
	w := s.Waiting()
	if len(w) != 1 || w[0].Call.ID != "c1" || w[0].Pending.Request.ID != res.Pending[0].ID || w[0].Pending.Digest != approval.Digest(json.RawMessage(`{"op":"x"}`)) {
		t.Fatalf("waiting %+v", w)
	}
	msgs := s.Messages()
	msgs[0].Content = "changed"
	if s.Messages()[0].Content == "changed" {
		t.Error("Messages hands out the state's own slice")
	}
	w[0].Pending.Votes[0].Reason = "changed"
	if s.Waiting()[0].Pending.Votes[0].Reason == "changed" {
		t.Error("Waiting hands out the state's own votes")
	}
	b, _ := json.Marshal(*s) // a State value encodes like a pointer
	var back agent.State
	if err := json.Unmarshal(b, &back); err != nil || back.RunID() != "run_s" || len(back.Waiting()) != 1 {
		t.Errorf("round trip through %s: %v", b, err)
	}
}
