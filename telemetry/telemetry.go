// Package telemetry traces and measures an agent through its middleware seam
// ([agent.Middleware]): OpenTelemetry spans and metrics per the GenAI semantic
// conventions (semconv v1.41.0, the gen_ai namespace), plus tollgate's own
// governance attributes. It never reads the global OpenTelemetry providers:
// the caller passes its own in [Options] (nil: no spans, no metrics).
//
// Spans, one tree per run or resume:
//
//	invoke_agent {agent}     INTERNAL  gen_ai.operation.name=invoke_agent, gen_ai.agent.name,
//	│                                  gen_ai.conversation.id (the run ID), gen_ai.request.model,
//	│                                  tollgate.run.resume, tollgate.run.status
//	├── chat {model}         CLIENT    gen_ai.operation.name=chat, gen_ai.provider.name (when known),
//	│                                  gen_ai.request.model, gen_ai.response.model,
//	│                                  gen_ai.response.finish_reasons, gen_ai.usage.input_tokens,
//	│                                  gen_ai.usage.output_tokens, tollgate.turn
//	└── execute_tool {tool}  INTERNAL  gen_ai.operation.name=execute_tool, gen_ai.tool.name,
//	                                   gen_ai.tool.call.id, error.type, tollgate.turn,
//	                                   tollgate.decision, tollgate.decision.source, tollgate.rule.id,
//	                                   tollgate.hook.name, tollgate.approval.id, tollgate.approval.by,
//	                                   tollgate.args.digest, tollgate.args.requested_digest,
//	                                   gen_ai.tool.call.arguments (opt-in)
//
// The execute_tool spans of one turn are siblings under invoke_agent (they run
// concurrently), after the chat span of the turn that asked for them. A call
// that waits for an answer through agent.Options.WaitFor has a child span
//
//	wait_for_answer          INTERNAL  tollgate.approval.id, tollgate.request.kind,
//	                                   tollgate.answer.approved, tollgate.approval.by, error.type
//
// and its execute_tool span, like that of a call resumed with an answer after
// a halt, has tollgate.approval.id and, once answered, tollgate.approval.by.
//
// tollgate's own attributes (governance has no semantic convention):
// tollgate.decision is the call's outcome (gate.Outcome: "allowed",
// "denied", "pending", ...); tollgate.decision.source the text form of the
// principal that decided ("rule:no-rm", "hook:deny", "person:alice",
// "runtime:default"); tollgate.rule.id and tollgate.hook.name the rule or
// hook that decided, when one did; tollgate.approval.id the pending request
// a call raised or its answer answers; tollgate.approval.by who answered it
// ("person:alice") and tollgate.approval.actor who gave that answer on their
// behalf (an administrator), only when someone did; tollgate.request.kind
// the request's kind ("approval", "input") and tollgate.answer.approved
// whether the answer approved; tollgate.args.digest the approval.Digest of
// the arguments as executed (for a pending call, as asked about) and
// tollgate.args.requested_digest that of the arguments as the model wrote
// them, only when a rewrite or an edit changed them; tollgate.turn the
// model turn, from 1; tollgate.run.resume true on a resume's invoke_agent
// span, and tollgate.run.status how the run ended (agent.Status).
//
// Argument values, tool results, prompts, model text, decision reasons and
// error messages are never recorded (argument values only when
// [Options].RecordArguments asks for them): they may carry secrets, and hooks,
// tools and the model may echo them. What identifies the arguments is their digest
// (approval.Digest). A failed span's status description is its error.type.
//
// Metrics:
//
//   - gen_ai.client.operation.duration (histogram, s): each model turn, by
//     gen_ai.operation.name=chat, gen_ai.provider.name, gen_ai.request.model,
//     gen_ai.response.model and error.type. A turn includes its BeforeLLM and
//     AfterLLM hooks.
//   - gen_ai.client.token.usage (histogram, {token}): each turn's input and
//     output tokens, by gen_ai.token.type (input, output) and the attributes above.
//   - tollgate.tool.decisions (counter, {decision}): each tool call's outcome,
//     by tollgate.decision (the outcome), gen_ai.tool.name ("_OTHER" for a
//     tool that does not exist, so that a model cannot grow the series without
//     bound), and tollgate.rule.id or tollgate.hook.name when one decided. A
//     call that goes pending and is later answered counts twice: pending, then
//     its final outcome.
//
// Histogram bucket boundaries are the ones the GenAI conventions advise.
//
// The calls that a caller of package gate governs outside the agent loop
// (package mcpgateway's tools/call) get the same execute_tool span and
// decision count from [Tracer], with the caller's own attributes (the MCP
// session and client: tollgate.mcp.client.name and
// tollgate.mcp.client.version, as given in initialize) and no tollgate.turn.
// The tracer and meter come from the providers under the instrumentation
// scope github.com/tollgate-dev/tollgate/telemetry.
package telemetry

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// answerAttrs are the attributes naming who answered: by and, when someone
// acted on by's behalf, the actor.
func answerAttrs(ans tool.Answer) []attribute.KeyValue {
	var out []attribute.KeyValue
	if who := ans.Who(); !who.IsZero() {
		out = append(out, keyApprovalBy.String(clip(who.String())))
	}
	if !ans.Actor.IsZero() {
		out = append(out, keyApprovalActor.String(clip(ans.Actor.String())))
	}
	return out
}

