package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// A host answering for a person by name (Answer{By: "bench"}) is recorded as
// that person; the name is never parsed ("flag:x" is a person so named); a
// typed Principal is recorded as itself.
func TestAnswerByNameIsAPerson(t *testing.T) {
	flag := tool.Principal{Kind: tool.PrincipalFlag, Name: "--approve=yes"}
	for _, tc := range []struct {
		ans  tool.Answer
		want tool.Principal
	}{
		{tool.Answer{OK: true, By: "bench"}, tool.Principal{Kind: tool.PrincipalPerson, Name: "bench"}},
		{tool.Answer{OK: true, By: "flag:x"}, tool.Principal{Kind: tool.PrincipalPerson, Name: "flag:x"}},
		{tool.Answer{OK: true, Principal: flag}, flag},
		{tool.Answer{OK: true, By: "--approve=yes", Principal: flag}, flag},
		{tool.Answer{OK: false, By: "bob", Reason: "no"}, tool.Principal{Kind: tool.PrincipalPerson, Name: "bob"}},
	} {
		transfer := &testkit.Counter{Name: "transfer_funds"}
		m := testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer_funds", map[string]int{"amount": 5})})
		a := newAgent(t, agent.Options{Model: m, Tools: agent.ToolList{transfer}, Hooks: (&hooks.Hooks{}).BeforeTool("ask", askTransfers)})
		res, err := a.Run(context.Background(), "pay")
		if err != nil || len(res.Pending) != 1 {
			t.Fatalf("run: %v %+v", err, res)
		}
		ans := tc.ans
		ans.ID = res.Pending[0].ID
		out, err := a.Resume(context.Background(), res.State, ans)
		if err != nil {
			t.Fatalf("%+v: %v", tc.ans, err)
		}
		d := out.ToolCalls[0].Decision
		if d.By != tc.want {
			t.Errorf("%+v: decision by %+v, want %+v", tc.ans, d.By, tc.want)
		}
		if n := len(d.Votes); n == 0 || d.Votes[n-1].Source != tc.want {
			t.Errorf("%+v: votes %+v, want the last from %+v", tc.ans, d.Votes, tc.want)
		}
		if ran := transfer.Count() == 1; ran != tc.ans.OK {
			t.Errorf("%+v: the call ran %d times", tc.ans, transfer.Count())
		}
	}
}

// An answer that names a person in By and another principal in Principal is
// refused before anything runs: by Resume with ErrInvalidAnswer (the state
// can then be answered properly), and from WaitFor as a declined call.
func TestAnswerWithTwoAnswerersRefused(t *testing.T) {
	flag := tool.Principal{Kind: tool.PrincipalFlag, Name: "--approve=yes"}
	transfer := &testkit.Counter{Name: "transfer_funds"}
	m := testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer_funds", map[string]int{"amount": 5})})
	a := newAgent(t, agent.Options{Model: m, Tools: agent.ToolList{transfer}, Hooks: (&hooks.Hooks{}).BeforeTool("ask", askTransfers)})
	res, err := a.Run(context.Background(), "pay")
	if err != nil || len(res.Pending) != 1 {
		t.Fatalf("run: %v %+v", err, res)
	}
	id := res.Pending[0].ID
	_, err = a.Resume(context.Background(), res.State, tool.Answer{ID: id, OK: true, By: "alice", Principal: flag})
	if !errors.Is(err, agent.ErrInvalidAnswer) || !strings.Contains(err.Error(), "differ") {
		t.Fatalf("resume with by alice and principal %s: err %v, want ErrInvalidAnswer saying they differ", flag, err)
	}
	if transfer.Count() != 0 {
		t.Fatalf("the call ran %d times on a refused answer", transfer.Count())
	}
	out, err := a.Resume(context.Background(), res.State, tool.Answer{ID: id, OK: true, By: "alice"})
	if err != nil || transfer.Count() != 1 || out.ToolCalls[0].Decision.By.String() != "person:alice" {
		t.Fatalf("resume after the refusal: err %v, ran %d, %+v", err, transfer.Count(), out)
	}

	waited := &testkit.Counter{Name: "transfer_funds"}
	m = testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer_funds", map[string]int{"amount": 5})})
	a = newAgent(t, agent.Options{Model: m, Tools: agent.ToolList{waited}, Hooks: (&hooks.Hooks{}).BeforeTool("ask", askTransfers),
		WaitFor: func(ctx context.Context, req tool.Request) (tool.Answer, error) {
			return tool.Answer{ID: req.ID, OK: true, By: "alice", Principal: flag}, nil
		}})
	res, err = a.Run(context.Background(), "pay")
	if err != nil || len(res.ToolCalls) != 1 {
		t.Fatalf("run with WaitFor: %v %+v", err, res)
	}
	if d := res.ToolCalls[0].Decision; d.Outcome != gate.OutcomeDeclined || d.By != approval.Runtime || waited.Count() != 0 {
		t.Fatalf("WaitFor answer with two answerers: decision %+v, ran %d; want declined by the runtime, not run", d, waited.Count())
	}
}
