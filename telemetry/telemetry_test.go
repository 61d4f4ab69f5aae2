package telemetry_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/telemetry"
	"github.com/tollgate-dev/tollgate/tool"
)

// secret is an argument value and a tool output; it must appear nowhere in the
// telemetry.
const secret = "s3cr3t-value-7f2a"

type pathArgs struct {
	Path string `json:"path"`
}

type tools []tool.Tool

func (t tools) Tools() []tool.Tool { return t }

// fixture builds an agent whose model asks, in its first turn, for two calls
// at once (read, allowed; delete, denied by the policy rule no-delete) and then
// answers. The middleware reports to an in-memory exporter and a manual reader.
func fixture(t *testing.T, policySrc string, opts ...fixtureOpt) (*agent.Agent, *tracetest.InMemoryExporter, *sdkmetric.ManualReader) {
	t.Helper()
	// Both calls must be in flight together: read runs until the policy has
	// seen delete, and the policy's first verdict on delete waits until read
	// has started.
	deleteSeen, readStarted := make(chan struct{}), make(chan struct{})
	var deleteOnce, readOnce sync.Once
	mk := func(name string, hints *tool.Hints) tool.Tool {
		tl, err := tool.New(name, name+" a file", func(ctx context.Context, in pathArgs) (string, error) {
			if name == "read" {
				readOnce.Do(func() { close(readStarted) })
				select {
				case <-deleteSeen:
				case <-ctx.Done():
					return "", ctx.Err()
				}
			}
			return "contents: " + secret, nil
		}, &tool.FuncOptions{Hints: hints})
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
	readTool := mk("read", &tool.Hints{ReadOnly: true})
	deleteTool := mk("delete", &tool.Hints{Destructive: true})
	turns := 0
	m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		turns++
		if turns == 1 {
			return model.Reply{
				ToolCalls: []model.FuncCall{
					{ID: "call_read", Name: "read", Arguments: pathArgs{Path: secret}},
					{ID: "call_delete", Name: "delete", Arguments: pathArgs{Path: secret}},
				},
				Usage: model.Usage{InputTokens: 120, OutputTokens: 30, TotalTokens: 150},
			}, nil
		}
		return model.Reply{Content: "done", Usage: model.Usage{InputTokens: 200, OutputTokens: 5, TotalTokens: 205}}, nil
	})
	p, _, err := policy.ParsePolicy("policy.yaml", strings.NewReader(policySrc))
	if err != nil {
		t.Fatal(err)
	}
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	topts := &telemetry.Options{TracerProvider: tp, MeterProvider: mp, ProviderName: "openai"}
	for _, o := range opts {
		if o.tel != nil {
			o.tel(topts)
		}
	}
	aopts := agent.Options{
		ID:        "helper-bot",
		Model:     m,
		ModelName: "gpt-test",
		Tools:     tools{readTool, deleteTool},
		Authorizers: []approval.Authorizer{approval.AuthorizerFunc(func(ctx context.Context, c approval.Call) (approval.Verdict, error) {
			if c.Tool == "delete" {
				first := false
				deleteOnce.Do(func() { first = true; close(deleteSeen) })
				if first {
					select {
					case <-readStarted:
					case <-ctx.Done():
						return approval.Verdict{}, ctx.Err()
					}
				}
			}
			return p.Authorize(ctx, c)
		})},
		Middleware: []agent.Middleware{telemetry.Middleware(topts)},
	}
	for _, o := range opts {
		if o.agent != nil {
			o.agent(&aopts)
		}
	}
	a, err := agent.New(&aopts)
	if err != nil {
		t.Fatal(err)
	}
	return a, exp, reader
}

// fixtureOpt changes the fixture's telemetry and agent options.
type fixtureOpt struct {
	tel   func(*telemetry.Options)
	agent func(*agent.Options)
}

const denyDelete = `
rules:
  - id: no-delete
    tool: delete
    decision: deny
    reason: nothing is deleted here
`

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

func wantAttrs(t *testing.T, s tracetest.SpanStub, want map[string]any) {
	t.Helper()
	got := attrs(s)
	for k, v := range want {
		gv, ok := got[attribute.Key(k)]
		if !ok {
			t.Errorf("%s: no attribute %s (have %v)", s.Name, k, s.Attributes)
			continue
		}
		if gv.Emit() != attribute.StringValue(anyString(v)).Emit() {
			t.Errorf("%s: %s = %s, want %v", s.Name, k, gv.Emit(), v)
		}
	}
}

