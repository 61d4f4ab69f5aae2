// Package anthropic is tollgate's provider for Anthropic's Messages API,
// built on the official SDK github.com/anthropics/anthropic-sdk-go/v2.
//
// It only translates between tollgate's types and the Messages API
// (https://docs.anthropic.com/en/api/messages):
//
//   - system messages are hoisted out of the conversation into the request's
//     system field, wherever they stand;
//   - an assistant message becomes a text block and tool_use blocks;
//   - tool results become tool_result blocks (is_error set on failures) in a
//     user turn, consecutive results, and a user message right after them,
//     merged into one turn as the API requires;
//   - max_tokens, required by the API, defaults to [DefaultMaxTokens];
//   - stop reasons map onto [model.FinishReason]; usage counts cached input
//     tokens as input.
//
// [Model.Stream] reads the server-sent events (message_start,
// content_block_start, content_block_delta with text_delta or
// input_json_delta, message_delta with stop_reason and usage, message_stop)
// and assembles tool inputs per content block.
//
// The key is sent in the x-api-key header, with the anthropic-version header
// of the SDK ([DefaultAPIVersion]) unless [Options.APIVersion] says
// otherwise. Failures are retried by internal/retry (429, 500, 502, 503, 504,
// Anthropic's 529 overloaded, network errors; Retry-After in seconds
// honoured) with the SDK's own retries off, and are reported as
// *model.ProviderError, whose text never contains the key. The package reads
// no environment variable; [KeyFromEnv] is the documented way to.
package anthropic

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	anth "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/tollgate-dev/tollgate/internal/provider"
	"github.com/tollgate-dev/tollgate/internal/retry"
	"github.com/tollgate-dev/tollgate/model"
)

// Provider is the name this package gives itself in errors and logs.
const Provider = "anthropic"

const (
	// DefaultBaseURL is Anthropic's API, used when [Options.BaseURL] is empty.
	DefaultBaseURL = "https://api.anthropic.com"
	// DefaultMaxTokens is max_tokens when neither the request nor
	// [Options.MaxTokens] sets it (the API requires a value).
	DefaultMaxTokens = 4096
	// DefaultAPIVersion is the anthropic-version header the SDK sends and
	// whose wire format it speaks. This version rejects sampling parameters,
	// so [model.Request.Temperature] is not sent under it.
	DefaultAPIVersion = "2026-10-21"
	// statusOverloaded is Anthropic's "overloaded_error" status.
	statusOverloaded = 529
)

// Options configure a [Model]. The zero value (or nil) talks to Anthropic
// without a key, which the API refuses; set APIKey.
type Options struct {
	// BaseURL is the API root, the part before "/v1/messages" (default
	// [DefaultBaseURL]).
	BaseURL string
	// APIKey is sent in the x-api-key header when not empty. It is never
	// logged and is redacted from every error.
	APIKey string
	// Model is the model ID used when [model.Request.Model] is empty. Model
	// IDs are sent verbatim.
	Model string
	// MaxTokens is max_tokens when the request sets none (0:
	// [DefaultMaxTokens]).
	MaxTokens int
	// APIVersion overrides the anthropic-version header ("" keeps
	// [DefaultAPIVersion]). With a version before 2026-10-21, such as
	// "2023-06-01", the request's temperature is sent.
	APIVersion string
	// Headers are added to every request (a beta flag, a gateway header).
	Headers http.Header
	// HTTPClient sends the requests (default http.DefaultClient). Its
	// Timeout, if any, bounds each attempt including a whole stream.
	HTTPClient *http.Client
	// MaxRetries is the number of retries after a transient failure: 0 means
	// the default (2), a negative value means none.
	MaxRetries int
	// RetryBaseDelay is the backoff before the first retry, doubling after
	// (0: 500ms). RetryMaxDelay caps every delay, Retry-After included
	// (0: 30s).
	RetryBaseDelay, RetryMaxDelay time.Duration
	// Logger receives retries at level Warn and each call at Debug
	// (default: discard). Credentials are never logged.
	Logger *slog.Logger
}

// Model is an Anthropic Messages API model. It implements [model.Model] and
// [model.Streamer] and is safe for concurrent use.
type Model struct {
	svc         anth.MessageService
	model       string
	key         string
	maxTokens   int
	temperature bool // whether the API version accepts sampling parameters
	policy      retry.Policy
	log         *slog.Logger
}

var (
	_ model.Model    = (*Model)(nil)
	_ model.Streamer = (*Model)(nil)
)

