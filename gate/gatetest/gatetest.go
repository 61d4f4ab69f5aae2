// Package gatetest is the conformance suite of the gate's users: every
// program that puts a call through [gate.Gate] (the agent loop, the durable
// engine, a caller that runs the tool itself and reports the result) runs
// [Run] with a [Caller] of its own, and so shows that a call is decided and
// completed the same way whoever asks.
package gatetest

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/tool"
)

// Setup is the governance of one case: the tool the call names, the hooks
// and the authorizers.
type Setup struct {
	// Tool is the one tool: "write", with a required string "path" and an
	// optional string "text".
	Tool tool.Tool
	// Hooks are the case's hooks (never nil).
	Hooks *hooks.Hooks
	// Authorizers are the case's policies.
	Authorizers []approval.Authorizer
}

// Answerer answers a pending request; nil leaves it unanswered.
type Answerer func(req tool.Request) *tool.Answer

// Caller puts one call through the gate as one user of it does, and
// returns the call's record. answer answers each pending request; the
// caller makes the call's ID and run.
type Caller interface {
	Call(t *testing.T, s Setup, name string, args json.RawMessage, answer Answerer) *gate.Record
}

// Probe is the case's tool: it records the arguments of every run, and
// answers "wrote PATH". Its Runs are what the tool saw, in order. A call
// with the text "ask" asks for input while it runs (a pending request of
// kind input in its result) until the answer it runs with carries a JSON
// string (an approval's data, edited arguments, is an object), then records the arguments and answers "wrote PATH with DATA".
type Probe struct {
	mu   sync.Mutex
	runs []string
}

// Runs returns the arguments the tool ran with, as JSON, in order.
func (p *Probe) Runs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.runs...)
}

// Tool returns the "write" tool that p records.
func (p *Probe) Tool() tool.Tool {
	type in struct {
		Path string `json:"path"`
		Text string `json:"text,omitempty"`
	}
	return tool.Must("write", "writes text to a file", func(ctx context.Context, a in) (tool.Result, error) {
		var ans tool.Answer
		if inv := tool.InvocationFrom(ctx); inv.Answer != nil {
			ans = *inv.Answer
		}
		if a.Text == "ask" && !strings.HasPrefix(string(ans.Data), `"`) {
			return tool.Pending(tool.Request{Kind: tool.KindInput, Prompt: "which region?"}), nil
		}
		b, _ := json.Marshal(a)
		p.mu.Lock()
		p.runs = append(p.runs, string(b))
		p.mu.Unlock()
		if a.Text == "ask" {
			return tool.Text("wrote " + a.Path + " with " + string(ans.Data)), nil
		}
		return tool.Text("wrote " + a.Path), nil
	}, &tool.FuncOptions{Hints: &tool.Hints{Destructive: true}})
}

// askWrites asks about every call of "write" outside /tmp, denies a path
// under /etc, allows the rest.
type askWrites struct{}

func (askWrites) Authorize(_ context.Context, c approval.Call) (approval.Verdict, error) {
	var a struct{ Path string }
	_ = json.Unmarshal(c.Args, &a)
	by := tool.Principal{Kind: tool.PrincipalRule, Name: "writes"}
	switch {
	case strings.HasPrefix(a.Path, "/etc/"):
		return approval.Verdict{Decision: approval.Deny, Reason: "system files", By: by}, nil
	case strings.HasPrefix(a.Path, "/tmp/"):
		return approval.Verdict{Decision: approval.Allow, By: by}, nil
	}
	return approval.Verdict{Decision: approval.Ask, Reason: "writes outside /tmp", By: by}, nil
}

func alice(ok bool, reason string, data json.RawMessage) Answerer {
	return func(req tool.Request) *tool.Answer {
		return &tool.Answer{ID: req.ID, OK: ok, Reason: reason, By: "alice", Data: data}
	}
}

// aliceThenBob approves the call as alice and answers the tool's request
// for input as bob, with "eu"; it fails the test on any other request.
func aliceThenBob(t *testing.T) Answerer {
	var asked []tool.Kind
	return func(req tool.Request) *tool.Answer {
		asked = append(asked, req.Kind)
		switch {
		case len(asked) == 1 && req.Kind == tool.KindApproval:
			return &tool.Answer{ID: req.ID, OK: true, Reason: "fine", By: "alice"}
		case len(asked) == 2 && req.Kind == tool.KindInput:
			return &tool.Answer{ID: req.ID, OK: true, By: "bob", Data: json.RawMessage(`"eu"`)}
		}
		t.Errorf("request %d of kind %s (%s): the approval is asked once, then the tool's input", len(asked), req.Kind, req.Prompt)
		return &tool.Answer{ID: req.ID, OK: false, Reason: "unexpected"}
	}
}

// A case is one call and what must come of it.
type kase struct {
	name   string
	args   string
	hooks  func(h *hooks.Hooks)
	answer Answerer
	// answerer, when set, makes the case's answerer for its test.
	answerer func(t *testing.T) Answerer
	check    func(t *testing.T, rec *gate.Record, runs []string)
}

