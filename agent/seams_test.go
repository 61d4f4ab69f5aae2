package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/hookrun"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// Every hook of a run finds the run's ID on its context (hooks.RunFrom), and
// a resumed run carries the same ID.
func TestHooksSeeRunID(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	h := (&hooks.Hooks{}).BeforeTool("who", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		info, ok := hooks.RunFrom(ctx)
		if !ok {
			t.Error("no run info on the hook's context")
		}
		mu.Lock()
		seen = append(seen, info.RunID+"/"+info.AgentID)
		mu.Unlock()
		return nil, nil
	})
	a := newAgent(t, agent.Options{
		ID:    "a1",
		Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "t", nil)}),
		Tools: agent.ToolList{&testkit.Counter{Name: "t"}}, Hooks: h,
	})
	res, err := a.Run(t.Context(), "go")
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0] != res.RunID+"/a1" {
		t.Fatalf("hook saw %q, want [%s/a1]", seen, res.RunID)
	}
	if _, ok := hooks.RunFrom(context.Background()); ok {
		t.Fatal("RunFrom found run info on a bare context")
	}
}

// askPolicy asks a person about every call.
var askPolicy = approval.AuthorizerFunc(func(ctx context.Context, c approval.Call) (approval.Verdict, error) {
	return approval.Verdict{Decision: approval.Ask, Reason: "a person decides", By: tool.Principal{Kind: "rule", Name: "ask"}}, nil
})

// A Permission hook answers an approval request before a person is asked:
// its approval runs the call, its decline denies it, its edit is validated
// and authorized again, and the record names the hook as the one who answered.
func TestPermissionHookAnswersBeforeAPerson(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ans     *tool.Answer
		ran     int64
		outcome gate.Outcome
		by      string
		args    string
	}{
		{"approve", &tool.Answer{OK: true, Reason: "fine"}, 1, gate.OutcomeApproved, "hook:gate", `{"n":1}`},
		{"decline", &tool.Answer{OK: false, Reason: "not now"}, 0, gate.OutcomeDeclined, "hook:gate", ""},
		{"edit", &tool.Answer{OK: true, Data: json.RawMessage(`{"n":2}`)}, 1, gate.OutcomeApproved, "hook:gate", `{"n":2}`},
		{"no opinion", nil, 0, gate.OutcomePending, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := &testkit.Counter{Name: "t"}
			var asked []string
			before := 0
			h := (&hooks.Hooks{}).Permission("gate", func(ctx context.Context, ev *hooks.PermissionEvent) (*tool.Answer, error) {
				asked = append(asked, ev.Name+" "+string(ev.Args)+" "+string(ev.Request.Kind))
				return tc.ans, nil
			}).BeforeTool("count", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
				before++
				return nil, nil
			})
			a := newAgent(t, agent.Options{
				Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "t", map[string]int{"n": 1})}),
				Tools: agent.ToolList{tl}, Hooks: h, Authorizers: []approval.Authorizer{askPolicy},
			})
			res, err := a.Run(t.Context(), "go")
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{`t {"n":1} approval`}; !slices.Equal(asked, want) {
				t.Fatalf("hook asked %q, want %q", asked, want)
			}
			if before != 1 { // the hook's answer does not run the call's pipeline again
				t.Fatalf("the BeforeTool hook ran %d times, want once", before)
			}
			if tl.Count() != tc.ran {
				t.Fatalf("tool ran %d times, want %d", tl.Count(), tc.ran)
			}
			if tc.outcome == gate.OutcomePending {
				if res.Status != agent.StatusPending {
					t.Fatalf("status %s, want pending", res.Status)
				}
				return
			}
			rec := res.ToolCalls[0]
			if rec.Decision.Outcome != tc.outcome || rec.Decision.By.String() != tc.by {
				t.Fatalf("decision %+v, want %s by %s", rec.Decision, tc.outcome, tc.by)
			}
			if tc.args != "" && tl.Args()[0] != tc.args {
				t.Fatalf("ran with %s, want %s", tl.Args()[0], tc.args)
			}
		})
	}
}