// New returns a Model configured by opts (nil means all defaults). It fails
// when BaseURL is not an absolute http or https URL.
func New(opts *Options) (*Model, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	base, err := provider.BaseURL(Provider, o.BaseURL, DefaultBaseURL, o.APIKey)
	if err != nil {
		return nil, err
	}
	ropts := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithHTTPClient(cmp.Or(o.HTTPClient, http.DefaultClient)),
		option.WithMaxRetries(0), // one retry mechanism: internal/retry
	}
	if o.APIKey != "" {
		ropts = append(ropts, option.WithHeader("x-api-key", o.APIKey))
	}
	version := cmp.Or(o.APIVersion, DefaultAPIVersion)
	if o.APIVersion != "" {
		ropts = append(ropts, option.WithHeader("anthropic-version", o.APIVersion))
	}
	ropts = append(ropts, provider.Headers(o.Headers, option.WithHeader, option.WithHeaderAdd)...)
	return &Model{
		svc:         anth.NewMessageService(ropts...),
		model:       o.Model,
		key:         o.APIKey,
		maxTokens:   cmp.Or(o.MaxTokens, DefaultMaxTokens),
		temperature: version < DefaultAPIVersion,
		policy:      retry.Policy{MaxRetries: o.MaxRetries, BaseDelay: o.RetryBaseDelay, MaxDelay: o.RetryMaxDelay},
		log:         provider.Logger(o.Logger, Provider),
	}, nil
}

// KeyFromEnv returns the API key from the ANTHROPIC_API_KEY environment
// variable ("" when unset) and the variable's name. The key is never logged;
// callers should not log it either.
func KeyFromEnv() (key, envVar string) {
	return os.Getenv("ANTHROPIC_API_KEY"), "ANTHROPIC_API_KEY"
}

// Generate implements [model.Model]: one Messages API call, retried on
// transient failures. Errors are *model.ProviderError, a request that cannot
// be translated (an unknown role, a schema that is not an object), or the
// context's error.
func (m *Model) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	params, ropts, err := m.params(ctx, req)
	if err != nil {
		return nil, err
	}
	var out *anth.Message
	err = retry.Do(ctx, m.policy, m.log, func(ctx context.Context, attempt int) error {
		m.log.LogAttrs(ctx, slog.LevelDebug, "messages", slog.String("model", string(params.Model)), slog.Int("attempt", attempt))
		msg, err := m.svc.New(ctx, params, ropts...)
		if err != nil {
			return m.wrap(ctx, err)
		}
		out = msg
		return nil
	})
	if err != nil {
		return nil, err
	}
	return response(out), nil
}

// Stream implements [model.Streamer]: a streaming Messages API call. Text
// deltas are yielded as they arrive; the last chunk carries the whole
// response, tool inputs assembled from their input_json_delta pieces. Transient
// failures are retried only until the first event has arrived, before
// anything was yielded; a failure after that ends the sequence with the
// error. Breaking out of the loop closes the connection.
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		params, ropts, err := m.params(ctx, req)
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		var st interface {
			Next() bool
			Current() anth.MessageStreamEventUnion
			Err() error
			Close() error
		}
		err = retry.Do(ctx, m.policy, m.log, func(ctx context.Context, attempt int) error {
			m.log.LogAttrs(ctx, slog.LevelDebug, "messages stream", slog.String("model", string(params.Model)), slog.Int("attempt", attempt))
			s := m.svc.NewStreaming(ctx, params, ropts...)
			if s.Next() {
				st = s
				return nil
			}
			err := s.Err()
			_ = s.Close()
			if err == nil {
				err = errEmptyStream
			}
			return m.wrap(ctx, err)
		})
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		defer st.Close()
		acc := accumulator{model: string(params.Model)}
		for more := true; more; more = st.Next() {
			if d := acc.add(st.Current()); d != "" && !yield(model.Chunk{Delta: d}, nil) {
				return
			}
		}
		if err := st.Err(); err != nil {
			yield(model.Chunk{}, m.wrap(ctx, err))
			return
		}
		if !acc.stopped {
			yield(model.Chunk{}, m.wrap(ctx, errTruncated))
			return
		}
		yield(model.Chunk{Response: acc.response()}, nil)
	}
}

var (
	errEmptyStream = errors.New("stream ended before its first event")
	errTruncated   = errors.New("stream ended before message_stop")
)

