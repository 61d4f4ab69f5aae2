package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// Every event carries the run ID the caller chose and a sequence number that
// grows by one, across a halt and the resume that follows it.
func TestEventsNumberedAcrossResume(t *testing.T) {
	transfer := &testkit.Counter{Name: "transfer_funds"}
	m := testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer_funds", map[string]int{"amount": 5})})
	h := (&hooks.Hooks{}).BeforeTool("ask", askTransfers)
	a := newAgent(t, agent.Options{Model: m, Tools: agent.ToolList{transfer}, Hooks: h})
	var seqs []int64
	var st *agent.State
	for ev, err := range a.Stream(context.Background(), "pay", agent.WithRunID("run_mine")) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.RunID != "run_mine" {
			t.Fatalf("event %s has run ID %q", ev.Kind, ev.RunID)
		}
		seqs = append(seqs, ev.Seq)
		if ev.Kind == agent.EventDone {
			st = ev.Result.State
		}
	}
	if st == nil || st.RunID() != "run_mine" {
		t.Fatalf("state %+v", st)
	}
	last := seqs[len(seqs)-1]
	if agent.StateSeq(st) != last {
		t.Fatalf("the state goes on from the done event's number %d, has %d", last, agent.StateSeq(st))
	}
	for ev, err := range a.ResumeStream(context.Background(), st, tool.Answer{ID: st.PendingRequests()[0].ID, OK: true}) {
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, ev.Seq)
	}
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Fatalf("sequence numbers %v: want 1, 2, 3, ... without gaps", seqs)
		}
	}
	if transfer.Count() != 1 {
		t.Fatalf("transfer ran %d times", transfer.Count())
	}
}

// The same state resumed twice through the library is refused the second
// time, and nothing runs again.
func TestResumeSameStateTwice(t *testing.T) {
	transfer := &testkit.Counter{Name: "transfer_funds"}
	m := testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer_funds", map[string]int{"amount": 5})})
	h := (&hooks.Hooks{}).BeforeTool("ask", askTransfers)
	a := newAgent(t, agent.Options{Model: m, Tools: agent.ToolList{transfer}, Hooks: h})
	res, err := a.Run(context.Background(), "pay")
	if err != nil {
		t.Fatal(err)
	}
	blob, _ := json.Marshal(res.State)
	ans := tool.Answer{ID: res.Pending[0].ID, OK: true, By: "alice"}
	if _, err := a.Resume(context.Background(), res.State, ans); err != nil {
		t.Fatal(err)
	}
	// The same state again, as the same object and as a decoded copy.
	var copied agent.State
	if err := json.Unmarshal(blob, &copied); err != nil {
		t.Fatal(err)
	}
	for _, st := range []*agent.State{res.State, &copied} {
		_, err := a.Resume(context.Background(), st, ans)
		if !errors.Is(err, agent.ErrAlreadyResumed) {
			t.Fatalf("second resume: err %v, want ErrAlreadyResumed", err)
		}
	}
	if transfer.Count() != 1 {
		t.Fatalf("the approved call ran %d times, want 1", transfer.Count())
	}
}

// A run recovered from the checkpoint taken after one of two calls finished
// runs only the other one; a recovered run from the turn checkpoint runs both.
func TestRecoverFromCheckpoint(t *testing.T) {
	a1 := &testkit.Counter{Name: "first"}
	b1 := &testkit.Counter{Name: "second"}
	m := testkit.Script([]model.FuncCall{testkit.Call("c1", "first", nil), testkit.Call("c2", "second", nil)})
	var mu sync.Mutex
	var cps []agent.Checkpoint
	a := newAgent(t, agent.Options{Model: m, Tools: agent.ToolList{a1, b1}, MaxParallel: 1,
		Checkpoint: func(ctx context.Context, cp agent.Checkpoint) error {
			mu.Lock()
			defer mu.Unlock()
			cps = append(cps, cp)
			return nil
		}})
	res, err := a.Run(context.Background(), "go")
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("run: %v %v", res, err)
	}
	var kinds []string
	for _, cp := range cps {
		kinds = append(kinds, string(cp.Kind))
	}
	if want := []string{"turn", "call", "call", "results"}; !slices.Equal(kinds, want) {
		t.Fatalf("checkpoints %v, want %v", kinds, want)
	}
	// The process "died" after the first call's checkpoint: recover from it.
	afterFirst := cps[1].State
	recovered := newAgent(t, agent.Options{Model: m, Tools: agent.ToolList{a1, b1}})
	res2, err := recovered.Resume(context.Background(), afterFirst)
	if err != nil || res2.Status != agent.StatusDone {
		t.Fatalf("recover: %+v %v", res2, err)
	}
	if a1.Count() != 1 || b1.Count() != 2 {
		t.Fatalf("first ran %d times (want 1: it had finished), second %d (want 2)", a1.Count(), b1.Count())
	}
	if got := len(toolMsgs(res2)); got != 2 {
		t.Fatalf("one result per call in the transcript, got %d", got)
	}
	// From the results checkpoint, the next step is a model turn; nothing runs.
	again := newAgent(t, agent.Options{Model: m, Tools: agent.ToolList{a1, b1}})
	res3, err := again.Resume(context.Background(), cps[3].State)
	if err != nil || res3.Status != agent.StatusDone || a1.Count() != 1 || b1.Count() != 2 {
		t.Fatalf("recover after results: %+v %v first %d second %d", res3, err, a1.Count(), b1.Count())
	}
}