// scopeName is the instrumentation scope of the tracer and meter this package
// takes from the providers.
const scopeName = "github.com/tollgate-dev/tollgate/telemetry"

// tollgate's own attribute keys: governance has no semantic convention.
const (
	// keyDecision is the call's outcome (gate.Outcome: "allowed", "denied",
	// "pending", ...).
	keyDecision = attribute.Key("tollgate.decision")
	// keyDecisionSource is the text form of the principal that decided
	// ("rule:no-rm", "hook:deny", "person:alice", "runtime:default").
	keyDecisionSource = attribute.Key("tollgate.decision.source")
	// keyRuleID is the ID of the policy rule that decided, when one did.
	keyRuleID = attribute.Key("tollgate.rule.id")
	// keyHookName is the name of the hook that decided, when one did.
	keyHookName = attribute.Key("tollgate.hook.name")
	// keyApprovalID is the ID of the pending request a call raised, or of the
	// one its answer answers.
	keyApprovalID = attribute.Key("tollgate.approval.id")
	// keyApprovalBy is the text form of who answered the pending request
	// (tool.Answer.By: "person:alice").
	keyApprovalBy = attribute.Key("tollgate.approval.by")
	// keyApprovalActor is the text form of who gave the answer on behalf of
	// keyApprovalBy's principal (tool.Answer.Actor: an administrator),
	// present only when someone did.
	keyApprovalActor = attribute.Key("tollgate.approval.actor")
	// keyRequestKind is the kind of a pending request (tool.Request.Kind:
	// "approval", "input"), on wait_for_answer spans.
	keyRequestKind = attribute.Key("tollgate.request.kind")
	// keyAnswerApproved is whether the answer approved (tool.Answer.OK), on
	// wait_for_answer spans.
	keyAnswerApproved = attribute.Key("tollgate.answer.approved")
	// keyArgsDigest is approval.Digest of the arguments as executed (or, for a
	// pending call, of the arguments the request is about).
	keyArgsDigest = attribute.Key("tollgate.args.digest")
	// keyRequestedDigest is approval.Digest of the arguments as the model wrote
	// them; set only when a rewrite or an edit changed them.
	keyRequestedDigest = attribute.Key("tollgate.args.requested_digest")
	// keyTurn is the 1-based model turn.
	keyTurn = attribute.Key("tollgate.turn")
	// keyRunResume is true on the invoke_agent span of a resume.
	keyRunResume = attribute.Key("tollgate.run.resume")
	// keyRunStatus is how the run ended (agent.Status).
	keyRunStatus = attribute.Key("tollgate.run.status")
)

// decisionsMetric is the name of the counter of tool call decisions.
const decisionsMetric = "tollgate.tool.decisions"

// maxName bounds the tool and model names put in span names and attributes
// (bytes); the model chooses tool names, and a longer one is cut.
const maxName = 256

// Advised bucket boundaries of the GenAI metric conventions.
var (
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
)

// Options configures [Middleware]. A nil *Options is the same as the zero
// value: no spans and no metrics.
type Options struct {
	// TracerProvider receives the spans; nil: none (a no-op provider).
	TracerProvider trace.TracerProvider
	// MeterProvider receives the metrics; nil: none (a no-op provider).
	MeterProvider metric.MeterProvider
	// ProviderName is the gen_ai.provider.name of the agent's model ("openai",
	// "anthropic", see semconv's GenAIProviderName values); empty: unknown,
	// and the attribute is left off.
	ProviderName string
	// RecordArguments, if true, puts each tool call's arguments as executed
	// (after rewrites and edits; for a pending call, as asked about) on its
	// execute_tool span as gen_ai.tool.call.arguments, a JSON string cut to
	// 8 KiB at a character boundary (then ending in "…"). Off by default: arguments may hold
	// secrets, and the GenAI conventions mark the attribute sensitive and
	// opt-in. Results, prompts and model text are never recorded.
	RecordArguments bool
}

