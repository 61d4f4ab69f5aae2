package main

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/benchwork"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/model/anthropic"
	"github.com/tollgate-dev/tollgate/model/openai"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/tool"
)

// Providers are the values of -provider besides "both", in report order.
var providers = []string{"openai", "anthropic"}

// driver is one way of running the workload once, to its final answer.
type driver struct {
	provider string // "openai" or "anthropic"
	name     string // "floor", "tollgate", ...
	wire     string // what it asks the mock for: "json" or "sse"
	desc     string
	// run does one run of the workload and returns its final answer; the
	// suite checks it against benchwork.Answer.
	run func(ctx context.Context) (string, error)
}

// driverNames are the drivers of each provider, in report order.
var driverNames = []string{
	"floor", "floor-sse",
	"tollgate", "tollgate-generate", "tollgate-stream", "tollgate-governed",
	"model-generate", "model-stream",
}

// sameWireFloor is the floor a driver's ratios are taken to: the one that
// asks for the same wire format.
func sameWireFloor(wire string) string {
	if wire == "sse" {
		return "floor-sse"
	}
	return "floor"
}

// newDrivers makes the named drivers of provider against the mock at base
// (its root).
func newDrivers(provider, base string, names []string) ([]*driver, error) {
	var out []*driver
	for _, n := range names {
		d, err := newDriver(provider, base, n)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", provider, n, err)
		}
		out = append(out, d)
	}
	return out, nil
}

func newDriver(provider, base, name string) (*driver, error) {
	d := &driver{provider: provider, name: name, wire: "json"}
	floor := benchwork.FloorOpenAI
	if provider == "anthropic" {
		floor = benchwork.FloorAnthropic
	}
	switch name {
	case "floor":
		d.desc = "bare net/http + encoding/json, tools called in line"
		d.run = func(ctx context.Context) (string, error) { return floor(ctx, base, false) }
		return d, nil
	case "floor-sse":
		d.wire, d.desc = "sse", "the floor over SSE (bufio.Scanner + encoding/json per event)"
		d.run = func(ctx context.Context) (string, error) { return floor(ctx, base, true) }
		return d, nil
	}
	m, err := newModel(provider, base)
	if err != nil {
		return nil, err
	}
	switch name {
	case "model-generate":
		d.desc = "the provider's Generate alone, no agent, tools called in line"
		d.run = func(ctx context.Context) (string, error) { return benchwork.RunModel(ctx, m, false) }
		return d, nil
	case "model-stream":
		d.wire, d.desc = "sse", "the provider's Stream alone, reading every chunk, no agent"
		d.run = func(ctx context.Context) (string, error) { return benchwork.RunModel(ctx, m, true) }
		return d, nil
	}
	opts := agent.Options{Model: m, ModelName: "bench-model", Tools: benchTools()}
	switch name {
	case "tollgate":
		d.desc = "agent.Run, 2 tools via tool.New, no hooks"
	case "tollgate-generate":
		d.desc = "agent.Run with the model's Stream hidden, so that only Generate can be called"
		opts.Model = generateOnly{m}
	case "tollgate-stream":
		d.wire, d.desc = "sse", "agent.Stream, reading every event"
	case "tollgate-governed":
		d.desc = "agent.Run with 5 hooks of each of the 4 stages and a 5-rule supervised policy that allows"
		h, calls := governedHooks(5)
		opts.Hooks = h
		opts.Authorizers = []approval.Authorizer{benchPolicy()}
		a, err := agent.New(&opts)
		if err != nil {
			return nil, err
		}
		// Each run calls every hook once per model turn (2) or per tool
		// call (2): a run that calls fewer was not governed.
		const want = 5 * 4 * 2
		d.run = func(ctx context.Context) (string, error) {
			before := calls.Load()
			text, err := runAgent(ctx, a)
			if got := calls.Load() - before; err == nil && got != want {
				return text, fmt.Errorf("the run called its hooks %d times, want %d", got, want)
			}
			return text, err
		}
		return d, nil
	default:
		return nil, fmt.Errorf("no driver %q (have %v)", name, driverNames)
	}
	a, err := agent.New(&opts)
	if err != nil {
		return nil, err
	}
	if name == "tollgate-stream" {
		d.run = func(ctx context.Context) (string, error) { return streamAgent(ctx, a) }
	} else {
		d.run = func(ctx context.Context) (string, error) { return runAgent(ctx, a) }
	}
	return d, nil
}

// newModel opens provider's model on the mock, with no key (the mock is on
// loopback and wants none).
func newModel(provider, base string) (model.Model, error) {
	if provider == "anthropic" {
		return anthropic.New(&anthropic.Options{BaseURL: base, Model: "bench-model"})
	}
	return openai.New(&openai.Options{BaseURL: base + "/v1", Model: "bench-model"})
}

