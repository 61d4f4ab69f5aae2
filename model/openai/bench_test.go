package openai_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/internal/providertest"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/model/openai"
	"github.com/tollgate-dev/tollgate/tool"
)

// The benchmarks run the two-turn workload of providertest.BenchServer (two
// parallel tool calls, then the answer) on a local server: Floor* is a
// hand-written net/http + encoding/json loop, the others go through this
// package, with and without the agent. Compare each with its floor in one
// run: go test -run x -bench . -benchmem -count 6 | benchstat.

func benchTools() agent.ToolList {
	type weatherIn struct {
		City string `json:"city" jsonschema:"the city"`
	}
	type addIn struct {
		A int `json:"a"`
		B int `json:"b"`
	}
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

func benchFloor(b *testing.B, stream bool) {
	srv := providertest.NewBenchServer(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		text, err := providertest.FloorOpenAI(ctx, srv.URL, stream)
		if err != nil || text != providertest.BenchAnswer {
			b.Fatalf("%q, %v", text, err)
		}
	}
}

// BenchmarkFloor is the floor of BenchmarkRun: the workload as JSON
// requests and responses with net/http and encoding/json alone.
func BenchmarkFloor(b *testing.B) { benchFloor(b, false) }

// BenchmarkFloorSSE is the floor of BenchmarkStream: the same, streamed.
func BenchmarkFloorSSE(b *testing.B) { benchFloor(b, true) }

// generateOnly hides a model's Stream method.
type generateOnly struct{ m model.Model }

func (g generateOnly) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	return g.m.Generate(ctx, req)
}

func benchAgent(b *testing.B, wrap func(*openai.Model) model.Model) *agent.Agent {
	srv := providertest.NewBenchServer(b)
	m, err := openai.New(&openai.Options{BaseURL: srv.URL + "/v1", Model: "bench-model"})
	if err != nil {
		b.Fatal(err)
	}
	var mm model.Model = m
	if wrap != nil {
		mm = wrap(m)
	}
	a, err := agent.New(&agent.Options{Model: mm, Tools: benchTools()})
	if err != nil {
		b.Fatal(err)
	}
	return a
}

func runOnce(b *testing.B, a *agent.Agent) {
	res, err := a.Run(context.Background(), providertest.BenchQuestion)
	if err != nil || res.Status != agent.StatusDone || res.Text != providertest.BenchAnswer {
		b.Fatalf("%+v, %v", res, err)
	}
}

// BenchmarkRun is agent.Run on the workload with this provider.
func BenchmarkRun(b *testing.B) {
	a := benchAgent(b, nil)
	b.ReportAllocs()
	for b.Loop() {
		runOnce(b, a)
	}
}

// BenchmarkRunGenerateOnly is agent.Run with the model's Stream hidden.
func BenchmarkRunGenerateOnly(b *testing.B) {
	a := benchAgent(b, func(m *openai.Model) model.Model { return generateOnly{m} })
	b.ReportAllocs()
	for b.Loop() {
		runOnce(b, a)
	}
}

// BenchmarkStream is agent.Stream on the workload, reading every event.
func BenchmarkStream(b *testing.B) {
	a := benchAgent(b, nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		var res *agent.Result
		for ev, err := range a.Stream(ctx, providertest.BenchQuestion) {
			if err != nil {
				b.Fatal(err)
			}
			if ev.Kind == agent.EventDone {
				res = ev.Result
			}
		}
		if res == nil || res.Text != providertest.BenchAnswer {
			b.Fatalf("%+v", res)
		}
	}
}

func benchModel(b *testing.B, stream bool) {
	srv := providertest.NewBenchServer(b)
	m, err := openai.New(&openai.Options{BaseURL: srv.URL + "/v1", Model: "bench-model"})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		text, err := providertest.RunModel(ctx, m, stream)
		if err != nil || text != providertest.BenchAnswer {
			b.Fatalf("%q, %v", text, err)
		}
	}
}

// BenchmarkModelGenerate is the workload through Generate alone, without
// the agent: the provider's own cost over BenchmarkFloor.
func BenchmarkModelGenerate(b *testing.B) { benchModel(b, false) }

// BenchmarkModelStream is the workload through Stream alone, reading every
// chunk: the provider's own cost over BenchmarkFloorSSE.
func BenchmarkModelStream(b *testing.B) { benchModel(b, true) }
