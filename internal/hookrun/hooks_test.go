package hookrun_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/hookrun"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

var ctx = context.Background()

func TestBeforeToolChain(t *testing.T) {
	var seen []string
	h := (&hooks.Hooks{}).
		BeforeTool("rewrite", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
			seen = append(seen, "rewrite:"+string(ev.Args))
			return hooks.Rewrite(json.RawMessage(`{"a":2}`)), nil
		}).
		BeforeTool("", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
			seen = append(seen, "nop:"+string(ev.Args))
			ev.Args[1] = 'X' // in-place change: no effect
			return hooks.Allow("looks fine"), nil
		}).
		BeforeTool("deny", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
			seen = append(seen, "deny:"+string(ev.Args))
			return hooks.Deny("no"), nil
		}).
		BeforeTool("never", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
			t.Error("a hook after the short-circuit ran")
			return nil, nil
		})
	out, err := hookrun.BeforeTool(ctx, h, hooks.BeforeToolEvent{Name: "x", Args: json.RawMessage(`{"a":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{`rewrite:{"a":1}`, `nop:{"a":2}`, `deny:{"a":2}`}, seen); d != "" {
		t.Errorf("each hook sees the args as rewritten before it (-want +got):\n%s", d)
	}
	if string(out.Args) != `{"a":2}` || !out.Rewritten || out.By != "deny" || out.Result == nil || !out.Result.IsError {
		t.Errorf("outcome %+v", out)
	}
	want := []tool.Vote{{Source: tool.Principal{Kind: tool.PrincipalHook, Name: "rewrite"}, Decision: tool.VoteRewrite}, {Source: tool.Principal{Kind: tool.PrincipalHook, Name: "before_tool#2"}, Decision: tool.VoteAllow, Reason: "looks fine"}, {Source: tool.Principal{Kind: tool.PrincipalHook, Name: "deny"}, Decision: tool.VoteDeny, Reason: "no"}}
	if d := cmp.Diff(want, out.Votes); d != "" {
		t.Errorf("votes (-want +got):\n%s", d)
	}
}

func TestAskIsAPendingShortCircuit(t *testing.T) {
	h := (&hooks.Hooks{}).BeforeTool("ask", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		return hooks.Ask(tool.Request{ID: "r1", Prompt: "ok?"}), nil
	})
	out, err := hookrun.BeforeTool(ctx, h, hooks.BeforeToolEvent{Name: "x"})
	if err != nil || out.Result == nil || out.Result.Pending == nil || out.Result.Pending.ID != "r1" || out.Votes[0].Decision != "ask" {
		t.Fatalf("%+v %v", out, err)
	}
}

// On the retry after an approval, the approved hook's ask is satisfied for the
// arguments it is shown and the chain goes on; any other ask still ends it.
func TestApprovedAskLetsTheChainGoOn(t *testing.T) {
	gate := func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		return hooks.Ask(tool.Request{Prompt: "allow " + ev.Name + "?"}), nil
	}
	var later []string
	h := (&hooks.Hooks{}).
		BeforeTool("gate", gate).
		BeforeTool("later", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
			later = append(later, string(ev.Args))
			return hooks.Deny("not now"), nil
		})
	var asked []string
	approved := func(hook string, args json.RawMessage) bool {
		asked = append(asked, hook+" "+string(args))
		return hook == "gate" && string(args) == `{"a":1}`
	}
	out, err := hookrun.BeforeToolApproved(ctx, h, hooks.BeforeToolEvent{Name: "x", Args: json.RawMessage(`{"a":1}`)}, approved)
	if err != nil {
		t.Fatal(err)
	}
	if out.By != "later" || out.Result == nil || !out.Result.IsError || !cmp.Equal(later, []string{`{"a":1}`}) || !cmp.Equal(asked, []string{`gate {"a":1}`}) {
		t.Fatalf("outcome %+v, later hook saw %v, approved asked %v", out, later, asked)
	}
	want := []tool.Vote{{Source: tool.Principal{Kind: tool.PrincipalHook, Name: "gate"}, Decision: tool.VoteAsk, Reason: "allow x?"}, {Source: tool.Principal{Kind: tool.PrincipalHook, Name: "later"}, Decision: tool.VoteDeny, Reason: "not now"}}
	if d := cmp.Diff(want, out.Votes); d != "" {
		t.Errorf("votes (-want +got):\n%s", d)
	}
	// Other arguments, or no approval at all: the ask ends the chain.
	for _, run := range []func() (hookrun.ToolOutcome, error){
		func() (hookrun.ToolOutcome, error) {
			return hookrun.BeforeToolApproved(ctx, h, hooks.BeforeToolEvent{Name: "x", Args: json.RawMessage(`{"a":2}`)}, approved)
		},
		func() (hookrun.ToolOutcome, error) {
			return hookrun.BeforeTool(ctx, h, hooks.BeforeToolEvent{Name: "x", Args: json.RawMessage(`{"a":1}`)})
		},
	} {
		later = nil
		out, err := run()
		if err != nil || out.By != "gate" || out.Result == nil || out.Result.Pending == nil || later != nil {
			t.Errorf("outcome %+v err %v, later hook saw %v", out, err, later)
		}
	}
}

func TestAfterToolChainSeesReplacements(t *testing.T) {
	h := (&hooks.Hooks{}).
		AfterTool("a", func(ctx context.Context, ev *hooks.AfterToolEvent) (*hooks.ToolOverride, error) {
			r := ev.Result
			r.Output += "+a"
			r.Metadata["a"] = true
			return hooks.Replace(r), nil
		}).
		AfterTool("observe", func(ctx context.Context, ev *hooks.AfterToolEvent) (*hooks.ToolOverride, error) {
			ev.Result.Metadata["sneaky"] = true // a copy: no effect
			return nil, nil
		}).
		AfterTool("b", func(ctx context.Context, ev *hooks.AfterToolEvent) (*hooks.ToolOverride, error) {
			r := ev.Result
			r.Output += "+b"
			return hooks.Replace(r), nil
		})
	in := tool.Result{Output: "x", Metadata: map[string]any{}}
	res, by, err := hookrun.AfterTool(ctx, h, hooks.AfterToolEvent{Name: "t", Result: in})
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "x+a+b" || !cmp.Equal(by, []string{"a", "b"}) || res.Metadata["sneaky"] != nil || res.Metadata["a"] != true || len(in.Metadata) != 0 {
		t.Errorf("result %+v by %v; input metadata %v", res, by, in.Metadata)
	}
}

func TestBeforeLLMChain(t *testing.T) {
	h := (&hooks.Hooks{}).
		BeforeLLM("swap-model", func(ctx context.Context, ev *hooks.BeforeLLMEvent) (*hooks.LLMOverride, error) {
			return &hooks.LLMOverride{Model: "small", Tools: []model.ToolDef{}}, nil
		}).
		BeforeLLM("cache", func(ctx context.Context, ev *hooks.BeforeLLMEvent) (*hooks.LLMOverride, error) {
			if ev.Model != "small" || len(ev.Tools) != 0 {
				t.Errorf("second hook saw model %q tools %v", ev.Model, ev.Tools)
			}
			return &hooks.LLMOverride{Response: &model.Response{Message: model.Assistant("cached")}}, nil
		}).
		BeforeLLM("never", func(ctx context.Context, ev *hooks.BeforeLLMEvent) (*hooks.LLMOverride, error) {
			t.Error("ran after a canned response")
			return nil, nil
		})
	out, err := hookrun.BeforeLLM(ctx, h, hooks.BeforeLLMEvent{Model: "big", Tools: []model.ToolDef{{Name: "t"}}, Messages: []model.Message{model.User("hi")}})
	if err != nil || out.Model != "small" || out.Tools == nil || len(out.Tools) != 0 || out.Response == nil || out.By != "cache" || len(out.Messages) != 1 {
		t.Fatalf("%+v %v", out, err)
	}
}

func TestHookErrorsAndPanicsAreTyped(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		stage hooks.Stage
		run   func(h *hooks.Hooks) error
		add   func(h *hooks.Hooks, panics bool)
	}{
		{hooks.StageBeforeLLM, func(h *hooks.Hooks) error { _, err := hookrun.BeforeLLM(ctx, h, hooks.BeforeLLMEvent{}); return err },
			func(h *hooks.Hooks, p bool) {
				h.BeforeLLM("h", func(context.Context, *hooks.BeforeLLMEvent) (*hooks.LLMOverride, error) {
					if p {
						panic("bad")
					}
					return nil, boom
				})
			}},
		{hooks.StageAfterLLM, func(h *hooks.Hooks) error { return hookrun.AfterLLM(ctx, h, hooks.AfterLLMEvent{}) },
			func(h *hooks.Hooks, p bool) {
				h.AfterLLM("h", func(context.Context, *hooks.AfterLLMEvent) error {
					if p {
						panic("bad")
					}
					return boom
				})
			}},
		{hooks.StageBeforeTool, func(h *hooks.Hooks) error { _, err := hookrun.BeforeTool(ctx, h, hooks.BeforeToolEvent{}); return err },
			func(h *hooks.Hooks, p bool) {
				h.BeforeTool("h", func(context.Context, *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
					if p {
						panic("bad")
					}
					return nil, boom
				})
			}},
		{hooks.StageAfterTool, func(h *hooks.Hooks) error { _, _, err := hookrun.AfterTool(ctx, h, hooks.AfterToolEvent{}); return err },
			func(h *hooks.Hooks, p bool) {
				h.AfterTool("h", func(context.Context, *hooks.AfterToolEvent) (*hooks.ToolOverride, error) {
					if p {
						panic("bad")
					}
					return nil, boom
				})
			}},
	} {
		for _, panics := range []bool{false, true} {
			h := &hooks.Hooks{}
			tc.add(h, panics)
			err := tc.run(h)
			var he *hooks.Error
			if !errors.As(err, &he) || he.Stage != tc.stage || he.Hook != "h" {
				t.Errorf("%s panics=%v: err %v", tc.stage, panics, err)
				continue
			}
			if panics != (he.Panic != nil) || (!panics && !errors.Is(err, boom)) {
				t.Errorf("%s panics=%v: %+v", tc.stage, panics, he)
			}
		}
	}
}

func TestNilHooksAndMerge(t *testing.T) {
	var nilHooks *hooks.Hooks
	if out, err := hookrun.BeforeTool(ctx, nilHooks, hooks.BeforeToolEvent{Args: json.RawMessage(`{}`)}); err != nil || string(out.Args) != `{}` {
		t.Errorf("nil hooks: %+v %v", out, err)
	}
	a := (&hooks.Hooks{}).BeforeTool("a", func(context.Context, *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) { return nil, nil })
	b := (&hooks.Hooks{}).BeforeTool("b", func(context.Context, *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) { return nil, nil }).
		AfterLLM("c", func(context.Context, *hooks.AfterLLMEvent) error { return nil })
	a.Merge(b).Merge(nil)
	if len(a.Chain(hooks.StageBeforeTool)) != 2 || len(a.Chain(hooks.StageAfterLLM)) != 1 || len(a.Chain(hooks.StageBeforeLLM)) != 0 || len(nilHooks.Chain(hooks.StageAfterTool)) != 0 {
		t.Errorf("lens %d %d", len(a.Chain(hooks.StageBeforeTool)), len(a.Chain(hooks.StageAfterLLM)))
	}
}