func anyString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []string:
		return "[\"" + strings.Join(v, "\",\"") + "\"]"
	default:
		return attribute.IntValue(v.(int)).Emit()
	}
}

func TestSpanTreeOfParallelCallsOneDenied(t *testing.T) {
	a, exp, _ := fixture(t, denyDelete)
	res, err := a.Run(context.Background(), "tidy up", agent.WithRunID("run_42"))
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("run: %v, %+v", err, res)
	}
	spans := exp.GetSpans()
	byName := map[string]tracetest.SpanStub{}
	var names []string
	for _, s := range spans {
		byName[s.Name] = s
		names = append(names, s.Name)
	}
	slices.Sort(names)
	want := []string{"chat gpt-test", "chat gpt-test", "execute_tool delete", "execute_tool read", "invoke_agent helper-bot"}
	if !slices.Equal(names, want) {
		t.Fatalf("spans %q, want %q", names, want)
	}
	root := byName["invoke_agent helper-bot"]
	if root.Parent.IsValid() {
		t.Errorf("invoke_agent has a parent %v", root.Parent)
	}
	if root.SpanKind != trace.SpanKindInternal {
		t.Errorf("invoke_agent kind %v", root.SpanKind)
	}
	wantAttrs(t, root, map[string]any{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper-bot",
		"gen_ai.conversation.id": "run_42", "tollgate.run.status": "done",
	})
	var chats []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == "chat gpt-test" {
			chats = append(chats, s)
		}
		if s.Name != root.Name && s.Parent.SpanID() != root.SpanContext.SpanID() {
			t.Errorf("%s: parent %v, want invoke_agent %v", s.Name, s.Parent.SpanID(), root.SpanContext.SpanID())
		}
		if s.SpanContext.TraceID() != root.SpanContext.TraceID() {
			t.Errorf("%s: another trace", s.Name)
		}
	}
	slices.SortFunc(chats, func(x, y tracetest.SpanStub) int { return x.StartTime.Compare(y.StartTime) })
	if chats[0].SpanKind != trace.SpanKindClient {
		t.Errorf("chat kind %v", chats[0].SpanKind)
	}
	wantAttrs(t, chats[0], map[string]any{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-test",
		"gen_ai.response.model": "gpt-test", "gen_ai.response.finish_reasons": []string{"tool_calls"},
		"gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": 30, "tollgate.turn": 1,
	})
	wantAttrs(t, chats[1], map[string]any{"gen_ai.response.finish_reasons": []string{"stop"}, "gen_ai.usage.input_tokens": 200, "tollgate.turn": 2})

	read, del := byName["execute_tool read"], byName["execute_tool delete"]
	// Parallel: the two calls' spans overlap in time.
	if !read.StartTime.Before(del.EndTime) || !del.StartTime.Before(read.EndTime) {
		t.Errorf("the calls did not overlap: read %v..%v, delete %v..%v", read.StartTime, read.EndTime, del.StartTime, del.EndTime)
	}
	if !read.StartTime.After(chats[0].EndTime) || !chats[1].StartTime.After(read.EndTime) {
		t.Error("execute_tool spans are not between the two chat spans")
	}
	digest := approval.Digest([]byte(`{"path":"` + secret + `"}`))
	wantAttrs(t, read, map[string]any{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "read", "gen_ai.tool.call.id": "call_read",
		"tollgate.decision": "allowed", "tollgate.decision.source": "runtime:default", "tollgate.args.digest": digest,
	})
	if read.Status.Code == codes.Error {
		t.Errorf("read: status %v", read.Status)
	}
	wantAttrs(t, del, map[string]any{
		"gen_ai.tool.name": "delete", "gen_ai.tool.call.id": "call_delete", "tollgate.decision": "denied",
		"tollgate.decision.source": "rule:no-delete", "tollgate.rule.id": "no-delete", "error.type": "denied",
		"tollgate.args.digest": digest,
	})
	if del.Status.Code != codes.Error || del.Status.Description != "denied" {
		t.Errorf("delete: status %+v, want error \"denied\"", del.Status)
	}
	if _, ok := attrs(read)["tollgate.rule.id"]; ok {
		t.Error("read has a rule ID though no rule decided")
	}
	// No argument value or result anywhere.
	for _, s := range spans {
		for _, kv := range s.Attributes {
			if strings.Contains(kv.Value.Emit(), secret) {
				t.Errorf("%s: %s carries an argument value or a result: %s", s.Name, kv.Key, kv.Value.Emit())
			}
		}
		for _, ev := range s.Events {
			t.Errorf("%s: unexpected span event %q", s.Name, ev.Name)
		}
		if strings.Contains(s.Name+s.Status.Description, secret) {
			t.Errorf("span %q leaks an argument value", s.Name)
		}
	}
}

