package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

type nopTool struct{}

var nopSpec = tool.Spec{Name: "nop", InputSchema: mustSchema(`{"type":"object","properties":{"n":{"type":"integer"}}}`)}

func (nopTool) Spec() tool.Spec { return nopSpec }
func (nopTool) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	return tool.Text("ok"), nil
}

// withHooks registers n observing hooks of each of the four kinds.
func withHooks(n int) *hooks.Hooks {
	h := &hooks.Hooks{}
	for i := 0; i < n; i++ {
		h.BeforeLLM("", func(ctx context.Context, ev *hooks.BeforeLLMEvent) (*hooks.LLMOverride, error) { return nil, nil })
		h.AfterLLM("", func(ctx context.Context, ev *hooks.AfterLLMEvent) error { return nil })
		h.BeforeTool("", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) { return nil, nil })
		h.AfterTool("", func(ctx context.Context, ev *hooks.AfterToolEvent) (*hooks.ToolOverride, error) { return nil, nil })
	}
	return h
}

// BenchmarkTurn measures one run of a single model turn with no tool call:
// the loop's per-turn overhead with an in-process model.
func BenchmarkTurn(b *testing.B) {
	for _, n := range []int{0, 5} {
		b.Run(fmt.Sprintf("hooks=%d", n), func(b *testing.B) {
			m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
				return model.Reply{Content: "ok"}, nil
			})
			a, _ := agent.New(agent.Options{Model: m, Tools: agent.ToolList{nopTool{}}, Hooks: withHooks(n)})
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.Run(ctx, "x"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkToolCall measures a run whose first turn makes one tool call and
// whose second answers: subtract BenchmarkTurn for the per-call overhead of the
// pipeline (resolve, validate, hooks, authorize, execute, record).
func BenchmarkToolCall(b *testing.B) {
	for _, n := range []int{0, 5} {
		b.Run(fmt.Sprintf("hooks=%d", n), func(b *testing.B) {
			m := testkit.Script([]model.FuncCall{{ID: "c1", Name: "nop", Arguments: json.RawMessage(`{"n":1}`)}})
			a, _ := agent.New(agent.Options{Model: m, Tools: agent.ToolList{nopTool{}}, Hooks: withHooks(n)})
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.Run(ctx, "x"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkParallelCalls measures one turn of 16 concurrent tool calls.
func BenchmarkParallelCalls(b *testing.B) {
	var calls []model.FuncCall
	for i := 0; i < 16; i++ {
		calls = append(calls, model.FuncCall{ID: fmt.Sprintf("c%d", i), Name: "nop", Arguments: json.RawMessage(`{"n":1}`)})
	}
	m := testkit.Script(calls)
	a, _ := agent.New(agent.Options{Model: m, Tools: agent.ToolList{nopTool{}}, Hooks: withHooks(5)})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Run(ctx, "x"); err != nil {
			b.Fatal(err)
		}
	}
}