// generateOnly hides a model's Stream method, so that the agent can only
// call Generate.
type generateOnly struct{ m model.Model }

func (g generateOnly) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	return g.m.Generate(ctx, req)
}

type weatherIn struct {
	City string `json:"city" jsonschema:"the city"`
}

type addIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

// benchTools are the workload's two tools as typed Go functions, read-only
// and idempotent, as the shared harness builds them.
func benchTools() agent.ToolList {
	ro := &tool.FuncOptions{Hints: &tool.Hints{ReadOnly: true, Idempotent: true}}
	return agent.ToolList{
		tool.Must("get_weather", "Get the current weather for a city.", func(ctx context.Context, in weatherIn) (string, error) {
			return fmt.Sprintf("The weather in %s is Sunny, 22C.", in.City), nil
		}, ro),
		tool.Must("add", "Add two integers.", func(ctx context.Context, in addIn) (string, error) {
			return strconv.Itoa(in.A + in.B), nil
		}, ro),
	}
}

// governedHooks registers n observing hooks of each of the four stages of
// seed 002; the last BeforeTool hook votes allow for a read-only tool. The
// counter counts the hooks' calls.
func governedHooks(n int) (*hooks.Hooks, *atomic.Int64) {
	var calls atomic.Int64
	h := &hooks.Hooks{}
	for i := range n {
		h.BeforeLLM(fmt.Sprintf("bllm-%d", i), func(ctx context.Context, ev *hooks.BeforeLLMEvent) (*hooks.LLMOverride, error) {
			calls.Add(1)
			return nil, nil
		})
		h.AfterLLM(fmt.Sprintf("allm-%d", i), func(ctx context.Context, ev *hooks.AfterLLMEvent) error {
			calls.Add(1)
			return nil
		})
		last := i == n-1
		h.BeforeTool(fmt.Sprintf("btool-%d", i), func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
			calls.Add(1)
			if last && ev.Hints != nil && ev.Hints.ReadOnly {
				return hooks.Allow("read-only tool"), nil
			}
			return nil, nil
		})
		h.AfterTool(fmt.Sprintf("atool-%d", i), func(ctx context.Context, ev *hooks.AfterToolEvent) (*hooks.ToolOverride, error) {
			calls.Add(1)
			return nil, nil
		})
	}
	return h, &calls
}

// benchPolicy is a supervised approval policy of five rules, all of which
// allow the workload's calls or do not match them.
func benchPolicy() approval.Authorizer {
	t := true
	p, err := policy.NewPolicy(policy.PolicySpec{
		Name:     "bench",
		Autonomy: approval.Supervised,
		Rules: []policy.Rule{
			{ID: "weather-city", Tools: []string{"get_weather"}, Args: []policy.ArgCondition{{Field: "city", Regex: `^[A-Za-z .-]+$`}}, Decision: approval.Allow},
			{ID: "add-read-only", Tools: []string{"add"}, Hints: policy.HintConditions{ReadOnly: &t}, Decision: approval.Allow},
			{ID: "nap-ok", Tools: []string{"nap"}, Decision: approval.Allow},
			{ID: "no-etc", Tools: []string{"write", "edit"}, Args: []policy.ArgCondition{{Field: "path", PathPrefix: "/etc"}}, Decision: approval.Deny, Reason: "/etc is off limits"},
			{ID: "ask-network", Risks: []approval.Risk{approval.RiskNetwork}, Decision: approval.Ask},
		},
	})
	if err != nil {
		panic(err) // a constant spec
	}
	return p
}

// runAgent is one agent.Run; a run that does not end done is an error.
func runAgent(ctx context.Context, a *agent.Agent) (string, error) {
	res, err := a.Run(ctx, benchwork.Question)
	if err != nil {
		return "", err
	}
	if res.Status != agent.StatusDone {
		return res.Text, fmt.Errorf("status %s: %s", res.Status, res.Reason)
	}
	return res.Text, nil
}

// streamAgent is one agent.Stream, reading every event.
func streamAgent(ctx context.Context, a *agent.Agent) (string, error) {
	var res *agent.Result
	for ev, err := range a.Stream(ctx, benchwork.Question) {
		if err != nil {
			return "", err
		}
		if ev.Kind == agent.EventDone {
			res = ev.Result
		}
	}
	if res == nil {
		return "", fmt.Errorf("the stream ended without its done event")
	}
	if res.Status != agent.StatusDone {
		return res.Text, fmt.Errorf("status %s: %s", res.Status, res.Reason)
	}
	return res.Text, nil
}
