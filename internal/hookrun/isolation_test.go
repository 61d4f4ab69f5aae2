package hookrun_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/hookrun"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// Each hook of a chain gets copies of its own, even though the copies of
// one chain share allocations: a hook that changes its copy in place, or
// appends to it, changes neither what the next hook sees nor what an earlier
// hook kept.
func TestHookCopiesAreIsolated(t *testing.T) {
	ctx := context.Background()
	args := json.RawMessage(`{"a":1}`)
	calls := []model.ToolCall{{ID: "c1", Name: "t", Arguments: json.RawMessage(`{"x":1}`)}, {ID: "c2", Name: "t", Arguments: json.RawMessage(`{"y":2}`)}}
	msgs := []model.Message{model.User("hi"), model.Assistant("", calls[0]), model.Assistant("", calls[1])}
	defs := []model.ToolDef{{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}, {Name: "u", InputSchema: json.RawMessage(`{}`)}}

	h := &hooks.Hooks{}
	var keptArgs []json.RawMessage
	var keptHints []*tool.Hints
	var keptMsgs [][]model.Message
	var keptDefs [][]model.ToolDef
	for range 3 {
		h.BeforeTool("", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
			keptArgs = append(keptArgs, ev.Args)
			keptHints = append(keptHints, ev.Hints)
			if string(ev.Args) != `{"a":1}` || !ev.Hints.ReadOnly {
				t.Errorf("hook %d saw args %s, hints %+v", len(keptArgs), ev.Args, ev.Hints)
			}
			ev.Args[1] = 'X'
			_ = append(ev.Args, "garbage"...)
			ev.Hints.ReadOnly = false
			return nil, nil
		})
		h.AfterTool("", func(ctx context.Context, ev *hooks.AfterToolEvent) (*hooks.ToolOverride, error) {
			keptArgs = append(keptArgs, ev.Args)
			if string(ev.Args) != `{"a":1}` {
				t.Errorf("after hook saw args %s", ev.Args)
			}
			_ = append(ev.Args[:2], "garbage"...)
			return nil, nil
		})
		h.BeforeLLM("", func(ctx context.Context, ev *hooks.BeforeLLMEvent) (*hooks.LLMOverride, error) {
			keptMsgs = append(keptMsgs, ev.Messages)
			keptDefs = append(keptDefs, ev.Tools)
			first, second := ev.Messages[1].ToolCalls, ev.Messages[2].ToolCalls
			if len(first) != 1 || len(second) != 1 || first[0].ID != "c1" || second[0].ID != "c2" ||
				string(first[0].Arguments) != `{"x":1}` || string(second[0].Arguments) != `{"y":2}` || string(ev.Tools[0].InputSchema) != `{"type":"object"}` {
				t.Errorf("BeforeLLM hook saw calls %+v %+v, tools %+v", first, second, ev.Tools)
			}
			_ = append(first[0].Arguments, "garbage"...)
			_ = append(first, model.ToolCall{ID: "evil"})
			second[0].Arguments[1] = 'Z'
			_ = append(ev.Tools[0].InputSchema, "garbage"...)
			ev.Tools[1].InputSchema[0] = '['
			return nil, nil
		})
	}
	if _, err := hookrun.BeforeTool(ctx, h, hooks.BeforeToolEvent{Name: "t", Args: args, Hints: &tool.Hints{ReadOnly: true}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := hookrun.AfterTool(ctx, h, hooks.AfterToolEvent{Name: "t", Args: args, Result: tool.Text("ok")}); err != nil {
		t.Fatal(err)
	}
	if _, err := hookrun.BeforeLLM(ctx, h, hooks.BeforeLLMEvent{Messages: msgs, Tools: defs}); err != nil {
		t.Fatal(err)
	}
	for i, a := range keptArgs {
		want := `{Xa":1}` // as its own BeforeTool hook left it
		if i >= 3 {
			want = `{"a":1}` // AfterTool hooks only appended
		}
		if string(a) != want {
			t.Errorf("copy %d of the arguments is %s after the other hooks ran", i, a)
		}
	}
	for i, hs := range keptHints {
		if hs.ReadOnly {
			t.Errorf("hints %d were changed back by another hook", i)
		}
	}
	for i := range keptMsgs {
		first, second := keptMsgs[i][1].ToolCalls, keptMsgs[i][2].ToolCalls
		if first[0].ID != "c1" || string(first[0].Arguments) != `{"x":1}` || second[0].ID != "c2" || string(second[0].Arguments) != `{Zy":2}` ||
			string(keptDefs[i][0].InputSchema) != `{"type":"object"}` || string(keptDefs[i][1].InputSchema) != `[}` {
			t.Errorf("BeforeLLM copy %d changed by another hook: %+v %+v %+v", i, first, second, keptDefs[i])
		}
	}
	if string(args) != `{"a":1}` || string(calls[0].Arguments) != `{"x":1}` || string(calls[1].Arguments) != `{"y":2}` || string(defs[1].InputSchema) != `{}` {
		t.Errorf("the caller's values changed: %s %+v %+v", args, calls, defs)
	}
}
