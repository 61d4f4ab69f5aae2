package gate_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/gate/gatetest"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/tool"
)

// askOutsideTmp asks about every call of "write" outside /tmp.
var askOutsideTmp = approval.AuthorizerFunc(func(_ context.Context, c approval.Call) (approval.Verdict, error) {
	by := tool.Principal{Kind: tool.PrincipalRule, Name: "writes"}
	if strings.Contains(string(c.Args), `"/tmp/`) {
		return approval.Verdict{Decision: approval.Allow, By: by}, nil
	}
	return approval.Verdict{Decision: approval.Ask, Reason: "writes outside /tmp", By: by}, nil
})

// approvedThenAsked puts a call of the probe's asking tool through an
// approval by alice (with data, edited arguments, when set) and the
// tool's request for input: it returns the pending call of the tool's
// request, after a JSON round trip.
func approvedThenAsked(t *testing.T, g *gate.Gate, env *gate.Env, c gate.Call, data json.RawMessage) *gate.Pending {
	t.Helper()
	ctx := context.Background()
	ru := g.Decide(ctx, env, c, nil, nil)
	if ru.Pending == nil || ru.Pending.Request.Kind != tool.KindApproval {
		t.Fatalf("no approval asked: %+v", ru)
	}
	ans := tool.Answer{ID: ru.Pending.Request.ID, OK: true, By: "alice", Data: data}
	ru = g.Decide(ctx, env, c, roundTrip(t, ru.Pending), &ans)
	if ru.Allowed == nil {
		t.Fatalf("not allowed: %+v", ru)
	}
	a := roundTrip(t, ru.Allowed)
	ru = g.Complete(ctx, env, a, func(ctx context.Context, a *gate.Allowed) gate.Ran {
		res, _ := env.Tools.(tools)[0].Call(ctx, a.Args)
		return gate.Ran{Result: res}
	})
	if ru.Pending == nil || ru.Pending.Request.Kind != tool.KindInput || ru.Pending.Approved == nil {
		if ru.Record != nil {
			t.Fatalf("record %+v", ru.Record)
		}
		t.Fatalf("the tool's request did not halt the call with its approval: %+v", ru)
	}
	return roundTrip(t, ru.Pending)
}

// resumeWithBob answers the tool's request as bob and takes the call up.
func resumeWithBob(t *testing.T, g *gate.Gate, env *gate.Env, c gate.Call, p *gate.Pending) gate.Ruling {
	t.Helper()
	ctx := context.Background()
	ans := tool.Answer{ID: p.Request.ID, OK: true, By: "bob", Data: json.RawMessage(`"eu"`)}
	ru := g.Decide(ctx, env, c, p, &ans)
	if ru.Allowed == nil {
		return ru
	}
	return g.Complete(ctx, env, ru.Allowed, func(ctx context.Context, a *gate.Allowed) gate.Ran {
		res, _ := env.Tools.(tools)[0].Call(ctx, a.Args)
		return gate.Ran{Result: res}
	})
}

// The approval a call carries over its tool's request covers the
// arguments it was given for only: changed arguments, or a carried
// answer that does not approve, ask again, which after an answer is a
// second pending request; the tool never runs.
func TestCarriedApprovalFailsClosed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tamper func(a *gate.Approval)
	}{
		{"other arguments", func(a *gate.Approval) { a.Digest = approval.Digest(json.RawMessage(`{"path":"/home/b","text":"ask"}`)) }},
		{"a declining answer", func(a *gate.Approval) { a.Answer.OK = false }},
		{"two answerers", func(a *gate.Approval) {
			a.Answer.Principal = tool.Principal{Kind: tool.PrincipalPerson, Name: "mallory"}
		}},
		{"no request", func(a *gate.Approval) { a.Request = "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &gatetest.Probe{}
			g := gate.New(&gate.Options{Authorizers: []approval.Authorizer{askOutsideTmp}})
			env := &gate.Env{Tools: tools{p.Tool()}}
			c := gate.Call{ID: "c1", Name: "write", Args: json.RawMessage(`{"path":"/home/a","text":"ask"}`)}
			pd := approvedThenAsked(t, g, env, c, nil)
			tc.tamper(pd.Approved)
			ru := resumeWithBob(t, g, env, c, pd)
			if ru.Record == nil || ru.Record.Ran || ru.Record.Decision.Reason != "second pending request" || len(p.Runs()) != 0 {
				t.Fatalf("ruling %+v, runs %v", ru, p.Runs())
			}
		})
	}
}

