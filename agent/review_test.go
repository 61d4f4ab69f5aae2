package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// A call whose tool ran is recorded even when an AfterTool hook then fails;
// its output is withheld (the failing hook may have been the redactor).
func TestAfterToolFailureStillRecordsTheCall(t *testing.T) {
	pay := &testkit.Counter{Name: "pay", Output: func(json.RawMessage) tool.Result { return tool.Text("card 4111-1111") }}
	var mu sync.Mutex
	var recs []gate.Record
	h := (&hooks.Hooks{}).AfterTool("redact", func(ctx context.Context, ev *hooks.AfterToolEvent) (*hooks.ToolOverride, error) {
		return nil, errors.New("redaction service down")
	})
	a, _ := agent.New(&agent.Options{Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "pay", nil)}), Tools: agent.ToolList{pay}, Hooks: h,
		OnRecord: func(ctx context.Context, r gate.Record) { mu.Lock(); recs = append(recs, r); mu.Unlock() }})
	var results int
	var res *agent.Result
	var runErr error
	for ev, err := range a.Stream(context.Background(), "x") {
		if ev.Kind == agent.EventToolResult {
			results++
			if strings.Contains(ev.Record.Output, "4111") {
				t.Error("the tool_result event carries the unredacted output")
			}
		}
		if ev.Kind == agent.EventDone {
			res, runErr = ev.Result, err
		}
	}
	var he *hooks.Error
	if !errors.As(runErr, &he) || pay.Count() != 1 {
		t.Fatalf("err %v, pay ran %d", runErr, pay.Count())
	}
	if len(recs) != 1 || !recs[0].Ran || strings.Contains(recs[0].Output, "4111") || results != 1 {
		t.Fatalf("records %+v, tool_result events %d", recs, results)
	}
	if len(res.ToolCalls) != 1 || strings.Contains(res.ToolCalls[0].Output, "4111") {
		t.Fatalf("result records %+v", res.ToolCalls)
	}
}

// A BeforeLLM hook that edits the messages it is given (tool call arguments
// included) changes only what is sent, never the run's transcript.
func TestBeforeLLMEditsDoNotReachTheTranscript(t *testing.T) {
	c := &testkit.Counter{Name: "login"}
	h := (&hooks.Hooks{}).BeforeLLM("scrub", func(ctx context.Context, ev *hooks.BeforeLLMEvent) (*hooks.LLMOverride, error) {
		for i := range ev.Messages {
			for j := range ev.Messages[i].ToolCalls {
				ev.Messages[i].ToolCalls[j].Arguments = json.RawMessage(`{"redacted":true}`)
				ev.Messages[i].ToolCalls[j].Name = "renamed"
			}
		}
		return &hooks.LLMOverride{Messages: ev.Messages}, nil
	})
	a, _ := agent.New(&agent.Options{Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "login", map[string]string{"password": "hunter2"})}), Tools: agent.ToolList{c}, Hooks: h})
	res, err := a.Run(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	tc := res.Transcript[1].ToolCalls[0]
	if tc.Name != "login" || string(tc.Arguments) != `{"password":"hunter2"}` {
		t.Errorf("the transcript was rewritten by a BeforeLLM hook: %s %s", tc.Name, tc.Arguments)
	}
}

