package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// askTransfers is a BeforeTool hook that asks a person before transfer_funds runs.
func askTransfers(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
	if ev.Name != "transfer_funds" || ev.Answer != nil {
		return nil, nil
	}
	return hooks.Ask(tool.Request{Kind: tool.KindApproval, Prompt: "transfer " + string(ev.Args) + "?"}), nil
}

// C25 without WaitFor: halt pending, counter 0; the allowed call of the same
// turn ran once and is not run again; approving runs the gated call once.
func TestPendingHaltAndResume(t *testing.T) {
	transfer := &testkit.Counter{Name: "transfer_funds"}
	other := &testkit.Counter{Name: "balance"}
	m := testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer_funds", map[string]int{"amount": 5}), testkit.Call("c2", "balance", nil)})
	h := (&hooks.Hooks{}).BeforeTool("ask", askTransfers)
	a := newAgent(t, agent.Options{Model: m, Tools: agent.ToolList{transfer, other}, Hooks: h})
	res, err := a.Run(context.Background(), "pay")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agent.StatusPending || len(res.Pending) != 1 || transfer.Count() != 0 || other.Count() != 1 {
		t.Fatalf("status %s pending %v transfer %d balance %d", res.Status, res.Pending, transfer.Count(), other.Count())
	}
	if len(toolMsgs(res)) != 0 {
		t.Errorf("a halted turn must not put partial tool results in the transcript: %+v", toolMsgs(res))
	}
	// Serialize and resume with a fresh agent (same tools).
	blob, err := json.Marshal(res.State)
	if err != nil {
		t.Fatal(err)
	}
	var st agent.State
	if err := json.Unmarshal(blob, &st); err != nil {
		t.Fatal(err)
	}
	a2 := newAgent(t, agent.Options{Model: m, Tools: agent.ToolList{transfer, other}, Hooks: h})
	res2, err := a2.Resume(context.Background(), &st, tool.Answer{ID: res.Pending[0].ID, OK: true, By: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if res2.Status != agent.StatusDone || transfer.Count() != 1 || other.Count() != 1 {
		t.Fatalf("after resume: status %s transfer %d balance %d", res2.Status, transfer.Count(), other.Count())
	}
	msgs := toolMsgs(res2)
	if len(msgs) != 2 || msgs[0].ToolCallID != "c1" || msgs[1].ToolCallID != "c2" {
		t.Fatalf("one result per call, in call order: %+v", msgs)
	}
	rec := res2.ToolCalls[0]
	if rec.ID != "c1" || rec.Decision.Outcome != gate.OutcomeApproved || rec.Decision.By.String() != "person:alice" {
		t.Errorf("record %+v", rec.Decision)
	}
}

// C26: a person's deny is enforced by the runtime and the model sees the reason.
func TestDeclineIsEnforced(t *testing.T) {
	transfer := &testkit.Counter{Name: "transfer_funds"}
	h := (&hooks.Hooks{}).BeforeTool("ask", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		// This hook would allow on any answer; the runtime must still enforce a decline.
		if ev.Answer != nil {
			return hooks.Allow("answered"), nil
		}
		return hooks.Ask(tool.Request{Prompt: "ok?"}), nil
	})
	a := newAgent(t, agent.Options{Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer_funds", nil)}), Tools: agent.ToolList{transfer}, Hooks: h})
	res, _ := a.Run(context.Background(), "pay")
	res2, err := a.Resume(context.Background(), res.State, tool.Answer{ID: res.Pending[0].ID, OK: false, Reason: "over budget", By: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	if transfer.Count() != 0 {
		t.Fatal("declined call ran")
	}
	msgs := toolMsgs(res2)
	if len(msgs) != 1 || !msgs[0].IsError || !strings.Contains(msgs[0].Content, "over budget") {
		t.Errorf("model sees %+v, want the person's reason", msgs)
	}
}

// C31: an answer whose id matches nothing is an error; the model is not called
// and the run stays pending.
func TestResumeUnknownAnswer(t *testing.T) {
	transfer := &testkit.Counter{Name: "transfer_funds"}
	var calls atomic.Int64
	base := testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer_funds", nil)})
	m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		calls.Add(1)
		return base(ctx, req)
	})
	a := newAgent(t, agent.Options{Model: m, Tools: agent.ToolList{transfer}, Hooks: (&hooks.Hooks{}).BeforeTool("ask", askTransfers)})
	res, _ := a.Run(context.Background(), "pay")
	before := calls.Load()
	stBefore, _ := json.Marshal(res.State)
	for _, answers := range [][]tool.Answer{
		{{ID: "nope", OK: true}},
		{{ID: res.Pending[0].ID, OK: true}, {ID: res.Pending[0].ID, OK: false}},
	} {
		res2, err := a.Resume(context.Background(), res.State, answers...)
		if !errors.Is(err, agent.ErrUnknownAnswer) && !errors.Is(err, agent.ErrDuplicateAnswer) {
			t.Fatalf("err = %v", err)
		}
		if res2 == nil || res2.Status != agent.StatusPending || len(res2.Pending) != 1 {
			t.Fatalf("result %+v, want still pending", res2)
		}
	}
	stAfter, _ := json.Marshal(res.State)
	if calls.Load() != before || transfer.Count() != 0 || string(stBefore) != string(stAfter) {
		t.Errorf("model calls %d->%d, transfers %d, state changed %v", before, calls.Load(), transfer.Count(), string(stBefore) != string(stAfter))
	}
}

// With WaitFor the call waits, is retried once with the answer, and a second
// pending request (here a question the hook asks again, which an answer does
// not settle as it settles an approval) becomes an error result.
func TestWaitFor(t *testing.T) {
	t.Run("approved", func(t *testing.T) {
		transfer := &testkit.Counter{Name: "transfer_funds"}
		var asked []tool.Request
		a := newAgent(t, agent.Options{
			Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer_funds", nil)}), Tools: agent.ToolList{transfer},
			Hooks: (&hooks.Hooks{}).BeforeTool("ask", askTransfers),
			WaitFor: func(ctx context.Context, r tool.Request) (tool.Answer, error) {
				asked = append(asked, r)
				return tool.Answer{ID: r.ID, OK: true}, nil
			},
		})
		res, err := a.Run(context.Background(), "pay")
		if err != nil || res.Status != agent.StatusDone || transfer.Count() != 1 || len(asked) != 1 {
			t.Fatalf("err %v status %s count %d asked %d", err, res.Status, transfer.Count(), len(asked))
		}
	})
	t.Run("second pending", func(t *testing.T) {
		transfer := &testkit.Counter{Name: "transfer_funds"}
		a := newAgent(t, agent.Options{
			Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer_funds", nil)}), Tools: agent.ToolList{transfer},
			Hooks: (&hooks.Hooks{}).BeforeTool("always-ask", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
				return hooks.Ask(tool.Request{Kind: tool.KindInput, Prompt: "again?"}), nil
			}),
			WaitFor: func(ctx context.Context, r tool.Request) (tool.Answer, error) {
				return tool.Answer{ID: r.ID, OK: true}, nil
			},
		})
		res, err := a.Run(context.Background(), "pay")
		if err != nil || transfer.Count() != 0 || !res.ToolCalls[0].IsError || !strings.Contains(res.ToolCalls[0].Output, "second pending") {
			t.Fatalf("err %v count %d rec %+v", err, transfer.Count(), res.ToolCalls[0])
		}
	})
	t.Run("deadline", func(t *testing.T) {
		transfer := &testkit.Counter{Name: "transfer_funds"}
		a := newAgent(t, agent.Options{
			Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer_funds", nil)}), Tools: agent.ToolList{transfer},
			Hooks: (&hooks.Hooks{}).BeforeTool("ask", askTransfers),
			WaitFor: func(ctx context.Context, r tool.Request) (tool.Answer, error) {
				<-ctx.Done()
				return tool.Answer{}, ctx.Err()
			},
		})
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		res, err := a.Run(ctx, "pay")
		if !errors.Is(err, context.DeadlineExceeded) || res.Status != agent.StatusError || transfer.Count() != 0 {
			t.Fatalf("err %v status %v count %d", err, res.Status, transfer.Count())
		}
	})
}

// An authorization "ask" binds the approval to the arguments' digest; an edit is
// authorized again (C32) and a deny on the edited arguments wins.
func TestAuthorizationAskAndEdit(t *testing.T) {
	files := &testkit.Counter{Name: "file_op", Schema: `{"type":"object","properties":{"op":{"type":"string"},"path":{"type":"string"}},"required":["op","path"]}`}
	policy := approval.AuthorizerFunc(func(ctx context.Context, c approval.Call) (approval.Verdict, error) {
		var a struct{ Op string }
		json.Unmarshal(c.Args, &a)
		switch a.Op {
		case "delete":
			return approval.Verdict{Decision: approval.Deny, Reason: "no deletes", By: tool.Principal{Kind: "rule", Name: "no-delete"}}, nil
		case "read":
			return approval.Verdict{Decision: approval.Ask, Reason: "reads need a look", By: tool.Principal{Kind: "rule", Name: "ask-read"}}, nil
		}
		return approval.Verdict{Decision: approval.Allow, By: tool.Principal{Kind: "rule", Name: "rest"}}, nil
	})
	newA := func() *agent.Agent {
		return newAgent(t, agent.Options{Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "file_op", map[string]string{"op": "read", "path": "a"})}),
			Tools: agent.ToolList{files}, Authorizers: []approval.Authorizer{policy}})
	}
	res, err := newA().Run(context.Background(), "x")
	if err != nil || res.Status != agent.StatusPending {
		t.Fatalf("%v %+v", err, res)
	}
	var data approval.RequestData
	json.Unmarshal(res.Pending[0].Data, &data)
	if data.Tool != "file_op" || data.CallID != "c1" || data.Digest != approval.Digest(json.RawMessage(`{"op":"read","path":"a"}`)) || data.By.String() != "rule:ask-read" {
		t.Errorf("request data %+v", data)
	}
	// The edit turns the read into a delete: authorized again, denied.
	res2, err := newA().Resume(context.Background(), res.State, tool.Answer{ID: res.Pending[0].ID, OK: true, Data: json.RawMessage(`{"op":"delete","path":"a"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if files.Count() != 0 || res2.ToolCalls[0].Decision.Outcome != gate.OutcomeDenied || res2.ToolCalls[0].Decision.By.String() != "rule:no-delete" {
		t.Fatalf("count %d decision %+v", files.Count(), res2.ToolCalls[0].Decision)
	}
	// An edit to allowed arguments runs them, once.
	res3, err := newA().Resume(context.Background(), res.State, tool.Answer{ID: res.Pending[0].ID, OK: true, Data: json.RawMessage(`{"op":"stat","path":"b"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{`{"op":"stat","path":"b"}`}, files.Args()); d != "" || res3.ToolCalls[0].Decision.Outcome != gate.OutcomeApproved {
		t.Fatalf("ran with (-want +got): %s; decision %+v", d, res3.ToolCalls[0].Decision)
	}
	// A plain approval runs the original arguments.
	res4, err := newA().Resume(context.Background(), res.State, tool.Answer{ID: res.Pending[0].ID, OK: true})
	if err != nil || res4.Status != agent.StatusDone || files.Count() != 2 {
		t.Fatalf("%v %+v count %d", err, res4, files.Count())
	}
}

// C43: a BeforeLLM hook's canned response means the model is not called, on
// Run, Stream and Resume alike.
func TestBeforeLLMShortCircuit(t *testing.T) {
	var modelCalls atomic.Int64
	transfer := &testkit.Counter{Name: "transfer_funds"}
	m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		modelCalls.Add(1)
		return model.Reply{ToolCalls: []model.FuncCall{testkit.Call("c1", "transfer_funds", nil)}}, nil
	})
	canned := func(ctx context.Context, ev *hooks.BeforeLLMEvent) (*hooks.LLMOverride, error) {
		if ev.Turn == 1 {
			return nil, nil
		}
		return &hooks.LLMOverride{Response: &model.Response{Message: model.Assistant("canned answer")}}, nil
	}
	h := (&hooks.Hooks{}).BeforeLLM("cache", canned).BeforeTool("ask", askTransfers)
	a := newAgent(t, agent.Options{Model: m, Tools: agent.ToolList{transfer}, Hooks: h})
	res, _ := a.Run(context.Background(), "x")
	if modelCalls.Load() != 1 || res.Status != agent.StatusPending {
		t.Fatalf("calls %d status %s", modelCalls.Load(), res.Status)
	}
	res2, err := a.Resume(context.Background(), res.State, tool.Answer{ID: res.Pending[0].ID, OK: true})
	if err != nil || res2.Text != "canned answer" || modelCalls.Load() != 1 {
		t.Fatalf("resume: %v text %q model calls %d", err, res2.Text, modelCalls.Load())
	}
	// Stream from the start with a hook that always answers: the model is never called.
	always := (&hooks.Hooks{}).BeforeLLM("cache", func(ctx context.Context, ev *hooks.BeforeLLMEvent) (*hooks.LLMOverride, error) {
		return &hooks.LLMOverride{Response: &model.Response{Message: model.Assistant("cached")}}, nil
	})
	b := newAgent(t, agent.Options{Model: m, Hooks: always})
	var text string
	for ev, err := range b.Stream(context.Background(), "x") {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == agent.EventText {
			text += ev.Delta
		}
	}
	if text != "cached" || modelCalls.Load() != 1 {
		t.Errorf("stream text %q, model calls %d", text, modelCalls.Load())
	}
}