func cases() []kase {
	return []kase{
		{name: "allowed", args: `{"path":"/tmp/a"}`, check: func(t *testing.T, rec *gate.Record, runs []string) {
			want(t, rec, gate.OutcomeAllowed, "rule:writes", true)
			ranWith(t, runs, `{"path":"/tmp/a"}`)
			if rec.Output != "wrote /tmp/a" {
				t.Errorf("output %q", rec.Output)
			}
		}},
		{name: "denied", args: `{"path":"/etc/passwd"}`, check: func(t *testing.T, rec *gate.Record, runs []string) {
			want(t, rec, gate.OutcomeDenied, "rule:writes", false)
			ranWith(t, runs)
		}},
		{name: "unknown tool", args: `{"path":"/tmp/a"}`, check: func(t *testing.T, rec *gate.Record, runs []string) {
			want(t, rec, gate.OutcomeUnknownTool, "runtime", false)
			ranWith(t, runs)
		}},
		{name: "invalid arguments", args: `{"path":7}`, check: func(t *testing.T, rec *gate.Record, runs []string) {
			want(t, rec, gate.OutcomeInvalid, "runtime", false)
			ranWith(t, runs)
		}},
		{name: "asked and approved", args: `{"path":"/home/a"}`, answer: alice(true, "fine", nil), check: func(t *testing.T, rec *gate.Record, runs []string) {
			want(t, rec, gate.OutcomeApproved, "person:alice", true)
			ranWith(t, runs, `{"path":"/home/a"}`)
		}},
		{name: "asked and declined", args: `{"path":"/home/a"}`, answer: alice(false, "not there", nil), check: func(t *testing.T, rec *gate.Record, runs []string) {
			want(t, rec, gate.OutcomeDeclined, "person:alice", false)
			ranWith(t, runs)
			if !strings.Contains(rec.Output, "not there") {
				t.Errorf("the model is not told the reason: %q", rec.Output)
			}
		}},
		{name: "approved with edited arguments", args: `{"path":"/home/a"}`, answer: alice(true, "", json.RawMessage(`{"path":"/home/b"}`)),
			check: func(t *testing.T, rec *gate.Record, runs []string) {
				want(t, rec, gate.OutcomeApproved, "person:alice", true)
				ranWith(t, runs, `{"path":"/home/b"}`)
				if string(rec.RequestedArgs) != `{"path":"/home/a"}` || string(rec.Args) != `{"path":"/home/b"}` {
					t.Errorf("record args %s -> %s", rec.RequestedArgs, rec.Args)
				}
			}},
		{name: "edited into a denied call", args: `{"path":"/home/a"}`, answer: alice(true, "", json.RawMessage(`{"path":"/etc/shadow"}`)),
			check: func(t *testing.T, rec *gate.Record, runs []string) {
				want(t, rec, gate.OutcomeDenied, "rule:writes", false)
				ranWith(t, runs)
			}},
		{name: "edited into invalid arguments", args: `{"path":"/home/a"}`, answer: alice(true, "", json.RawMessage(`{"path":["x"]}`)),
			check: func(t *testing.T, rec *gate.Record, runs []string) {
				want(t, rec, gate.OutcomeInvalid, "runtime", false)
				ranWith(t, runs)
			}},
		{name: "hook rewrites", args: `{"path":"/tmp/a"}`, hooks: func(h *hooks.Hooks) {
			h.BeforeTool("jail", func(_ context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
				return hooks.Rewrite(json.RawMessage(`{"path":"/tmp/jail/a"}`)), nil
			})
		}, check: func(t *testing.T, rec *gate.Record, runs []string) {
			want(t, rec, gate.OutcomeAllowed, "rule:writes", true)
			ranWith(t, runs, `{"path":"/tmp/jail/a"}`)
			if !hasVote(rec, "hook:jail", tool.VoteRewrite) {
				t.Errorf("no rewrite vote: %+v", rec.Decision.Votes)
			}
		}},
		{name: "hook rewrites into a denied call", args: `{"path":"/tmp/a"}`, hooks: func(h *hooks.Hooks) {
			h.BeforeTool("bad", func(_ context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
				return hooks.Rewrite(json.RawMessage(`{"path":"/etc/x"}`)), nil
			})
		}, check: func(t *testing.T, rec *gate.Record, runs []string) {
			want(t, rec, gate.OutcomeDenied, "rule:writes", false)
			ranWith(t, runs)
		}},
		{name: "hook denies", args: `{"path":"/tmp/a"}`, hooks: func(h *hooks.Hooks) {
			h.BeforeTool("veto", func(context.Context, *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
				return hooks.Deny("no writes today"), nil
			})
		}, check: func(t *testing.T, rec *gate.Record, runs []string) {
			want(t, rec, gate.OutcomeDenied, "hook:veto", false)
			ranWith(t, runs)
		}},
		{name: "hook short-circuits", args: `{"path":"/tmp/a"}`, hooks: func(h *hooks.Hooks) {
			h.BeforeTool("dry-run", func(context.Context, *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
				r := tool.Text("would write")
				return &hooks.ToolOverride{Result: &r}, nil
			})
		}, check: func(t *testing.T, rec *gate.Record, runs []string) {
			want(t, rec, gate.OutcomeShortCircuit, "hook:dry-run", false)
			ranWith(t, runs)
			if rec.Output != "would write" {
				t.Errorf("output %q", rec.Output)
			}
		}},
		{name: "hook asks, person approves", args: `{"path":"/tmp/a"}`, answer: alice(true, "", nil), hooks: func(h *hooks.Hooks) {
			h.BeforeTool("careful", func(context.Context, *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
				return hooks.Ask(tool.Request{Prompt: "really write?"}), nil
			})
		}, check: func(t *testing.T, rec *gate.Record, runs []string) {
			want(t, rec, gate.OutcomeApproved, "person:alice", true)
			ranWith(t, runs, `{"path":"/tmp/a"}`)
			if !hasVote(rec, "person:alice", tool.VoteAllow) {
				t.Errorf("the person's answer is not among the votes: %+v", rec.Decision.Votes)
			}
		}},
		{name: "approved, then the tool asks", args: `{"path":"/home/a","text":"ask"}`, answerer: aliceThenBob,
			check: func(t *testing.T, rec *gate.Record, runs []string) {
				want(t, rec, gate.OutcomeApproved, "person:alice", true)
				ranWith(t, runs, `{"path":"/home/a","text":"ask"}`)
				if rec.Output != `wrote /home/a with "eu"` {
					t.Errorf("output %q: the tool did not go on with bob's answer", rec.Output)
				}
				if !hasVote(rec, "person:alice", tool.VoteAllow) || !hasVote(rec, "person:bob", tool.VoteAllow) {
					t.Errorf("the record does not name both the approval and the answer: %+v", rec.Decision.Votes)
				}
			}},
		{name: "after-tool hook redacts", args: `{"path":"/tmp/secret"}`, hooks: func(h *hooks.Hooks) {
			h.AfterTool("redact", func(_ context.Context, ev *hooks.AfterToolEvent) (*hooks.ToolOverride, error) {
				return hooks.Replace(tool.Text(strings.ReplaceAll(ev.Result.Output, "secret", "[redacted]"))), nil
			})
		}, check: func(t *testing.T, rec *gate.Record, runs []string) {
			want(t, rec, gate.OutcomeAllowed, "rule:writes", true)
			ranWith(t, runs, `{"path":"/tmp/secret"}`)
			if rec.Output != "wrote /tmp/[redacted]" || len(rec.ReplacedBy) != 1 || rec.ReplacedBy[0] != "redact" {
				t.Errorf("output %q replaced by %v", rec.Output, rec.ReplacedBy)
			}
		}},
	}
}