// maxRecordedArguments bounds the bytes of gen_ai.tool.call.arguments when
// [Options].RecordArguments is set; longer arguments are cut at a character
// boundary and end with "…".
const maxRecordedArguments = 8 << 10

type instruments struct {
	recordArgs bool
	tracer     trace.Tracer
	duration   metric.Float64Histogram
	tokens     metric.Int64Histogram
	decisions  metric.Int64Counter
	provider   string
}

// Middleware returns the middleware that traces and measures an agent's runs,
// model turns and tool calls as the package documentation describes. Put it
// first in agent.Options.Middleware so that its spans enclose what the other
// middleware do. It is safe for concurrent runs.
//
// The instruments are created once, here. Should the meter provider refuse
// one (it does not for these names and units), that metric is not recorded.
func Middleware(opts *Options) agent.Middleware {
	in := newInstruments(opts)
	return agent.Middleware{Run: in.run, Turn: in.turn, Call: in.call, Wait: in.wait}
}

// newInstruments creates the tracer and the instruments of opts' providers
// (nil: no-op ones).
func newInstruments(opts *Options) *instruments {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.TracerProvider == nil {
		o.TracerProvider = tracenoop.NewTracerProvider()
	}
	if o.MeterProvider == nil {
		o.MeterProvider = metricnoop.NewMeterProvider()
	}
	meter := o.MeterProvider.Meter(scopeName, metric.WithSchemaURL(semconv.SchemaURL))
	in := &instruments{
		tracer:     o.TracerProvider.Tracer(scopeName, trace.WithSchemaURL(semconv.SchemaURL)),
		provider:   o.ProviderName,
		recordArgs: o.RecordArguments,
	}
	d, _ := genaiconv.NewClientOperationDuration(meter, metric.WithExplicitBucketBoundaries(durationBuckets...))
	in.duration = d.Inst()
	tk, _ := genaiconv.NewClientTokenUsage(meter, metric.WithExplicitBucketBoundaries(tokenBuckets...))
	in.tokens = tk.Inst()
	c, err := meter.Int64Counter(decisionsMetric,
		metric.WithDescription("Tool call decisions, by outcome."), metric.WithUnit("{decision}"))
	if err != nil {
		c = metricnoop.Int64Counter{}
	}
	in.decisions = c
	return in
}