// wrap turns an SDK failure into a *model.ProviderError, or the context's
// error when ctx has ended.
func (m *Model) wrap(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	var apiErr *anth.Error
	if errors.As(err, &apiErr) {
		status := apiErr.StatusCode
		if status >= 200 && status < 300 {
			status = 0 // an error event inside a stream
		}
		msg := apiErr.Message
		if msg == "" {
			msg = provider.Truncate(apiErr.RawJSON(), 300)
		}
		var h http.Header
		if apiErr.Response != nil && status != 0 {
			h = apiErr.Response.Header
		}
		typ := string(apiErr.Type())
		e := retry.HTTPError(Provider, status, h, typ, msg, m.key)
		switch {
		case status == statusOverloaded:
			e.Retryable = true
		case status == 0:
			e.Retryable = typ == "overloaded_error" || typ == "api_error" || typ == "rate_limit_error"
		}
		return e
	}
	return retry.NetworkError(Provider, err, m.key)
}

// params translates a tollgate request into Messages API parameters, and the
// per-request options it needs.
func (m *Model) params(ctx context.Context, req *model.Request) (anth.MessageNewParams, []option.RequestOption, error) {
	var p anth.MessageNewParams
	id := cmp.Or(req.Model, m.model)
	if id == "" {
		return p, nil, errors.New("anthropic: no model ID: set Request.Model or Options.Model")
	}
	p.Model = anth.Model(id)
	p.MaxTokens = int64(cmp.Or(req.MaxTokens, m.maxTokens))

	// Turns alternate; blocks of consecutive messages of one role merge.
	type turn struct {
		assistant bool
		blocks    []anth.ContentBlockParamUnion
	}
	var turns []turn
	add := func(assistant bool, blocks ...anth.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return
		}
		if n := len(turns); n > 0 && turns[n-1].assistant == assistant {
			turns[n-1].blocks = append(turns[n-1].blocks, blocks...)
			return
		}
		turns = append(turns, turn{assistant, blocks})
	}
	for i, msg := range req.Messages {
		switch msg.Role {
		case model.RoleSystem:
			if msg.Content != "" {
				p.System = append(p.System, anth.TextBlockParam{Text: msg.Content})
			}
		case model.RoleUser:
			if msg.Content != "" {
				add(false, anth.NewTextBlock(msg.Content))
			}
		case model.RoleAssistant:
			var blocks []anth.ContentBlockParamUnion
			if msg.Content != "" {
				blocks = append(blocks, anth.NewTextBlock(msg.Content))
			}
			for _, c := range msg.ToolCalls {
				input := c.Arguments
				if len(input) == 0 || !json.Valid(input) {
					input = json.RawMessage("{}")
				}
				blocks = append(blocks, anth.NewToolUseBlock(c.ID, input, c.Name))
			}
			add(true, blocks...)
		case model.RoleTool:
			tr := anth.ToolResultBlockParam{ToolUseID: msg.ToolCallID}
			if msg.Content != "" {
				tr.Content = []anth.ToolResultBlockParamContentUnion{{OfText: &anth.TextBlockParam{Text: msg.Content}}}
			}
			if msg.IsError {
				tr.IsError = anth.Bool(true)
			}
			add(false, anth.ContentBlockParamUnion{OfToolResult: &tr})
		default:
			return p, nil, fmt.Errorf("anthropic: message %d has unknown role %q", i, msg.Role)
		}
	}
	for _, t := range turns {
		if t.assistant {
			p.Messages = append(p.Messages, anth.NewAssistantMessage(t.blocks...))
		} else {
			p.Messages = append(p.Messages, anth.NewUserMessage(t.blocks...))
		}
	}
	for _, t := range req.Tools {
		schema := json.RawMessage(`{"type":"object","properties":{}}`)
		if len(t.InputSchema) > 0 {
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(t.InputSchema, &obj); err != nil || obj == nil {
				return p, nil, fmt.Errorf("anthropic: tool %q: input schema is not a JSON object", t.Name)
			}
			schema = t.InputSchema
		}
		tp := anth.ToolParam{Name: t.Name, InputSchema: param.Override[anth.ToolInputSchemaParam](schema)}
		if t.Description != "" {
			tp.Description = anth.String(t.Description)
		}
		p.Tools = append(p.Tools, anth.ToolUnionParam{OfTool: &tp})
	}
	var ropts []option.RequestOption
	if req.Temperature != nil {
		if m.temperature {
			ropts = append(ropts, option.WithJSONSet("temperature", *req.Temperature))
		} else {
			m.log.LogAttrs(ctx, slog.LevelDebug, "temperature not sent: the API version rejects sampling parameters")
		}
	}
	return p, ropts, nil
}

// response translates a message into a tollgate response.
func response(msg *anth.Message) *model.Response {
	out := model.Message{Role: model.RoleAssistant}
	var text strings.Builder
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			out.ToolCalls = append(out.ToolCalls, model.ToolCall{ID: b.ID, Name: b.Name, Arguments: arguments(b.Input)})
		}
	}
	out.Content = text.String()
	u := msg.Usage
	return &model.Response{
		Message:      out,
		Usage:        usage(u.InputTokens+u.CacheCreationInputTokens+u.CacheReadInputTokens, u.OutputTokens),
		FinishReason: finishReason(msg.StopReason),
		Model:        string(msg.Model),
		Raw:          json.RawMessage(msg.RawJSON()),
	}
}