// The cap on Stop continuations holds for the whole run: a run that halts
// pending after three continuations and is resumed (from its JSON state)
// gets five more, not eight.
func TestStopContinuationsSurviveResume(t *testing.T) {
	var seen []int
	h := (&hooks.Hooks{}).Stop("more", func(ctx context.Context, ev *hooks.StopEvent) (string, error) {
		seen = append(seen, ev.Continuations)
		return "keep going", nil
	})
	m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		if testkit.Turn(req) == 3 {
			return model.Reply{ToolCalls: []model.FuncCall{testkit.Call("c1", "t", nil)}}, nil
		}
		return model.Reply{Content: "done"}, nil
	})
	a := newAgent(t, agent.Options{Model: m, Hooks: h, MaxTurns: 50,
		Tools: agent.ToolList{&testkit.Counter{Name: "t"}}, Authorizers: []approval.Authorizer{askPolicy}})
	res, err := a.Run(t.Context(), "go")
	if err != nil || res.Status != agent.StatusPending {
		t.Fatalf("status %s, err %v; want pending", res.Status, err)
	}
	b, err := json.Marshal(res.State)
	if err != nil {
		t.Fatal(err)
	}
	var st agent.State
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	res, err = a.Resume(t.Context(), &st, tool.Answer{ID: res.Pending[0].ID, OK: true})
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("resume: status %s, err %v; want done", res.Status, err)
	}
	if want := []int{0, 1, 2, 3, 4, 5, 6, 7}; !slices.Equal(seen, want) {
		t.Fatalf("continuations seen %v, want %v", seen, want)
	}
}

// A Stop hook that gives a reason continues the run with it as a user
// message, at most hookrun.MaxStopContinuations times.
func TestStopHookContinues(t *testing.T) {
	var seen []int
	h := (&hooks.Hooks{}).Stop("more", func(ctx context.Context, ev *hooks.StopEvent) (string, error) {
		seen = append(seen, ev.Continuations)
		return "run the tests first", nil
	})
	a := newAgent(t, agent.Options{Model: testkit.Script(), Hooks: h, MaxTurns: 50})
	res, err := a.Run(t.Context(), "go")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agent.StatusDone || res.Turns != hookrun.MaxStopContinuations+1 {
		t.Fatalf("status %s after %d turns, want done after %d", res.Status, res.Turns, hookrun.MaxStopContinuations+1)
	}
	if want := []int{0, 1, 2, 3, 4, 5, 6, 7}; !slices.Equal(seen, want) {
		t.Fatalf("continuations seen %v, want %v", seen, want)
	}
	users := 0
	for _, m := range res.Transcript {
		if m.Role == model.RoleUser && m.Content == "run the tests first" {
			users++
		}
	}
	if users != hookrun.MaxStopContinuations {
		t.Fatalf("%d continuation messages, want %d", users, hookrun.MaxStopContinuations)
	}
}

// A Start hook replaces the prompt, or blocks the run before any model call;
// End hooks see how every run ended, and Pending hooks every request that
// goes pending.
func TestStartEndAndPendingHooks(t *testing.T) {
	var mu sync.Mutex
	var log []string
	add := func(s string) { mu.Lock(); log = append(log, s); mu.Unlock() }
	modelCalls := 0
	m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		modelCalls++
		add("model saw " + req.Messages[len(req.Messages)-1].Content)
		if testkit.Turn(req) == 0 {
			return model.Reply{ToolCalls: []model.FuncCall{testkit.Call("c1", "t", nil)}}, nil
		}
		return model.Reply{Content: "done"}, nil
	})
	h := (&hooks.Hooks{}).
		Start("gate", func(ctx context.Context, ev *hooks.StartEvent) (*hooks.StartOverride, error) {
			add(fmt.Sprintf("start resumed=%v %q", ev.Resumed, ev.Prompt))
			if ev.Prompt == "secret" {
				return &hooks.StartOverride{Block: "prompts may not say secret"}, nil
			}
			return &hooks.StartOverride{Prompt: ev.Prompt + " (be careful)"}, nil
		}).
		End("end", func(ctx context.Context, ev *hooks.EndEvent) error {
			add("end " + ev.Status)
			return nil
		}).
		Pending("notify", func(ctx context.Context, ev *hooks.PendingEvent) error {
			add("pending " + ev.Name + " " + string(ev.Request.Kind))
			return nil
		})
	a := newAgent(t, agent.Options{Model: m, Tools: agent.ToolList{&testkit.Counter{Name: "t"}}, Hooks: h, Authorizers: []approval.Authorizer{askPolicy}})

	res, err := a.Run(t.Context(), "secret")
	if !errors.Is(err, hooks.ErrBlocked) || res.Status != agent.StatusError || modelCalls != 0 {
		t.Fatalf("blocked run: err %v, status %s, %d model calls; want ErrBlocked, error, 0", err, res.Status, modelCalls)
	}
	res, err = a.Run(t.Context(), "tidy")
	if err != nil || res.Status != agent.StatusPending {
		t.Fatalf("run: %v, %s", err, res.Status)
	}
	res, err = a.Resume(t.Context(), res.State, tool.Answer{ID: res.Pending[0].ID, OK: true})
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("resume: %v, %s", err, res.Status)
	}
	want := []string{
		`start resumed=false "secret"`, "end error",
		`start resumed=false "tidy"`, "model saw tidy (be careful)", "pending t approval", "end pending",
		`start resumed=true ""`, "model saw ran t", "end done",
	}
	if diff := cmp.Diff(want, log); diff != "" {
		t.Fatalf("hook order (-want +got):\n%s", diff)
	}
}

