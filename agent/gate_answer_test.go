package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// seedGate is the permission gate of seed 002 as a user writes it: it asks
// for every call that is not read-only, and knows nothing about answers.
func seedGate(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
	if ev.Hints == nil || !ev.Hints.ReadOnly {
		return hooks.Ask(tool.Request{Kind: tool.KindApproval, Prompt: "allow " + ev.Name + "?"}), nil
	}
	return nil, nil
}

func answerWith(ok bool, reason string) tool.WaitFunc {
	return func(ctx context.Context, r tool.Request) (tool.Answer, error) {
		return tool.Answer{ID: r.ID, OK: ok, Reason: reason, By: "alice"}, nil
	}
}

// Seed 002: "ask = a pending(...) result, which wait_for / wait_for_ctx
// resolves". The approved gate is satisfied on the retry: the call runs once.
func TestGateAskResolvedByWaitFor(t *testing.T) {
	transfer := &testkit.Counter{Name: "transfer_funds"}
	var asked atomic.Int64
	wait := answerWith(true, "")
	a := newAgent(t, agent.Options{
		Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer_funds", map[string]int{"amount": 5})}), Tools: agent.ToolList{transfer},
		Hooks: (&hooks.Hooks{}).BeforeTool("gate", seedGate),
		WaitFor: func(ctx context.Context, r tool.Request) (tool.Answer, error) {
			asked.Add(1)
			return wait(ctx, r)
		},
	})
	res, err := a.Run(context.Background(), "pay")
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("err %v status %s", err, res.Status)
	}
	if transfer.Count() != 1 || asked.Load() != 1 {
		t.Fatalf("the tool ran %d times after %d requests, want once after one", transfer.Count(), asked.Load())
	}
	rec := res.ToolCalls[0]
	if !rec.Ran || rec.IsError || rec.Decision.Outcome != gate.OutcomeApproved || rec.Decision.By.String() != "person:alice" {
		t.Fatalf("record %+v", rec)
	}
	var gateVoted bool
	for _, v := range rec.Decision.Votes {
		gateVoted = gateVoted || (v.Source.String() == "hook:gate" && v.Decision == "ask")
	}
	if !gateVoted {
		t.Errorf("the gate's ask is not among the votes: %+v", rec.Decision.Votes)
	}
}

// A declined answer: the tool never runs and the model sees the reason.
func TestGateAskDeclinedByWaitFor(t *testing.T) {
	transfer := &testkit.Counter{Name: "transfer_funds"}
	a := newAgent(t, agent.Options{
		Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer_funds", nil)}), Tools: agent.ToolList{transfer},
		Hooks: (&hooks.Hooks{}).BeforeTool("gate", seedGate), WaitFor: answerWith(false, "over budget"),
	})
	res, err := a.Run(context.Background(), "pay")
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("err %v status %s", err, res.Status)
	}
	if transfer.Count() != 0 {
		t.Fatal("a declined call ran")
	}
	msgs := toolMsgs(res)
	if len(msgs) != 1 || !msgs[0].IsError || !strings.Contains(msgs[0].Content, "over budget") {
		t.Errorf("model sees %+v, want the reason", msgs)
	}
	if d := res.ToolCalls[0].Decision; d.Outcome != gate.OutcomeDeclined || d.By.String() != "person:alice" {
		t.Errorf("decision %+v", d)
	}
}

// The run halts on the gate's request; a fresh agent resumes the serialized
// state with an approval, and the call runs exactly once.
func TestGateAskResolvedByResume(t *testing.T) {
	transfer := &testkit.Counter{Name: "transfer_funds"}
	newA := func() *agent.Agent {
		return newAgent(t, agent.Options{
			Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer_funds", map[string]int{"amount": 5})}), Tools: agent.ToolList{transfer},
			Hooks: (&hooks.Hooks{}).BeforeTool("gate", seedGate),
		})
	}
	res, err := newA().Run(context.Background(), "pay")
	if err != nil || res.Status != agent.StatusPending || len(res.Pending) != 1 || transfer.Count() != 0 {
		t.Fatalf("err %v status %s pending %v count %d", err, res.Status, res.Pending, transfer.Count())
	}
	blob, _ := json.Marshal(res.State)
	var st agent.State
	if err := json.Unmarshal(blob, &st); err != nil {
		t.Fatal(err)
	}
	res2, err := newA().Resume(context.Background(), &st, tool.Answer{ID: res.Pending[0].ID, OK: true, By: "alice"})
	if err != nil || res2.Status != agent.StatusDone {
		t.Fatalf("err %v status %s %+v", err, res2.Status, res2.ToolCalls)
	}
	if transfer.Count() != 1 {
		t.Fatalf("the tool ran %d times, want once", transfer.Count())
	}
	if d := res2.ToolCalls[0].Decision; d.Outcome != gate.OutcomeApproved || d.By.String() != "person:alice" {
		t.Errorf("decision %+v", d)
	}
	// Declined on resume: never runs, the model sees the reason.
	res, _ = newA().Run(context.Background(), "pay")
	res3, err := newA().Resume(context.Background(), res.State, tool.Answer{ID: res.Pending[0].ID, OK: false, Reason: "not today"})
	if err != nil || transfer.Count() != 1 {
		t.Fatalf("err %v count %d", err, transfer.Count())
	}
	if msgs := toolMsgs(res3); len(msgs) != 1 || !strings.Contains(msgs[0].Content, "not today") {
		t.Errorf("model sees %+v", msgs)
	}
}

