package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/gate"
)

// Tracer traces and counts the tool calls of a caller of package gate other
// than the agent loop (an MCP gateway's tools/call): each call gets the
// execute_tool span and the tollgate.tool.decisions count that [Middleware]
// gives a run's call, with the same attributes (see the package
// documentation), and the caller's own besides. It is safe for concurrent
// use.
type Tracer struct {
	in *instruments
}

// NewTracer returns a tracer with opts' providers (nil *Options: no spans,
// no metrics; ProviderName is not used).
func NewTracer(opts *Options) *Tracer { return &Tracer{in: newInstruments(opts)} }

// Call runs call, which governs one tool call (gate.Gate.Decide, then
// Complete or End), under an execute_tool span named after info.Call.Name:
// attrs are added to the span (an MCP session's and client's), and the
// outcome call returns sets the decision attributes and is counted as a
// run's call's is (a Record: its decision, digests and error.type; a
// Pending call: decision pending and its request's ID). info.Answer is the
// answer the call is taken up again with, if any. The span is ctx's child
// and ctx passed to call has it.
func (t *Tracer) Call(ctx context.Context, info *agent.CallInfo, attrs []attribute.KeyValue, call func(ctx context.Context) gate.Ruling) gate.Ruling {
	return t.in.call(func(ctx context.Context, _ *agent.CallInfo) gate.Ruling {
		span := trace.SpanFromContext(ctx)
		span.SetAttributes(attrs...)
		out := call(ctx)
		if out.Record != nil && out.Record.ID != "" {
			span.SetAttributes(semconv.GenAIToolCallID(clip(out.Record.ID)))
		}
		return out
	})(ctx, info)
}