// C42 through Stream: the pending event comes before any execution.
func TestStreamPendingBeforeExecution(t *testing.T) {
	transfer := &testkit.Counter{Name: "transfer_funds"}
	a := newAgent(t, agent.Options{Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer_funds", nil)}), Tools: agent.ToolList{transfer}, Hooks: (&hooks.Hooks{}).BeforeTool("ask", askTransfers)})
	var kinds []agent.EventKind
	for ev, err := range a.Stream(context.Background(), "x") {
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, ev.Kind)
		if ev.Kind == agent.EventPending && transfer.Count() != 0 {
			t.Fatal("tool ran before the pending event")
		}
	}
	want := []agent.EventKind{agent.EventUsage, agent.EventToolCall, agent.EventDecision, agent.EventPending, agent.EventDone}
	if d := cmp.Diff(want, kinds); d != "" || transfer.Count() != 0 {
		t.Errorf("events (-want +got):\n%s count %d", d, transfer.Count())
	}
}

// Abandoning the stream early cancels running tools and leaves no goroutine.
func TestStreamAbandonLeavesNoGoroutine(t *testing.T) {
	var started atomic.Int64
	slow := tool.Must("slow", "", func(ctx context.Context, in struct{}) (string, error) {
		started.Add(1)
		<-ctx.Done()
		return "", ctx.Err()
	}, nil)
	before := runtime.NumGoroutine()
	for i := 0; i < 20; i++ {
		a := newAgent(t, agent.Options{Model: testkit.Script([]model.FuncCall{testkit.Call("a", "slow", nil), testkit.Call("b", "slow", nil), testkit.Call("c", "slow", nil)}), Tools: agent.ToolList{slow}})
		// Events are delivered with backpressure: a worker waits until its event
		// is consumed. Break once the last call is allowed, while the first
		// ones have started (a run cancelled before a tool starts starts none).
		for ev := range a.Stream(context.Background(), "x") {
			if ev.Kind == agent.EventDecision && ev.CallID == "c" {
				// Tools run on goroutines of their own: let the first one
				// start (it blocks until the run is abandoned) before breaking.
				for wait := time.Now().Add(2 * time.Second); started.Load() == 0 && time.Now().Before(wait); {
					runtime.Gosched()
				}
				break
			}
		}
	}
	if started.Load() == 0 {
		t.Fatal("no tool ever started; the test proves nothing")
	}
	// What is left once the abandoned calls' goroutines have ended was
	// leaked.
	deadline := time.Now().Add(30 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines before, %d after:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}