// The approval satisfies only the gate that asked: a later hook that denies
// on the retry, or a policy that denies, still wins.
func TestGateApprovalDoesNotSilenceOthers(t *testing.T) {
	denyOnRetry := func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		if ev.Answer != nil {
			return hooks.Deny("the budget was spent meanwhile"), nil
		}
		return nil, nil
	}
	// The policy is first heard on the retry: the gate's ask comes before it.
	denyPolicy := approval.AuthorizerFunc(func(ctx context.Context, c approval.Call) (approval.Verdict, error) {
		return approval.Verdict{Decision: approval.Deny, Reason: "frozen account", By: tool.Principal{Kind: "rule", Name: "freeze"}}, nil
	})
	for _, tc := range []struct {
		name   string
		hooks  *hooks.Hooks
		az     []approval.Authorizer
		by     string
		reason string
	}{
		{"later hook", (&hooks.Hooks{}).BeforeTool("gate", seedGate).BeforeTool("budget", denyOnRetry), nil, "hook:budget", "budget was spent"},
		{"policy", (&hooks.Hooks{}).BeforeTool("gate", seedGate), []approval.Authorizer{denyPolicy}, "rule:freeze", "frozen account"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			transfer := &testkit.Counter{Name: "transfer_funds"}
			a := newAgent(t, agent.Options{
				Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer_funds", nil)}), Tools: agent.ToolList{transfer},
				Hooks: tc.hooks, Authorizers: tc.az, WaitFor: answerWith(true, ""),
			})
			res, err := a.Run(context.Background(), "pay")
			if err != nil {
				t.Fatal(err)
			}
			if transfer.Count() != 0 {
				t.Fatal("a denied call ran")
			}
			rec := res.ToolCalls[0]
			if rec.Decision.Outcome != gate.OutcomeDenied || rec.Decision.By.String() != tc.by || !strings.Contains(rec.Output, tc.reason) {
				t.Errorf("record %+v", rec)
			}
		})
	}
}

// An approval covers the arguments the gate asked about, no others: when the
// arguments the gate is shown differ on the retry, the call does not run.
func TestGateApprovalForOtherArguments(t *testing.T) {
	t.Run("resume", func(t *testing.T) {
		transfer := &testkit.Counter{Name: "transfer_funds"}
		newA := func() *agent.Agent {
			return newAgent(t, agent.Options{
				Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer_funds", map[string]int{"amount": 5})}), Tools: agent.ToolList{transfer},
				Hooks: (&hooks.Hooks{}).BeforeTool("gate", seedGate),
			})
		}
		res, _ := newA().Run(context.Background(), "pay")
		// The stored call was changed after the request was raised.
		blob, _ := json.Marshal(res.State)
		var st agent.State
		if err := json.Unmarshal([]byte(strings.ReplaceAll(string(blob), `{"amount":5}`, `{"amount":5000}`)), &st); err != nil {
			t.Fatal(err)
		}
		res2, err := newA().Resume(context.Background(), &st, tool.Answer{ID: res.Pending[0].ID, OK: true})
		if err != nil {
			t.Fatal(err)
		}
		if transfer.Count() != 0 {
			t.Fatalf("the call ran with arguments nobody approved: %v", transfer.Args())
		}
		rec := res2.ToolCalls[0]
		if rec.Decision.Outcome != gate.OutcomeDenied || !strings.Contains(rec.Output, "other arguments") {
			t.Errorf("record %+v", rec)
		}
	})
	t.Run("rewritten before the gate", func(t *testing.T) {
		transfer := &testkit.Counter{Name: "transfer_funds"}
		var n atomic.Int64
		stamp := func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
			return hooks.Rewrite(json.RawMessage(fmt.Sprintf(`{"amount":%d}`, 5*n.Add(1)))), nil
		}
		a := newAgent(t, agent.Options{
			Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer_funds", nil)}), Tools: agent.ToolList{transfer},
			Hooks: (&hooks.Hooks{}).BeforeTool("stamp", stamp).BeforeTool("gate", seedGate), WaitFor: answerWith(true, ""),
		})
		res, err := a.Run(context.Background(), "pay")
		if err != nil {
			t.Fatal(err)
		}
		if transfer.Count() != 0 || !strings.Contains(res.ToolCalls[0].Output, "other arguments") {
			t.Fatalf("count %d record %+v", transfer.Count(), res.ToolCalls[0])
		}
	})
}