// An approval that edited the arguments carries the edit: the retry with
// the tool's answer runs the edited arguments, approved by the person
// who edited them, and the answer's vote follows the approval's.
func TestCarriedApprovalKeepsItsEdit(t *testing.T) {
	p := &gatetest.Probe{}
	g := gate.New(&gate.Options{Authorizers: []approval.Authorizer{askOutsideTmp}})
	env := &gate.Env{Tools: tools{p.Tool()}}
	c := gate.Call{ID: "c1", Name: "write", Args: json.RawMessage(`{"path":"/home/a","text":"ask"}`)}
	pd := approvedThenAsked(t, g, env, c, json.RawMessage(`{"path":"/home/b","text":"ask"}`))
	ru := resumeWithBob(t, g, env, c, pd)
	rec := ru.Record
	if rec == nil || !rec.Ran || rec.Output != `wrote /home/b with "eu"` || string(rec.Args) != `{"path":"/home/b","text":"ask"}` {
		t.Fatalf("ruling %+v", ru)
	}
	d := rec.Decision
	if d.Outcome != gate.OutcomeApproved || d.By.String() != "person:alice" {
		t.Fatalf("decision %s by %s, want approved by person:alice", d.Outcome, d.By)
	}
	var order []string
	for _, v := range d.Votes {
		order = append(order, v.Source.String()+"="+string(v.Decision))
	}
	if got := strings.Join(order, " "); got != "person:alice=rewrite rule:writes=ask person:alice=allow person:bob=allow" {
		t.Fatalf("votes %s", got)
	}
}

// A hook's approval is carried too: the hook that asks again on the retry
// for the arguments it was approved for is answered by it.
func TestCarriedHookApproval(t *testing.T) {
	p := &gatetest.Probe{}
	h := &hooks.Hooks{}
	h.BeforeTool("careful", func(context.Context, *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		return hooks.Ask(tool.Request{Prompt: "really write?"}), nil
	})
	g := gate.New(&gate.Options{Hooks: h})
	env := &gate.Env{Tools: tools{p.Tool()}}
	c := gate.Call{ID: "c1", Name: "write", Args: json.RawMessage(`{"path":"/tmp/a","text":"ask"}`)}
	pd := approvedThenAsked(t, g, env, c, nil)
	if pd.Approved.Origin != gate.OriginHook || pd.Approved.Hook != "careful" {
		t.Fatalf("carried %+v", pd.Approved)
	}
	ru := resumeWithBob(t, g, env, c, pd)
	if ru.Record == nil || !ru.Record.Ran || ru.Record.Output != `wrote /tmp/a with "eu"` {
		t.Fatalf("ruling %+v", ru)
	}
}

// A Permission hook's approval (a remembered rule's, say) is not carried
// over the tool's request: the call halts on it, and the hooks are asked
// again on the retry with the answer. A hook that approves again lets the
// tool go on with the answer; one that does not answer then leaves the
// call to end on a second request, and the tool never runs.
func TestPermissionHookIsAskedAgainAfterTheToolsRequest(t *testing.T) {
	for _, tc := range []struct {
		name  string
		times int // how many times the hook approves
		ran   bool
	}{{"approves again", 2, true}, {"approves once", 1, false}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			p := &gatetest.Probe{}
			h := &hooks.Hooks{}
			left := tc.times
			h.Permission("remembered", func(_ context.Context, ev *hooks.PermissionEvent) (*tool.Answer, error) {
				if left == 0 {
					return nil, nil
				}
				left--
				return &tool.Answer{OK: true, Reason: "a remembered rule"}, nil
			})
			g := gate.New(&gate.Options{Hooks: h, Authorizers: []approval.Authorizer{askOutsideTmp}})
			env := &gate.Env{Tools: tools{p.Tool()}}
			c := gate.Call{ID: "c1", Name: "write", Args: json.RawMessage(`{"path":"/home/a","text":"ask"}`)}
			ru := g.Decide(ctx, env, c, nil, nil)
			if ru.Allowed == nil {
				t.Fatalf("the hook did not allow: %+v", ru)
			}
			ru = g.Complete(ctx, env, ru.Allowed, func(ctx context.Context, a *gate.Allowed) gate.Ran {
				res, _ := p.Tool().Call(ctx, a.Args)
				return gate.Ran{Result: res}
			})
			if ru.Pending == nil || ru.Pending.Approved != nil {
				t.Fatalf("want the tool's request, no approval carried: %+v", ru)
			}
			ru = resumeWithBob(t, g, env, c, roundTrip(t, ru.Pending))
			rec := ru.Record
			if rec == nil || rec.Ran != tc.ran || (len(p.Runs()) == 1) != tc.ran {
				t.Fatalf("ruling %+v, runs %v", ru, p.Runs())
			}
			if tc.ran && (rec.Decision.By.String() != "hook:remembered" || rec.Output != `wrote /home/a with "eu"`) {
				t.Fatalf("decision by %s, output %q", rec.Decision.By, rec.Output)
			}
			if !tc.ran && rec.Decision.Reason != "second pending request" {
				t.Fatalf("decision %+v", rec.Decision)
			}
		})
	}
}