// Run runs every case of the suite with c, each as a subtest.
func Run(t *testing.T, c Caller) {
	for _, k := range cases() {
		t.Run(k.name, func(t *testing.T) {
			p := &Probe{}
			h := &hooks.Hooks{}
			if k.hooks != nil {
				k.hooks(h)
			}
			s := Setup{Tool: p.Tool(), Hooks: h, Authorizers: []approval.Authorizer{askWrites{}}}
			name := "write"
			if k.name == "unknown tool" {
				name = "wirte"
			}
			answer := k.answer
			if k.answerer != nil {
				answer = k.answerer(t)
			}
			if answer == nil {
				answer = func(req tool.Request) *tool.Answer {
					t.Errorf("unexpected request %s: %s", req.ID, req.Prompt)
					return &tool.Answer{ID: req.ID, OK: false, Reason: "unexpected"}
				}
			}
			rec := c.Call(t, s, name, json.RawMessage(k.args), answer)
			if rec == nil {
				t.Fatal("no record")
			}
			k.check(t, rec, p.Runs())
		})
	}
}

func want(t *testing.T, rec *gate.Record, oc gate.Outcome, by string, ran bool) {
	t.Helper()
	if rec.Decision.Outcome != oc || rec.Decision.By.String() != by || rec.Ran != ran {
		t.Errorf("record: outcome %s by %s, ran %v; want %s by %s, ran %v (output %q)", rec.Decision.Outcome, rec.Decision.By, rec.Ran, oc, by, ran, rec.Output)
	}
}

func ranWith(t *testing.T, runs []string, args ...string) {
	t.Helper()
	if strings.Join(runs, " ") != strings.Join(args, " ") {
		t.Errorf("the tool ran with %q, want %q", runs, args)
	}
}

func hasVote(rec *gate.Record, source string, d tool.VoteDecision) bool {
	for _, v := range rec.Decision.Votes {
		if v.Source.String() == source && v.Decision == d {
			return true
		}
	}
	return false
}
