package telemetry_test

import (
	"context"
	"fmt"
	"slices"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/telemetry"
)

// Tracing an agent: pass your tracer provider (and meter provider) in the
// options and put the middleware first. Here the spans go to an in-memory
// exporter; a program would use an OTLP exporter.
func ExampleMiddleware() {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())

	m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		return model.Reply{Content: "hello", Usage: model.Usage{InputTokens: 12, OutputTokens: 3}}, nil
	})
	a, err := agent.New(&agent.Options{
		ID: "greeter", Model: m, ModelName: "gpt-4.1-mini",
		Middleware: []agent.Middleware{telemetry.Middleware(&telemetry.Options{TracerProvider: tp, ProviderName: "openai"})},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := a.Run(context.Background(), "say hello", agent.WithRunID("run_1")); err != nil {
		fmt.Println(err)
		return
	}
	spans := exp.GetSpans()
	slices.SortFunc(spans, func(x, y tracetest.SpanStub) int { return x.StartTime.Compare(y.StartTime) })
	for _, s := range spans {
		fmt.Print(s.Name, " (", s.SpanKind, ")")
		for _, kv := range s.Attributes {
			switch kv.Key {
			case "gen_ai.conversation.id", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens":
				fmt.Print(" ", kv.Key, "=", kv.Value.Emit())
			}
		}
		fmt.Println()
	}
	// Output:
	// invoke_agent greeter (internal) gen_ai.conversation.id=run_1
	// chat gpt-4.1-mini (client) gen_ai.conversation.id=run_1 gen_ai.usage.input_tokens=12 gen_ai.usage.output_tokens=3
}