type callMark struct{}

// Middleware.Wait wraps the wait for an answer, inside the Call middleware
// (it sees the call's context), in the order the middleware are listed; its
// answer is the one the call gets.
func TestWaitMiddleware(t *testing.T) {
	var mu sync.Mutex
	var order []string
	mark := func(name string) agent.Middleware {
		return agent.Middleware{
			Call: func(next agent.CallHandler) agent.CallHandler {
				return func(ctx context.Context, c *agent.CallInfo) gate.Ruling {
					return next(context.WithValue(ctx, callMark{}, c.Call.ID), c)
				}
			},
			Wait: func(next tool.WaitFunc) tool.WaitFunc {
				return func(ctx context.Context, req tool.Request) (tool.Answer, error) {
					mu.Lock()
					order = append(order, fmt.Sprintf("%s:%v:%s", name, ctx.Value(callMark{}), req.Kind))
					mu.Unlock()
					ans, err := next(ctx, req)
					if name == "outer" {
						ans.By = "outer"
					}
					return ans, err
				}
			},
		}
	}
	counter := &testkit.Counter{Name: "t"}
	a := newAgent(t, agent.Options{
		Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "t", nil)}),
		Tools: agent.ToolList{counter}, Authorizers: []approval.Authorizer{askPolicy},
		WaitFor: func(ctx context.Context, req tool.Request) (tool.Answer, error) {
			return tool.Answer{ID: req.ID, OK: true, By: "alice"}, nil
		},
		Middleware: []agent.Middleware{mark("outer"), mark("inner")},
	})
	res, err := a.Run(t.Context(), "go")
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("%v %+v", err, res)
	}
	if diff := cmp.Diff([]string{"outer:c1:approval", "inner:c1:approval"}, order); diff != "" {
		t.Errorf("wait middleware (-want +got):\n%s", diff)
	}
	if got := res.ToolCalls[0].Decision.By.String(); got != "person:outer" || counter.Count() != 1 {
		t.Errorf("decided by %s, ran %d times; want person:outer, 1", got, counter.Count())
	}
}

// A Wait middleware learns which pending call it waits for (as a halt would
// have returned it), and cannot change the call through it.
func TestWaitMiddlewareSeesThePendingCall(t *testing.T) {
	var seen []*gate.Pending
	mw := agent.Middleware{Wait: func(next tool.WaitFunc) tool.WaitFunc {
		return func(ctx context.Context, req tool.Request) (tool.Answer, error) {
			p, ok := agent.PendingCallFrom(ctx)
			if !ok {
				t.Error("no pending call in the wait's context")
				return next(ctx, req)
			}
			seen = append(seen, p)
			if p.Request.ID != req.ID {
				t.Errorf("pending call's request %q, waiting for %q", p.Request.ID, req.ID)
			}
			p.Digest, p.Votes[0].Decision = "sha256:changed", tool.VoteAllow
			return next(ctx, req)
		}
	}}
	ask := approval.AuthorizerFunc(func(context.Context, approval.Call) (approval.Verdict, error) {
		return approval.Verdict{Decision: approval.Ask, Reason: "check", By: tool.Principal{Kind: tool.PrincipalRule, Name: "asker"}}, nil
	})
	echo := &testkit.Counter{Name: "echo"}
	a := newAgent(t, agent.Options{
		Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "echo", nil)}), Tools: agent.ToolList{echo},
		Authorizers: []approval.Authorizer{ask}, Middleware: []agent.Middleware{mw},
		WaitFor: func(_ context.Context, req tool.Request) (tool.Answer, error) {
			return tool.Answer{ID: req.ID, OK: true, By: "bob"}, nil
		},
	})
	res, err := a.Run(context.Background(), "x")
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("%v %v", res.Status, err)
	}
	if len(seen) != 1 || seen[0].Origin != gate.OriginAuthorization {
		t.Fatalf("pending calls seen: %+v", seen)
	}
	if d := res.ToolCalls[0].Decision; d.Outcome != gate.OutcomeApproved || echo.Count() != 1 {
		t.Errorf("the call was %s (ran %d times) after the middleware changed its copy", d.Outcome, echo.Count())
	}
	if _, ok := agent.PendingCallFrom(context.Background()); ok {
		t.Error("a pending call in a plain context")
	}
}