func TestMetrics(t *testing.T) {
	a, _, reader := fixture(t, denyDelete)
	if _, err := a.Run(context.Background(), "tidy up"); err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != "github.com/tollgate-dev/tollgate/telemetry" {
			t.Errorf("scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			got[m.Name] = m
		}
	}

	dur, ok := got["gen_ai.client.operation.duration"].Data.(metricdata.Histogram[float64])
	if !ok || got["gen_ai.client.operation.duration"].Unit != "s" {
		t.Fatalf("duration: %+v", got["gen_ai.client.operation.duration"])
	}
	var turns uint64
	for _, dp := range dur.DataPoints {
		turns += dp.Count
		if v, _ := dp.Attributes.Value("gen_ai.operation.name"); v.AsString() != "chat" {
			t.Errorf("duration point %v", dp.Attributes)
		}
		if v, _ := dp.Attributes.Value("gen_ai.provider.name"); v.AsString() != "openai" {
			t.Errorf("duration point %v", dp.Attributes)
		}
	}
	if turns != 2 {
		t.Errorf("duration counts %d turns, want 2", turns)
	}

	tok, ok := got["gen_ai.client.token.usage"].Data.(metricdata.Histogram[int64])
	if !ok || got["gen_ai.client.token.usage"].Unit != "{token}" {
		t.Fatalf("token usage: %+v", got["gen_ai.client.token.usage"])
	}
	sums := map[string]int64{}
	for _, dp := range tok.DataPoints {
		v, _ := dp.Attributes.Value("gen_ai.token.type")
		sums[v.AsString()] += dp.Sum
		p, _ := dp.Attributes.Value("gen_ai.provider.name")
		m, _ := dp.Attributes.Value("gen_ai.request.model")
		if p.AsString() != "openai" || m.AsString() != "gpt-test" {
			t.Errorf("token point %v lacks the provider or the model", dp.Attributes)
		}
	}
	if sums["input"] != 320 || sums["output"] != 35 {
		t.Errorf("token sums %v, want input 320, output 35", sums)
	}

	dec, ok := got["tollgate.tool.decisions"].Data.(metricdata.Sum[int64])
	if !ok || !dec.IsMonotonic {
		t.Fatalf("decisions: %+v", got["tollgate.tool.decisions"])
	}
	counts := map[string]int64{}
	for _, dp := range dec.DataPoints {
		o, _ := dp.Attributes.Value("tollgate.decision")
		n, _ := dp.Attributes.Value("gen_ai.tool.name")
		r, _ := dp.Attributes.Value("tollgate.rule.id")
		counts[o.AsString()+" "+n.AsString()+" "+r.AsString()] += dp.Value
	}
	want := map[string]int64{"allowed read ": 1, "denied delete no-delete": 1}
	if len(counts) != len(want) || counts["allowed read "] != 1 || counts["denied delete no-delete"] != 1 {
		t.Errorf("decisions %v, want %v", counts, want)
	}
}

// A call that asks for approval: its span carries the request's ID, and the
// resumed call's span the same ID and who answered.
func TestPendingAndAnsweredCallCarryTheApprovalID(t *testing.T) {
	a, exp, reader := fixture(t, `
rules:
  - id: ask-delete
    tool: delete
    decision: ask
    reason: a person decides
`)
	res, err := a.Run(context.Background(), "tidy up")
	if err != nil || res.Status != agent.StatusPending || len(res.Pending) != 1 {
		t.Fatalf("run: %v, %+v", err, res)
	}
	reqID := res.Pending[0].ID
	var pending tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "execute_tool delete" {
			pending = s
		}
	}
	wantAttrs(t, pending, map[string]any{
		"tollgate.decision": "pending", "tollgate.approval.id": reqID,
		"tollgate.decision.source": "rule:ask-delete", "tollgate.rule.id": "ask-delete",
	})
	if pending.Status.Code == codes.Error {
		t.Errorf("a pending call is not an error: %+v", pending.Status)
	}
	exp.Reset()
	res, err = a.Resume(context.Background(), res.State, tool.Answer{ID: reqID, OK: true, By: "alice", Actor: tool.PrincipalOf("person:root")})
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("resume: %v, %+v", err, res)
	}
	var answered, root tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		switch s.Name {
		case "execute_tool delete":
			answered = s
		case "invoke_agent helper-bot":
			root = s
		}
	}
	wantAttrs(t, root, map[string]any{"tollgate.run.resume": "true"})
	wantAttrs(t, answered, map[string]any{
		"tollgate.decision": "approved", "tollgate.approval.id": reqID, "tollgate.approval.by": "person:alice",
		"tollgate.approval.actor": "person:root",
	})
	if answered.Parent.SpanID() != root.SpanContext.SpanID() {
		t.Error("the answered call's span is not under the resume's invoke_agent span")
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "tollgate.tool.decisions" {
				for _, dp := range sum.DataPoints {
					o, _ := dp.Attributes.Value("tollgate.decision")
					counts[o.AsString()] += dp.Value
				}
			}
		}
	}
	if counts["pending"] != 1 || counts["approved"] != 1 || counts["allowed"] != 1 {
		t.Errorf("decisions %v, want allowed 1, pending 1, approved 1", counts)
	}
}