// A tool that asks for input gets the answer's Data; its arguments stay as
// they were.
func TestToolQuestionDataIsNotAnEdit(t *testing.T) {
	var got []string
	deploy := tool.Must("deploy", "", func(ctx context.Context, in struct {
		Env string `json:"env"`
	}) (tool.Result, error) {
		ans := tool.InvocationFrom(ctx).Answer
		if ans == nil {
			return tool.Pending(tool.Request{Prompt: "one-time code?"}), nil
		}
		got = append(got, in.Env+" "+string(ans.Data))
		return tool.Text("deployed"), nil
	}, nil)
	a, _ := agent.New(&agent.Options{Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "deploy", map[string]string{"env": "staging"})}), Tools: agent.ToolList{deploy}})
	res, err := a.Run(context.Background(), "x")
	if err != nil || res.Status != agent.StatusPending || res.Pending[0].Kind != tool.KindInput {
		t.Fatalf("%v %+v", err, res)
	}
	res2, err := a.Resume(context.Background(), res.State, tool.Answer{ID: res.Pending[0].ID, OK: true, Data: json.RawMessage(`{"code":"123456"}`)})
	if err != nil || res2.Status != agent.StatusDone {
		t.Fatalf("%v %+v", err, res2)
	}
	if len(got) != 1 || got[0] != `staging {"code":"123456"}` {
		t.Errorf("the tool saw %q", got)
	}
}

// pairListener counts PreToolUse and PostToolUse per call.
type pairListener struct {
	mu     sync.Mutex
	events []string
}

func (l *pairListener) PreToolUse(ctx context.Context, u *hooks.ToolUse) {
	l.mu.Lock()
	if u.Retried {
		l.events = append(l.events, "pre(retried)")
	} else {
		l.events = append(l.events, "pre")
	}
	l.mu.Unlock()
}
func (l *pairListener) PostToolUse(ctx context.Context, u *hooks.ToolUse) {
	l.mu.Lock()
	if u.Pending {
		l.events = append(l.events, "post(pending)")
	} else {
		l.events = append(l.events, "post")
	}
	l.mu.Unlock()
}
func (l *pairListener) OnError(ctx context.Context, u *hooks.ToolUse) {}

// Every PreToolUse has its PostToolUse, also when the tool asks for an
// answer; the start with the answer is marked Retried.
func TestListenerPairsAroundAPendingTool(t *testing.T) {
	ask := tool.Must("ask", "", func(ctx context.Context, _ struct{}) (tool.Result, error) {
		if tool.InvocationFrom(ctx).Answer == nil {
			return tool.Pending(tool.Request{Prompt: "code?"}), nil
		}
		return tool.Text("ok"), nil
	}, nil)
	l := &pairListener{}
	a, _ := agent.New(&agent.Options{Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "ask", nil)}), Tools: agent.ToolList{ask},
		WaitFor: func(ctx context.Context, r tool.Request) (tool.Answer, error) {
			return tool.Answer{ID: r.ID, OK: true}, nil
		}})
	a.SetToolCallListener(l)
	if _, err := a.Run(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(l.events, " "); got != "pre post(pending) pre(retried) post" {
		t.Errorf("listener events %q", got)
	}
}

type panicky struct{}

func (panicky) Authorize(ctx context.Context, c approval.Call) (approval.Verdict, error) {
	panic("policy bug")
}
func (panicky) PreToolUse(ctx context.Context, u *hooks.ToolUse)  { panic("listener bug") }
func (panicky) PostToolUse(ctx context.Context, u *hooks.ToolUse) { panic("listener bug") }
func (panicky) OnError(ctx context.Context, u *hooks.ToolUse)     { panic("listener bug") }

// A panicking authorizer denies (fail closed); a panicking listener or OnRecord
// is logged and the run goes on; nothing crashes the process.
func TestHostCallbackPanicsAreContained(t *testing.T) {
	c := &testkit.Counter{Name: "t"}
	a, _ := agent.New(&agent.Options{Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "t", nil)}), Tools: agent.ToolList{c},
		Authorizers: []approval.Authorizer{panicky{}},
		OnRecord:    func(ctx context.Context, r gate.Record) { panic("sink bug") }})
	res, err := a.Run(context.Background(), "x")
	if err != nil || c.Count() != 0 || res.ToolCalls[0].Decision.Outcome != gate.OutcomeDenied || !strings.Contains(res.ToolCalls[0].Output, "panicked") {
		t.Fatalf("%v count %d %+v", err, c.Count(), res.ToolCalls)
	}
	b, _ := agent.New(&agent.Options{Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "t", nil)}), Tools: agent.ToolList{c}})
	b.SetToolCallListener(panicky{})
	if res, err := b.Run(context.Background(), "x"); err != nil || res.Status != agent.StatusDone || c.Count() != 1 {
		t.Fatalf("%v %+v count %d", err, res, c.Count())
	}
}