// A failing checkpoint ends the run: a run that cannot be recorded does not go on.
func TestCheckpointErrorStopsRun(t *testing.T) {
	c := &testkit.Counter{Name: "first"}
	m := testkit.Script([]model.FuncCall{testkit.Call("c1", "first", nil)})
	a := newAgent(t, agent.Options{Model: m, Tools: agent.ToolList{c},
		Checkpoint: func(ctx context.Context, cp agent.Checkpoint) error { return errors.New("disk full") }})
	res, err := a.Run(context.Background(), "go")
	if err == nil || !strings.Contains(err.Error(), "disk full") || res.Status != agent.StatusError {
		t.Fatalf("res %+v err %v", res, err)
	}
	if c.Count() != 0 {
		t.Fatalf("the call ran %d times after the turn could not be checkpointed", c.Count())
	}
}

// Middleware wraps the run, each turn and each call, outermost first, and
// sees the outcome of each call.
func TestMiddlewareOrder(t *testing.T) {
	c := &testkit.Counter{Name: "first"}
	m := testkit.Script([]model.FuncCall{testkit.Call("c1", "first", nil)})
	var mu sync.Mutex
	var log []string
	add := func(s string) { mu.Lock(); log = append(log, s); mu.Unlock() }
	mw := func(name string) agent.Middleware {
		return agent.Middleware{
			Run: func(next agent.RunHandler) agent.RunHandler {
				return func(ctx context.Context, info *agent.RunInfo) (*agent.Result, error) {
					add(name + " run " + info.RunID)
					res, err := next(ctx, info)
					add(name + " run end " + string(res.Status))
					return res, err
				}
			},
			Turn: func(next agent.TurnHandler) agent.TurnHandler {
				return func(ctx context.Context, ti *agent.TurnInfo) (*model.Response, error) {
					add(fmt.Sprintf("%s turn %d", name, ti.Turn))
					return next(ctx, ti)
				}
			},
			Call: func(next agent.CallHandler) agent.CallHandler {
				return func(ctx context.Context, ci *agent.CallInfo) gate.Ruling {
					add(name + " call " + ci.Call.Name)
					oc := next(ctx, ci)
					add(name + " call end " + string(oc.Record.Decision.Outcome))
					return oc
				}
			},
		}
	}
	a := newAgent(t, agent.Options{Model: m, Tools: agent.ToolList{c}, Middleware: []agent.Middleware{mw("outer"), mw("inner")}})
	if _, err := a.Run(context.Background(), "go", agent.WithRunID("r1")); err != nil {
		t.Fatal(err)
	}
	want := []string{"outer run r1", "inner run r1", "outer turn 1", "inner turn 1", "outer call first", "inner call first",
		"inner call end allowed", "outer call end allowed", "outer turn 2", "inner turn 2", "inner run end done", "outer run end done"}
	if !slices.Equal(log, want) {
		t.Fatalf("middleware saw\n%q\nwant\n%q", log, want)
	}
}

// invokerTool reads its call's identity from its invocation.
type invokerTool struct {
	mu  sync.Mutex
	got []tool.Invocation
}

func (t *invokerTool) Spec() tool.Spec { return tool.Spec{Name: "who"} }
func (t *invokerTool) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	inv := tool.InvocationFrom(ctx)
	if inv.State == nil || inv.Reporter == nil {
		return tool.Error("the invocation must carry the run's state and a reporter"), nil
	}
	t.got = append(t.got, inv)
	return tool.Text("ok"), nil
}

// Tools get the call's identity from their invocation; IDs come from the injected
// source; history comes before the prompt.
func TestInvocationIDsAndHistory(t *testing.T) {
	w := &invokerTool{}
	var seen []model.Message
	calls := 0
	m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		calls++
		if calls == 1 {
			seen = slices.Clone(req.Messages)
			return model.Reply{ToolCalls: []model.FuncCall{{Name: "who"}}}, nil
		}
		return model.Reply{Content: "done"}, nil
	})
	n := 0
	a := newAgent(t, agent.Options{Model: m, Tools: agent.ToolList{w}, SystemPrompt: "sys",
		NewID: func(prefix string) string { n++; return fmt.Sprintf("%s%d", prefix, n) }})
	res, err := a.Run(context.Background(), "now", agent.WithHistory(model.User("before"), model.Message{Role: model.RoleAssistant, Content: "earlier"}))
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("%+v %v", res, err)
	}
	if res.RunID != "run_1" {
		t.Errorf("run ID %q, want run_1 from the injected source", res.RunID)
	}
	var roles []string
	for _, m := range seen {
		roles = append(roles, string(m.Role)+":"+m.Content)
	}
	if want := []string{"system:sys", "user:before", "assistant:earlier", "user:now"}; !slices.Equal(roles, want) {
		t.Errorf("first request %q, want %q", roles, want)
	}
	if len(w.got) != 1 || w.got[0].RunID != "run_1" || w.got[0].CallID != res.ToolCalls[0].ID || w.got[0].Turn != 1 || w.got[0].Answer != nil {
		t.Fatalf("invocations %+v", w.got)
	}
	if res.ToolCalls[0].Output != "ok" {
		t.Fatalf("output %q", res.ToolCalls[0].Output)
	}
}
