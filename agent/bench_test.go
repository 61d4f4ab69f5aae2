package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/policy"
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
			a, _ := agent.New(&agent.Options{Model: m, Tools: agent.ToolList{nopTool{}}, Hooks: withHooks(n)})
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
			a, _ := agent.New(&agent.Options{Model: m, Tools: agent.ToolList{nopTool{}}, Hooks: withHooks(n)})
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
	a, _ := agent.New(&agent.Options{Model: m, Tools: agent.ToolList{nopTool{}}, Hooks: withHooks(5)})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Run(ctx, "x"); err != nil {
			b.Fatal(err)
		}
	}
}

// governedHooks registers n observing hooks of each of the four kinds; the
// last BeforeTool hook votes allow for read-only tools.
func governedHooks(n int) *hooks.Hooks {
	h := &hooks.Hooks{}
	for i := range n {
		last := i == n-1
		h.BeforeLLM(fmt.Sprintf("bllm-%d", i), func(ctx context.Context, ev *hooks.BeforeLLMEvent) (*hooks.LLMOverride, error) { return nil, nil })
		h.AfterLLM(fmt.Sprintf("allm-%d", i), func(ctx context.Context, ev *hooks.AfterLLMEvent) error { return nil })
		h.BeforeTool(fmt.Sprintf("btool-%d", i), func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
			if last && ev.Hints != nil && ev.Hints.ReadOnly {
				return hooks.Allow("read-only tool"), nil
			}
			return nil, nil
		})
		h.AfterTool(fmt.Sprintf("atool-%d", i), func(ctx context.Context, ev *hooks.AfterToolEvent) (*hooks.ToolOverride, error) { return nil, nil })
	}
	return h
}

// benchPolicy is a supervised policy of five rules that allow the calls of
// BenchmarkGoverned (or do not match them).
func benchPolicy(b *testing.B) approval.Authorizer {
	t := true
	p, err := policy.NewPolicy(policy.PolicySpec{
		Name: "bench", Autonomy: approval.Supervised,
		Rules: []policy.Rule{
			{ID: "weather-city", Tools: []string{"get_weather"}, Args: []policy.ArgCondition{{Field: "city", Regex: `^[A-Za-z .-]+$`}}, Decision: approval.Allow},
			{ID: "add-read-only", Tools: []string{"add"}, Hints: policy.HintConditions{ReadOnly: &t}, Decision: approval.Allow},
			{ID: "nap-ok", Tools: []string{"nap"}, Decision: approval.Allow},
			{ID: "no-etc", Tools: []string{"write", "edit"}, Args: []policy.ArgCondition{{Field: "path", PathPrefix: "/etc"}}, Decision: approval.Deny, Reason: "/etc is off limits"},
			{ID: "ask-network", Risks: []approval.Risk{approval.RiskNetwork}, Decision: approval.Ask},
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkGoverned measures the two-call turn of the shared benchmark
// workload (get_weather and add, typed tools, then the answer) without and
// with its governance: 5 hooks of each of the four kinds and a 5-rule
// policy. The difference is what governance costs per run.
func BenchmarkGoverned(b *testing.B) {
	type weatherIn struct {
		City string `json:"city" jsonschema:"the city"`
	}
	type addIn struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	ro := &tool.FuncOptions{Hints: &tool.Hints{ReadOnly: true, Idempotent: true}}
	tools := agent.ToolList{
		tool.Must("get_weather", "Get the current weather for a city.", func(ctx context.Context, in weatherIn) (string, error) {
			return "The weather in " + in.City + " is Sunny, 22C.", nil
		}, ro),
		tool.Must("add", "Add two integers.", func(ctx context.Context, in addIn) (string, error) {
			return fmt.Sprint(in.A + in.B), nil
		}, ro),
	}
	m := testkit.Script([]model.FuncCall{
		{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
		{ID: "call_2", Name: "add", Arguments: json.RawMessage(`{"a":2,"b":2}`)},
	})
	for _, governed := range []bool{false, true} {
		b.Run(fmt.Sprintf("governed=%v", governed), func(b *testing.B) {
			opts := agent.Options{Model: m, Tools: tools}
			if governed {
				opts.Hooks = governedHooks(5)
				opts.Authorizers = []approval.Authorizer{benchPolicy(b)}
			}
			a, err := agent.New(&opts)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if res, err := a.Run(ctx, "x"); err != nil || res.Status != agent.StatusDone {
					b.Fatal(res, err)
				}
			}
		})
	}
}

// BenchmarkCheckpointedBatch measures one turn of n tool calls with a
// checkpoint after the turn, after each finished call and after the
// results (Options.Checkpoint keeps each state, as a host's store does):
// every checkpoint copies the whole run's state, so the copying grows with
// the square of the calls per turn. checkpoint=false is the same turn
// without checkpoints, for the difference.
func BenchmarkCheckpointedBatch(b *testing.B) {
	for _, n := range []int{16, 128} {
		var calls []model.FuncCall
		for i := range n {
			calls = append(calls, model.FuncCall{ID: fmt.Sprintf("call_%d", i), Name: "nop", Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))})
		}
		for _, cp := range []bool{false, true} {
			b.Run(fmt.Sprintf("calls=%d/checkpoint=%v", n, cp), func(b *testing.B) {
				var kept []*agent.State
				opts := agent.Options{Model: testkit.Script(calls), Tools: agent.ToolList{nopTool{}}, MaxToolCalls: n}
				if cp {
					opts.Checkpoint = func(ctx context.Context, c agent.Checkpoint) error {
						kept = append(kept, c.State)
						return nil
					}
				}
				a, err := agent.New(&opts)
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					kept = kept[:0]
					if _, err := a.Run(ctx, "x"); err != nil {
						b.Fatal(err)
					}
				}
				if cp && len(kept) < n {
					b.Fatalf("%d checkpoints for %d calls", len(kept), n)
				}
			})
		}
	}
}