// A hook that always asks with one fixed ID: across turns (and across a
// resume) every request of the run still gets its own ID.
func TestRequestIDsAreUniqueAcrossTheRun(t *testing.T) {
	c := &testkit.Counter{Name: "pay"}
	h := (&hooks.Hooks{}).BeforeTool("ask", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		if ev.Answer != nil {
			return nil, nil
		}
		return hooks.Ask(tool.Request{ID: "approve", Prompt: "pay?"}), nil
	})
	newA := func() *agent.Agent {
		a, _ := agent.New(&agent.Options{Model: testkit.Script([]model.FuncCall{testkit.Call("p1", "pay", nil)}, []model.FuncCall{testkit.Call("p2", "pay", nil)}),
			Tools: agent.ToolList{c}, Hooks: h})
		return a
	}
	res, err := newA().Run(context.Background(), "x")
	if err != nil || len(res.Pending) != 1 {
		t.Fatalf("%v %+v", err, res)
	}
	first := res.Pending[0].ID
	blob, _ := json.Marshal(res.State)
	var st agent.State
	json.Unmarshal(blob, &st)
	res2, err := newA().Resume(context.Background(), &st, tool.Answer{ID: first, OK: true})
	if err != nil || res2.Status != agent.StatusPending || len(res2.Pending) != 1 {
		t.Fatalf("%v %+v", err, res2)
	}
	if second := res2.Pending[0].ID; second == first {
		t.Errorf("the second turn's request reuses the ID %q of an answered one", first)
	}
}

// The decision reason of invalid arguments quotes no argument value (records
// and logs never hold them); the model still sees the details.
func TestInvalidReasonHoldsNoValues(t *testing.T) {
	c := &testkit.Counter{Name: "t", Schema: `{"type":"object","properties":{"n":{"type":"integer"}}}`}
	a, _ := agent.New(&agent.Options{Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "t", map[string]string{"n": "SECRET1"})}), Tools: agent.ToolList{c}})
	res, err := a.Run(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	rec := res.ToolCalls[0]
	if rec.Decision.Outcome != gate.OutcomeInvalid || strings.Contains(rec.Decision.Reason, "SECRET1") || !strings.Contains(rec.Output, "SECRET1") {
		t.Errorf("decision %+v output %q", rec.Decision, rec.Output)
	}
}

// A BeforeLLM hook that scribbles on the tool schemas it is shown changes
// nothing that is sent, this turn or later.
func TestBeforeLLMCannotAlterToolSchemasInPlace(t *testing.T) {
	c := &testkit.Counter{Name: "t", Schema: `{"type":"object","properties":{"n":{"type":"integer"}}}`}
	var sent []string
	m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		for _, d := range req.Tools {
			sent = append(sent, string(d.InputSchema))
		}
		if len(sent) == 1 {
			return model.Reply{ToolCalls: []model.FuncCall{testkit.Call("c1", "t", nil)}}, nil
		}
		return model.Reply{Content: "done"}, nil
	})
	h := (&hooks.Hooks{}).BeforeLLM("scribble", func(ctx context.Context, ev *hooks.BeforeLLMEvent) (*hooks.LLMOverride, error) {
		for i := range ev.Tools {
			for j := range ev.Tools[i].InputSchema {
				ev.Tools[i].InputSchema[j] = ' '
			}
		}
		return nil, nil
	})
	a, _ := agent.New(&agent.Options{Model: m, Tools: agent.ToolList{c}, Hooks: h})
	if _, err := a.Run(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	for i, s := range sent {
		if !strings.Contains(s, `"integer"`) {
			t.Errorf("request %d carried an altered schema %q", i+1, s)
		}
	}
}