// A tool name the model invented is not a metric series of its own.
func TestUnknownToolIsOtherInMetrics(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	turns := 0
	m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		turns++
		if turns == 1 {
			return model.Reply{ToolCalls: []model.FuncCall{{Name: "no_such_tool_" + secret}}}, nil
		}
		return model.Reply{Content: "ok"}, nil
	})
	a, err := agent.New(&agent.Options{Model: m, Middleware: []agent.Middleware{telemetry.Middleware(&telemetry.Options{MeterProvider: mp})}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "tollgate.tool.decisions" {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				n, _ := dp.Attributes.Value("gen_ai.tool.name")
				o, _ := dp.Attributes.Value("tollgate.decision")
				if n.AsString() != "_OTHER" || o.AsString() != "unknown_tool" {
					t.Errorf("decision point %v", dp.Attributes)
				}
				found = true
			}
		}
	}
	if !found {
		t.Error("no decision counted")
	}
}

// nil options: a working no-op middleware.
func TestNilOptions(t *testing.T) {
	m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		return model.Reply{Content: "hi"}, nil
	})
	a, err := agent.New(&agent.Options{Model: m, Middleware: []agent.Middleware{telemetry.Middleware(nil)}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background(), "go")
	if err != nil || res.Text != "hi" {
		t.Fatalf("%v %+v", err, res)
	}
}

// A call that waits for an answer through WaitFor has a wait_for_answer span
// under its execute_tool span, with the request and who answered.
func TestWaitForAnswerSpan(t *testing.T) {
	a, exp, _ := fixture(t, `
rules:
  - id: ask-delete
    tool: delete
    decision: ask
    reason: a person decides
`, fixtureOpt{agent: func(o *agent.Options) {
		o.WaitFor = func(ctx context.Context, req tool.Request) (tool.Answer, error) {
			if !trace.SpanContextFromContext(ctx).IsValid() {
				t.Error("WaitFor's context carries no span")
			}
			return tool.Answer{ID: req.ID, OK: false, By: "bob", Reason: "no"}, nil
		}
	}})
	res, err := a.Run(context.Background(), "tidy up")
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("run: %v, %+v", err, res)
	}
	var call, wait tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		switch s.Name {
		case "execute_tool delete":
			call = s
		case "wait_for_answer":
			wait = s
		}
	}
	if wait.Name == "" {
		t.Fatalf("no wait_for_answer span among %d spans", len(exp.GetSpans()))
	}
	if wait.Parent.SpanID() != call.SpanContext.SpanID() {
		t.Error("wait_for_answer is not a child of the call's execute_tool span")
	}
	wantAttrs(t, wait, map[string]any{"tollgate.request.kind": "approval", "tollgate.answer.approved": "false", "tollgate.approval.by": "person:bob"})
	if _, ok := attrs(wait)["tollgate.approval.actor"]; ok {
		t.Error("an answer nobody gave for someone else has an actor attribute")
	}
	if id := attrs(wait)["tollgate.approval.id"].AsString(); !strings.HasPrefix(id, "req_") {
		t.Errorf("wait span approval id %q, want the request's", id)
	}
	wantAttrs(t, call, map[string]any{"tollgate.decision": "declined"})
}

