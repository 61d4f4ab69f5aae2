package mcpgateway_test

import (
	"fmt"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tollgate-dev/tollgate/mcpgateway"
	"github.com/tollgate-dev/tollgate/telemetry"
)

// spanOf returns the one span named name, with its attributes as strings.
func spanOf(t *testing.T, exp *tracetest.InMemoryExporter, name string) (tracetest.SpanStub, map[string]string) {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans named %q among %d, want 1", len(found), name, len(exp.GetSpans()))
	}
	attrs := map[string]string{}
	for _, kv := range found[0].Attributes {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	return found[0], attrs
}

// Every tools/call through the gateway gets the execute_tool span of a
// run's call, with its decision, who made it, the arguments' digest and
// the call's ID as the record has them, and the MCP session, method,
// protocol version and client besides; a call denied (a tool left out of
// tools/list included) is a failed span naming the rule.
func TestCallsAreTraced(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	f := setup(t, nil, &mcpgateway.Options{Tracer: telemetry.NewTracer(&telemetry.Options{TracerProvider: tp}), RunID: "gw_test"}, nil)

	call(t, f.client, "echo", map[string]any{"text": "hi"})
	rec := f.records.last(t, "mcp__up__echo")
	s, attrs := spanOf(t, exp, "execute_tool mcp__up__echo")
	for k, want := range map[string]string{
		"gen_ai.operation.name":       "execute_tool",
		"gen_ai.tool.name":            "mcp__up__echo",
		"gen_ai.tool.call.id":         rec.ID,
		"tollgate.decision":           "allowed",
		"tollgate.decision.source":    "runtime:default",
		"tollgate.args.digest":        rec.ArgsDigest,
		"mcp.method.name":             "tools/call",
		"mcp.session.id":              "gw_test",
		"mcp.protocol.version":        f.client.InitializeResult().ProtocolVersion,
		"tollgate.mcp.client.name":    "client",
		"tollgate.mcp.client.version": "1",
	} {
		if attrs[k] != want {
			t.Errorf("%s = %q, want %q (all: %v)", k, attrs[k], want, attrs)
		}
	}
	if s.Status.Code == codes.Error {
		t.Errorf("allowed call's span failed: %v", s.Status)
	}
	if _, ok := attrs["gen_ai.tool.call.arguments"]; ok {
		t.Error("the arguments are on the span without being asked for")
	}
	if _, ok := attrs["tollgate.turn"]; ok {
		t.Error("a client's call has a model turn")
	}

	call(t, f.client, "rm", map[string]any{"path": "x"})
	s, attrs = spanOf(t, exp, "execute_tool mcp__up__rm")
	if attrs["tollgate.decision"] != "denied" || attrs["tollgate.rule.id"] != "no-rm" || attrs["error.type"] != "denied" || s.Status.Code != codes.Error {
		t.Errorf("denied call's span: %v, status %v", attrs, s.Status)
	}

	// An ask no one can answer here is refused by the runtime after the
	// rule that asked.
	call(t, f.client, "push", map[string]any{})
	_, attrs = spanOf(t, exp, "execute_tool mcp__up__push")
	if got := fmt.Sprint(attrs["tollgate.decision"], " ", attrs["tollgate.decision.source"]); got != "denied runtime" {
		t.Errorf("refused ask's span: %s (all: %v)", got, attrs)
	}
}