// The gate's approval answers the gate only: a request raised by another
// hook on the retry is a second request, and the call does not run.
func TestGateApprovalDoesNotAnswerAnotherHook(t *testing.T) {
	transfer := &testkit.Counter{Name: "transfer_funds"}
	second := func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		if ev.Answer != nil {
			return hooks.Ask(tool.Request{Kind: tool.KindApproval, Prompt: "and the fee?"}), nil
		}
		return nil, nil
	}
	a := newAgent(t, agent.Options{
		Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer_funds", nil)}), Tools: agent.ToolList{transfer},
		Hooks: (&hooks.Hooks{}).BeforeTool("gate", seedGate).BeforeTool("fee", second), WaitFor: answerWith(true, ""),
	})
	res, err := a.Run(context.Background(), "pay")
	if err != nil {
		t.Fatal(err)
	}
	if transfer.Count() != 0 || !strings.Contains(res.ToolCalls[0].Output, "second pending") {
		t.Fatalf("count %d record %+v", transfer.Count(), res.ToolCalls[0])
	}
}

// A person who approves a hook's ask with edited arguments (the terminal's
// "edit", the server's editedArgs) saw the call run with the model's
// arguments instead, recorded as approved by them. An edit no hook applied
// now stops the call; a hook that applies the answer's arguments itself
// still may. And the request shows the person what they decide on: the
// tool, the call and its arguments, with their digest.
func TestHookAskEditIsAppliedOrRefused(t *testing.T) {
	edited := json.RawMessage(`{"amount":1}`)
	applying := func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		if ev.Answer != nil && len(ev.Answer.Data) > 0 {
			return hooks.Rewrite(ev.Answer.Data), nil
		}
		return seedGate(ctx, ev)
	}
	for _, tc := range []struct {
		name string
		gate hooks.BeforeToolFunc
		want []string // the arguments the tool ran with
	}{
		{"no hook applies the edit", seedGate, nil},
		{"the asking hook applies it", applying, []string{`{"amount":1}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			transfer := &testkit.Counter{Name: "transfer_funds"}
			var shown approval.RequestData
			a := newAgent(t, agent.Options{
				Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer_funds", map[string]int{"amount": 5})}), Tools: agent.ToolList{transfer},
				Hooks: (&hooks.Hooks{}).BeforeTool("gate", tc.gate),
				WaitFor: func(ctx context.Context, r tool.Request) (tool.Answer, error) {
					d, err := approval.ParseRequestData(r)
					if err != nil {
						t.Errorf("the hook's request does not say what it is about: %v", err)
					}
					shown = d
					return tool.Answer{ID: r.ID, OK: true, Data: edited, By: "alice"}, nil
				},
			})
			res, err := a.Run(context.Background(), "pay")
			if err != nil || res.Status != agent.StatusDone {
				t.Fatalf("err %v status %s", err, res.Status)
			}
			if got := transfer.Args(); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("the tool ran with %v, want %v", got, tc.want)
			}
			if shown.Tool != "transfer_funds" || shown.CallID != "c1" || string(shown.Args) != `{"amount":5}` || shown.Digest != approval.Digest(json.RawMessage(`{"amount":5}`)) || shown.By.String() != "hook:gate" {
				t.Errorf("the request showed %+v", shown)
			}
			if rec := res.ToolCalls[0]; tc.want == nil && (rec.Ran || rec.Decision.Outcome == gate.OutcomeApproved) {
				t.Errorf("record %+v", rec.Decision)
			}
		})
	}
}