// Argument values reach a span only when RecordArguments asks for them, and
// then cut to MaxRecordedArguments.
func TestRecordArgumentsIsOptIn(t *testing.T) {
	for _, record := range []bool{false, true} {
		a, exp, _ := fixture(t, denyDelete, fixtureOpt{tel: func(o *telemetry.Options) { o.RecordArguments = record }})
		if _, err := a.Run(context.Background(), "tidy up"); err != nil {
			t.Fatal(err)
		}
		for _, s := range exp.GetSpans() {
			if !strings.HasPrefix(s.Name, "execute_tool") {
				continue
			}
			v, ok := attrs(s)["gen_ai.tool.call.arguments"]
			switch {
			case !record && ok:
				t.Errorf("%s: arguments recorded without RecordArguments: %s", s.Name, v.Emit())
			case record && (!ok || !strings.Contains(v.AsString(), secret)):
				t.Errorf("%s: arguments %q, want the call's arguments", s.Name, v.AsString())
			}
		}
	}
	long := strings.Repeat("é", 8<<10)
	a, exp, _ := fixture(t, denyDelete, fixtureOpt{tel: func(o *telemetry.Options) { o.RecordArguments = true }}, fixtureOpt{agent: func(o *agent.Options) {
		o.Hooks = (&hooks.Hooks{}).BeforeTool("long", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
			b, _ := json.Marshal(pathArgs{Path: long})
			return &hooks.ToolOverride{Args: b}, nil
		})
	}})
	if _, err := a.Run(context.Background(), "tidy up"); err != nil {
		t.Fatal(err)
	}
	for _, s := range exp.GetSpans() {
		if s.Name == "execute_tool read" {
			v := attrs(s)["gen_ai.tool.call.arguments"].AsString()
			if len(v) > 8<<10 || !utf8.ValidString(v) || !strings.HasSuffix(v, "…") {
				t.Errorf("long arguments recorded as %d bytes (valid UTF-8 %v), want at most %d ending in …", len(v), utf8.ValidString(v), 8<<10)
			}
		}
	}
}

// decisionCounts sums tollgate.tool.decisions by outcome.
func decisionCounts(t *testing.T, reader *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "tollgate.tool.decisions" {
				for _, dp := range sum.DataPoints {
					o, _ := dp.Attributes.Value("tollgate.decision")
					counts[o.AsString()] += dp.Value
				}
			}
		}
	}
	return counts
}

// A call answered through WaitFor had neither the approval attributes on its
// execute_tool span nor a pending point in tollgate.tool.decisions, unlike
// the same call halted and resumed. Both paths now tell the same: pending
// counted (with the rule that asked), then the final outcome, and the call's
// span names the request and who answered.
func TestWaitForTellsWhatHaltAndResumeTell(t *testing.T) {
	a, exp, reader := fixture(t, `
rules:
  - id: ask-delete
    tool: delete
    decision: ask
    reason: a person decides
`, fixtureOpt{agent: func(o *agent.Options) {
		o.WaitFor = func(ctx context.Context, req tool.Request) (tool.Answer, error) {
			return tool.Answer{ID: req.ID, OK: true, By: "alice", Actor: tool.PrincipalOf("person:root")}, nil
		}
	}})
	res, err := a.Run(context.Background(), "tidy up")
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("run: %v, %+v", err, res)
	}
	var call, wait tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		switch s.Name {
		case "execute_tool delete":
			call = s
		case "wait_for_answer":
			wait = s
		}
	}
	reqID := attrs(wait)["tollgate.approval.id"].AsString()
	if !strings.HasPrefix(reqID, "req_") {
		t.Fatalf("wait span approval id %q", reqID)
	}
	wantAttrs(t, call, map[string]any{
		"tollgate.decision": "approved", "tollgate.approval.id": reqID, "tollgate.approval.by": "person:alice",
		"tollgate.approval.actor": "person:root", "tollgate.decision.source": "person:alice",
	})
	if _, ok := attrs(call)["tollgate.rule.id"]; ok {
		t.Error("the approved call's span keeps the asking rule as if it had decided")
	}
	if got := decisionCounts(t, reader); got["pending"] != 1 || got["approved"] != 1 || got["allowed"] != 1 || len(got) != 3 {
		t.Errorf("decisions %v, want allowed 1, pending 1, approved 1", got)
	}
	// The pending point names the rule that asked, as on a halt.
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "tollgate.tool.decisions" {
				for _, dp := range sum.DataPoints {
					o, _ := dp.Attributes.Value("tollgate.decision")
					r, _ := dp.Attributes.Value("tollgate.rule.id")
					if o.AsString() == "pending" {
						found = r.AsString() == "ask-delete"
					}
				}
			}
		}
	}
	if !found {
		t.Error("the pending point does not name the rule ask-delete")
	}
}