func arguments(b []byte) json.RawMessage {
	if len(strings.TrimSpace(string(b))) == 0 {
		return json.RawMessage("{}")
	}
	if json.Valid(b) {
		return json.RawMessage(slices.Clone(b))
	}
	s, _ := json.Marshal(string(b))
	return s
}

func usage(in, out int64) model.Usage {
	return model.Usage{InputTokens: int(in), OutputTokens: int(out), TotalTokens: int(in + out)}
}

// finishReason maps Anthropic's stop_reason: end_turn and stop_sequence are
// stop, tool_use is tool_calls, max_tokens and model_context_window_exceeded
// are length, refusal is content_filter; pause_turn and anything else are
// other.
func finishReason(r anth.StopReason) model.FinishReason {
	switch r {
	case anth.StopReasonEndTurn, anth.StopReasonStopSequence:
		return model.FinishStop
	case anth.StopReasonToolUse:
		return model.FinishToolCalls
	case anth.StopReasonMaxTokens, anth.StopReasonModelContextWindowExceeded:
		return model.FinishLength
	case anth.StopReasonRefusal:
		return model.FinishContentFilter
	}
	return model.FinishOther
}

// accumulator assembles a streamed message.
type accumulator struct {
	text    strings.Builder
	blocks  map[int64]*toolBlock
	order   []*toolBlock
	stop    anth.StopReason
	in, out int64
	model   string
	stopped bool
	// msg is the message as the SDK assembles it from the same events, for
	// Response.Raw; rawErr is its first failure (Raw is then left empty).
	msg    anth.Message
	rawErr error
}

type toolBlock struct {
	id, name string
	input    strings.Builder
}

// add takes in one event and returns its text delta.
func (a *accumulator) add(ev anth.MessageStreamEventUnion) string {
	if a.rawErr == nil {
		a.rawErr = a.msg.Accumulate(ev)
	}
	switch ev.Type {
	case "message_start":
		if ev.Message.Model != "" {
			a.model = string(ev.Message.Model)
		}
		u := ev.Message.Usage
		a.in = u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
		a.out = u.OutputTokens
	case "content_block_start":
		switch ev.ContentBlock.Type {
		case "text":
			a.text.WriteString(ev.ContentBlock.Text)
			return ev.ContentBlock.Text
		case "tool_use":
			if a.blocks == nil {
				a.blocks = map[int64]*toolBlock{}
			}
			b := &toolBlock{id: ev.ContentBlock.ID, name: ev.ContentBlock.Name}
			a.blocks[ev.Index] = b
			a.order = append(a.order, b)
		}
	case "content_block_delta":
		switch ev.Delta.Type {
		case "text_delta":
			a.text.WriteString(ev.Delta.Text)
			return ev.Delta.Text
		case "input_json_delta":
			if b := a.blocks[ev.Index]; b != nil {
				b.input.WriteString(ev.Delta.PartialJSON)
			}
		}
	case "message_delta":
		if ev.Delta.StopReason != "" {
			a.stop = ev.Delta.StopReason
		}
		// message_delta usage is cumulative.
		if ev.Usage.OutputTokens != 0 {
			a.out = ev.Usage.OutputTokens
		}
		if in := ev.Usage.InputTokens + ev.Usage.CacheCreationInputTokens + ev.Usage.CacheReadInputTokens; in != 0 {
			a.in = in
		}
	case "message_stop":
		a.stopped = true
	}
	return ""
}

func (a *accumulator) response() *model.Response {
	msg := model.Message{Role: model.RoleAssistant, Content: a.text.String()}
	for _, b := range a.order {
		msg.ToolCalls = append(msg.ToolCalls, model.ToolCall{ID: b.id, Name: b.name, Arguments: arguments([]byte(b.input.String()))})
	}
	return &model.Response{
		Message:      msg,
		Usage:        usage(a.in, a.out),
		FinishReason: finishReason(a.stop),
		Model:        a.model,
		Raw:          a.raw(),
	}
}

// raw is the streamed message as the API returns it without streaming (id,
// model, content, stop_reason, usage), assembled by the SDK.
func (a *accumulator) raw() json.RawMessage {
	r := a.msg.RawJSON()
	if a.rawErr != nil || !json.Valid([]byte(r)) {
		return nil
	}
	return json.RawMessage(r)
}