func (in *instruments) run(next agent.RunHandler) agent.RunHandler {
	return func(ctx context.Context, info *agent.RunInfo) (*agent.Result, error) {
		attrs := []attribute.KeyValue{
			semconv.GenAIOperationNameInvokeAgent,
			semconv.GenAIAgentName(info.AgentID),
			semconv.GenAIConversationID(info.RunID),
			keyRunResume.Bool(info.Resume),
		}
		if info.Model != "" {
			attrs = append(attrs, semconv.GenAIRequestModel(clip(info.Model)))
		}
		if in.provider != "" {
			attrs = append(attrs, semconv.GenAIProviderNameKey.String(in.provider))
		}
		ctx, span := in.tracer.Start(ctx, "invoke_agent "+clip(info.AgentID),
			trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
		defer span.End()
		res, err := next(ctx, info)
		if res != nil {
			span.SetAttributes(keyRunStatus.String(string(res.Status)))
		}
		switch {
		case err != nil:
			fail(span, errorType(err))
		case res != nil && res.Status == agent.StatusError:
			fail(span, "run_error")
		}
		return res, err
	}
}

func (in *instruments) turn(next agent.TurnHandler) agent.TurnHandler {
	return func(ctx context.Context, t *agent.TurnInfo) (*model.Response, error) {
		attrs := []attribute.KeyValue{
			semconv.GenAIOperationNameChat,
			semconv.GenAIConversationID(t.RunID),
			keyTurn.Int(t.Turn),
		}
		metricAttrs := []attribute.KeyValue{semconv.GenAIOperationNameChat}
		if t.Model != "" {
			attrs = append(attrs, semconv.GenAIRequestModel(clip(t.Model)))
			metricAttrs = append(metricAttrs, semconv.GenAIRequestModel(clip(t.Model)))
		}
		if in.provider != "" {
			p := semconv.GenAIProviderNameKey.String(in.provider)
			attrs = append(attrs, p)
			metricAttrs = append(metricAttrs, p)
		}
		name := "chat"
		if t.Model != "" {
			name += " " + clip(t.Model)
		}
		start := time.Now()
		ctx, span := in.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
		defer span.End()
		resp, err := next(ctx, t)
		if resp != nil {
			if resp.Model != "" {
				m := semconv.GenAIResponseModel(clip(resp.Model))
				span.SetAttributes(m)
				metricAttrs = append(metricAttrs, m)
			}
			if resp.FinishReason != "" {
				span.SetAttributes(semconv.GenAIResponseFinishReasons(string(resp.FinishReason)))
			}
			span.SetAttributes(
				semconv.GenAIUsageInputTokens(resp.Usage.InputTokens),
				semconv.GenAIUsageOutputTokens(resp.Usage.OutputTokens),
			)
		}
		if err != nil {
			et := errorType(err)
			fail(span, et)
			metricAttrs = append(metricAttrs, semconv.ErrorTypeKey.String(et))
		}
		set := attribute.NewSet(metricAttrs...)
		in.duration.Record(ctx, time.Since(start).Seconds(), metric.WithAttributeSet(set))
		if resp != nil && err == nil {
			in.tokens.Record(ctx, int64(resp.Usage.InputTokens), metric.WithAttributeSet(set),
				metric.WithAttributes(semconv.GenAITokenTypeKey.String(string(genaiconv.TokenTypeInput))))
			in.tokens.Record(ctx, int64(resp.Usage.OutputTokens), metric.WithAttributeSet(set),
				metric.WithAttributes(semconv.GenAITokenTypeKey.String(string(genaiconv.TokenTypeOutput))))
		}
		return resp, err
	}
}

func (in *instruments) call(next agent.CallHandler) agent.CallHandler {
	return func(ctx context.Context, c *agent.CallInfo) gate.Ruling {
		name := clip(c.Call.Name)
		attrs := []attribute.KeyValue{
			semconv.GenAIOperationNameExecuteTool,
			semconv.GenAIToolName(name),
			semconv.GenAIToolCallID(clip(c.Call.ID)),
		}
		if c.Turn > 0 {
			// A call of no model turn (a gateway's client's) has none.
			attrs = append(attrs, keyTurn.Int(c.Turn))
		}
		if c.Answer != nil {
			attrs = append(attrs, keyApprovalID.String(clip(c.Answer.ID)))
			attrs = append(attrs, answerAttrs(*c.Answer)...)
		}
		ctx, span := in.tracer.Start(ctx, "execute_tool "+name,
			trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
		defer span.End()
		// A wait for an answer inside this call (Options.WaitFor) finds the
		// call's span and tool name here.
		ctx = context.WithValue(ctx, callKey{in}, &callScope{span: span, name: name})
		out := next(ctx, c)

		var outcome gate.Outcome
		var by tool.Principal
		switch {
		case out.Record != nil:
			rec := out.Record
			outcome, by = rec.Decision.Outcome, rec.Decision.By
			span.SetAttributes(keyArgsDigest.String(rec.ArgsDigest))
			if in.recordArgs {
				span.SetAttributes(semconv.GenAIToolCallArgumentsKey.String(cut(string(rec.Args), maxRecordedArguments)))
			}
			if rec.RequestedDigest != "" && rec.RequestedDigest != rec.ArgsDigest {
				span.SetAttributes(keyRequestedDigest.String(rec.RequestedDigest))
			}
			if rec.IsError && out.Err == nil {
				et := string(outcome)
				if outcome == gate.OutcomeAllowed || outcome == gate.OutcomeApproved {
					et = "tool_error"
				}
				fail(span, et)
			}
		case out.Pending != nil:
			p := out.Pending
			outcome, by = gate.OutcomePending, pendingSource(p)
			span.SetAttributes(keyApprovalID.String(clip(p.Request.ID)))
			if p.Digest != "" {
				span.SetAttributes(keyArgsDigest.String(p.Digest))
			}
			if in.recordArgs {
				span.SetAttributes(semconv.GenAIToolCallArgumentsKey.String(cut(string(p.Args), maxRecordedArguments)))
			}
		}
		if out.Err != nil {
			fail(span, errorType(out.Err))
		}
		if outcome == "" {
			return out
		}
		in.decided(ctx, span, name, outcome, by)
		return out
	}
}

// callKey is the context key of the callScope of a call that in traces.
type callKey struct{ in *instruments }

// callScope is what a wait inside a call needs of it: its execute_tool span
// and tool name.
type callScope struct {
	span trace.Span
	name string
}

// decided sets a call's decision attributes on its span, unless span is nil,
// and counts the decision in tollgate.tool.decisions.
func (in *instruments) decided(ctx context.Context, span trace.Span, name string, outcome gate.Outcome, by tool.Principal) {
	decided := []attribute.KeyValue{keyDecision.String(string(outcome))}
	if !by.IsZero() {
		decided = append(decided, keyDecisionSource.String(clip(by.String())))
	}
	switch by.Kind {
	case tool.PrincipalRule:
		decided = append(decided, keyRuleID.String(clip(by.Name)))
	case tool.PrincipalHook:
		decided = append(decided, keyHookName.String(clip(by.Name)))
	}
	if span != nil {
		span.SetAttributes(decided...)
	}

	toolName := name
	if outcome == gate.OutcomeUnknownTool {
		toolName = "_OTHER"
	}
	mattrs := []attribute.KeyValue{keyDecision.String(string(outcome)), semconv.GenAIToolName(toolName)}
	for _, kv := range decided {
		if kv.Key == keyRuleID || kv.Key == keyHookName {
			mattrs = append(mattrs, kv)
		}
	}
	in.decisions.Add(ctx, 1, metric.WithAttributes(mattrs...))
}

// pendingSource names who asked for the pending request: the hook that raised
// it, else the last source that voted ask.
func pendingSource(p *gate.Pending) tool.Principal {
	if p.Origin == gate.OriginHook && p.Hook != "" {
		return tool.Principal{Kind: tool.PrincipalHook, Name: p.Hook}
	}
	for i := len(p.Votes) - 1; i >= 0; i-- {
		if p.Votes[i].Decision == tool.VoteAsk {
			return p.Votes[i].Source
		}
	}
	return tool.Principal{}
}

// fail marks span as failed with the class et (error.type); the description
// is the class too, never an error's text.
func fail(span trace.Span, et string) {
	span.SetAttributes(semconv.ErrorTypeKey.String(et))
	span.SetStatus(codes.Error, et)
}

// errorType classifies err for error.type without its text: "canceled",
// "timeout", a provider's HTTP status or error type, else "_OTHER".
func errorType(err error) string {
	var pe *model.ProviderError
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.As(err, &pe):
		if pe.StatusCode != 0 {
			return strconv.Itoa(pe.StatusCode)
		}
		if pe.Type != "" {
			return clip(pe.Type)
		}
		return "provider_error"
	}
	return semconv.ErrorTypeOther.Value.AsString()
}

// clip makes s valid UTF-8 of at most maxName bytes.
func clip(s string) string { return cut(s, maxName) }

// cut returns s as valid UTF-8, cut to at most n bytes at a character
// boundary, with "…" in place of what was cut.
func cut(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	s = s[:n-len("…")]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// wait traces a call's wait for the answer to its pending request: a
// wait_for_answer span under the call's execute_tool span.
//
// The call is pending meanwhile, as it would be on a halt: the pending
// decision is counted (the span keeps the final decision, which follows the
// answer), and the call's execute_tool span gets the request's
// tollgate.approval.id and, once answered, tollgate.approval.by (and actor),
// as the span of a call resumed with an answer has them.
func (in *instruments) wait(next tool.WaitFunc) tool.WaitFunc {
	return func(ctx context.Context, req tool.Request) (tool.Answer, error) {
		call, _ := ctx.Value(callKey{in}).(*callScope)
		if call != nil {
			call.span.SetAttributes(keyApprovalID.String(clip(req.ID)))
			if p, ok := agent.PendingCallFrom(ctx); ok {
				// Counted only: the span's decision is the final one.
				in.decided(ctx, nil, call.name, gate.OutcomePending, pendingSource(p))
			}
		}
		ctx, span := in.tracer.Start(ctx, "wait_for_answer", trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(keyApprovalID.String(clip(req.ID)), keyRequestKind.String(clip(string(req.Kind)))))
		defer span.End()
		ans, err := next(ctx, req)
		if err != nil {
			fail(span, errorType(err))
			return ans, err
		}
		span.SetAttributes(keyAnswerApproved.Bool(ans.OK))
		span.SetAttributes(answerAttrs(ans)...)
		if call != nil {
			call.span.SetAttributes(answerAttrs(ans)...)
		}
		return ans, nil
	}
}
