package gate_test

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/gate/gatetest"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/toolcall"
	"github.com/tollgate-dev/tollgate/tool"
)

// tools is a gate.Tools over a fixed list.
type tools []tool.Tool

func (ts tools) Tool(name string) (tool.Tool, bool) {
	for _, t := range ts {
		if t.Spec().Name == name {
			return t, true
		}
	}
	return nil, false
}

func (ts tools) Names() []string {
	var names []string
	for _, t := range ts {
		names = append(names, t.Spec().Name)
	}
	sort.Strings(names)
	return names
}

// roundTrip sends v through JSON, as a caller in another process would.
func roundTrip[T any](t *testing.T, v *T) *T {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

// reporter is a caller that runs the tool itself, elsewhere, and reports
// the result, as an agent tollgate does not run does: every value between
// its steps crosses JSON.
type reporter struct{}

func (reporter) Call(t *testing.T, s gatetest.Setup, name string, args json.RawMessage, answer gatetest.Answerer) *gate.Record {
	ctx := context.Background()
	g := gate.New(&gate.Options{Hooks: s.Hooks, Authorizers: s.Authorizers})
	env := &gate.Env{Tools: tools{s.Tool}}
	c := gate.Call{ID: "toolu_1", Name: name, Args: args, RunID: "session_1", Source: gate.SourceClaudeCode}
	ru := g.Decide(ctx, env, *roundTrip(t, &c), nil, nil)
	for asked := 0; ; {
		if ru.Pending != nil {
			if asked++; asked > 2 {
				t.Fatal("asked more than twice")
			}
			p := roundTrip(t, ru.Pending)
			ans := answer(p.Request)
			ru = g.Decide(ctx, env, c, p, roundTrip(t, ans))
			continue
		}
		if ru.Err != nil {
			t.Fatal(ru.Err)
		}
		if ru.Allowed == nil {
			return ru.Record
		}
		a := roundTrip(t, ru.Allowed)
		// The caller runs the tool itself (with the answer it was allowed
		// with, which a tool that asked goes on with), then reports what
		// it gave.
		tctx := ctx
		if a.Answer != nil {
			tctx = toolcall.WithAnswer(ctx, *a.Answer)
		}
		res, err := s.Tool.Call(tctx, a.Args)
		if err != nil {
			t.Fatal(err)
		}
		ru = g.Complete(ctx, env, a, gate.Reported(res, time.Millisecond))
		if ru.Err != nil || (ru.Record == nil && ru.Pending == nil) {
			t.Fatalf("complete: %+v", ru)
		}
		if ru.Record != nil {
			return ru.Record
		}
	}
}

// A caller that runs the tool itself and reports the result passes the
// same suite as the agent and the durable engine.
func TestConformanceReportedResults(t *testing.T) { gatetest.Run(t, reporter{}) }

// An Allowed that Decide did not make (no record) is refused, and nothing
// runs.
func TestCompleteRefusesAnAllowedWithoutRecord(t *testing.T) {
	g := gate.New(&gate.Options{})
	ran := false
	ru := g.Complete(context.Background(), &gate.Env{}, &gate.Allowed{Call: gate.Call{ID: "c", Name: "bash"}},
		func(context.Context, *gate.Allowed) gate.Ran { ran = true; return gate.Ran{} })
	if ru.Err != gate.ErrNoRecord || ran {
		t.Fatalf("ruling %+v, ran %v", ru, ran)
	}
}

// An approval binds to the arguments it was given for: when a hook
// rewrites them after the approval and the policy allows the new ones,
// the record says who allowed them, not that the person approved them
// (the person's answer stays a vote).
func TestApprovalOfOtherArgumentsIsOnlyAVote(t *testing.T) {
	ctx := context.Background()
	p := &gatetest.Probe{}
	h := &hooks.Hooks{}
	asked := false
	h.BeforeTool("ask-once", func(_ context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		if ev.Answer == nil {
			asked = true
			return hooks.Ask(tool.Request{Prompt: "write?"}), nil
		}
		return nil, nil
	})
	h.BeforeTool("jail", func(_ context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		if ev.Answer == nil {
			return nil, nil
		}
		return hooks.Rewrite(json.RawMessage(`{"path":"/tmp/jail/a"}`)), nil
	})
	allowAll := approval.AuthorizerFunc(func(context.Context, approval.Call) (approval.Verdict, error) {
		return approval.Verdict{Decision: approval.Allow, By: tool.Principal{Kind: tool.PrincipalRule, Name: "open"}}, nil
	})
	g := gate.New(&gate.Options{Hooks: h, Authorizers: []approval.Authorizer{allowAll}})
	env := &gate.Env{Tools: tools{p.Tool()}}
	c := gate.Call{ID: "c1", Name: "write", Args: json.RawMessage(`{"path":"/tmp/a"}`)}
	ru := g.Decide(ctx, env, c, nil, nil)
	if ru.Pending == nil || !asked {
		t.Fatalf("no ask: %+v", ru)
	}
	ans := tool.Answer{ID: ru.Pending.Request.ID, OK: true, By: "alice"}
	ru = g.Decide(ctx, env, c, ru.Pending, &ans)
	if ru.Allowed == nil {
		t.Fatalf("not allowed: %+v", ru)
	}
	d := ru.Allowed.Record.Decision
	if d.Outcome != gate.OutcomeAllowed || d.By.String() != "rule:open" {
		t.Fatalf("decision %s by %s, want allowed by rule:open (alice approved other arguments)", d.Outcome, d.By)
	}
	var voted bool
	for _, v := range d.Votes {
		voted = voted || v.Source.String() == "person:alice"
	}
	if !voted {
		t.Fatalf("alice's answer is not among the votes: %+v", d.Votes)
	}
}

// Decide checks an answer against the request it is given with, whoever
// the caller: an answer for another request, or one that names two
// different answerers, decides nothing and the tool does not run.
func TestDecideRefusesAnAnswerForAnotherRequest(t *testing.T) {
	ctx := context.Background()
	askAll := approval.AuthorizerFunc(func(context.Context, approval.Call) (approval.Verdict, error) {
		return approval.Verdict{Decision: approval.Ask, By: tool.Principal{Kind: tool.PrincipalRule, Name: "ask"}}, nil
	})
	for _, tc := range []struct {
		name, reason string
		ans          tool.Answer
	}{
		{"another request", "misrouted answer", tool.Answer{ID: "req_other", OK: true, By: "alice"}},
		{"two answerers", "the answer names two different answerers", tool.Answer{OK: true, By: "alice", Principal: tool.Principal{Kind: tool.PrincipalPerson, Name: "mallory"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &gatetest.Probe{}
			g := gate.New(&gate.Options{Authorizers: []approval.Authorizer{askAll}})
			env := &gate.Env{Tools: tools{p.Tool()}}
			c := gate.Call{ID: "c1", Name: "write", Args: json.RawMessage(`{"path":"/tmp/a"}`)}
			ru := g.Decide(ctx, env, c, nil, nil)
			if ru.Pending == nil {
				t.Fatalf("no ask: %+v", ru)
			}
			ans := tc.ans
			ru = g.Decide(ctx, env, c, ru.Pending, &ans)
			if ru.Record == nil || ru.Record.Decision.Outcome != gate.OutcomeDeclined || ru.Record.Decision.Reason != tc.reason || len(p.Runs()) != 0 {
				t.Fatalf("ruling %+v, ran %v", ru, p.Runs())
			}
		})
	}
}

// Who asks reaches the authorizers and the record: a policy can judge a
// Claude Code session's calls apart from the agent's, and the audit says
// whose call it was.
func TestWhoAsksReachesAuthorizersAndRecord(t *testing.T) {
	var seen approval.Call
	az := approval.AuthorizerFunc(func(_ context.Context, c approval.Call) (approval.Verdict, error) {
		seen = c
		return approval.Verdict{Decision: approval.Allow}, nil
	})
	p := &gatetest.Probe{}
	g := gate.New(&gate.Options{Authorizers: []approval.Authorizer{az}})
	bob := tool.Principal{Kind: tool.PrincipalPerson, Name: "bob"}
	c := gate.Call{ID: "c1", Name: "write", Args: json.RawMessage(`{"path":"/tmp/a"}`), RunID: "cc_1", Source: gate.SourceClaudeCode, Principal: bob}
	ru := g.Decide(context.Background(), &gate.Env{Tools: tools{p.Tool()}}, c, nil, nil)
	if ru.Allowed == nil || seen.Source != "claude-code" || seen.Principal != bob {
		t.Fatalf("the authorizer saw source %q principal %v", seen.Source, seen.Principal)
	}
	if rec := ru.Allowed.Record; rec.Source != gate.SourceClaudeCode || rec.Principal != bob {
		t.Fatalf("record: source %q principal %v", rec.Source, rec.Principal)
	}
}

// An approval request's prompt cuts long arguments at a character
// boundary: the text a person reads stays valid UTF-8.
func TestPromptCutsWholeCharacters(t *testing.T) {
	askAll := approval.AuthorizerFunc(func(context.Context, approval.Call) (approval.Verdict, error) {
		return approval.Verdict{Decision: approval.Ask}, nil
	})
	p := &gatetest.Probe{}
	g := gate.New(&gate.Options{Authorizers: []approval.Authorizer{askAll}})
	args, _ := json.Marshal(map[string]string{"path": "/tmp/x" + strings.Repeat("é", 150)})
	ru := g.Decide(context.Background(), &gate.Env{Tools: tools{p.Tool()}}, gate.Call{ID: "c1", Name: "write", Args: args}, nil, nil)
	if ru.Pending == nil || !utf8.ValidString(ru.Pending.Request.Prompt) || !strings.Contains(ru.Pending.Request.Prompt, "…") {
		t.Fatalf("prompt %q", ru.Pending.Request.Prompt)
	}
}

// A call's record keeps the tool's hints it was decided with, for a
// replay to judge the call again as it was judged.
func TestRecordKeepsTheHints(t *testing.T) {
	ls, err := tool.New("ls", "lists", func(context.Context, struct{}) (string, error) { return "a b", nil },
		&tool.FuncOptions{Hints: &tool.Hints{ReadOnly: true}})
	if err != nil {
		t.Fatal(err)
	}
	rec := reporter{}.Call(t, gatetest.Setup{Tool: ls}, "ls", json.RawMessage(`{}`), nil)
	if rec == nil || rec.Hints == nil || !rec.Hints.ReadOnly {
		t.Fatalf("record %+v", rec)
	}
}
