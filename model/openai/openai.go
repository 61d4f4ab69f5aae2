// Package openai is tollgate's provider for the OpenAI Chat Completions API
// and the servers that speak it (OpenRouter, Ollama, vLLM, LM Studio, ...),
// built on the official SDK github.com/openai/openai-go/v3.
//
// It only translates: tollgate's [model.Request] becomes a Chat Completions
// request (system, user, assistant messages with tool calls, tool messages
// keyed by call ID, function tools whose parameters are the raw JSON Schema
// of [model.ToolDef.InputSchema], MaxTokens as max_completion_tokens), and
// the answer becomes a [model.Response]. OpenAI has no error flag on tool
// messages: a failed tool result is sent as its text. [Model.Stream] reads the server-sent events of a
// streaming request (stream_options.include_usage set), assembles tool-call
// arguments across chunks by their index (a new id on a known index starts a
// new call) and takes the usage from the last chunk that has one. An error
// inside a 200 stream, in any of the shapes compatible servers send, and a
// stream that ends without a finish_reason are a *model.ProviderError: a
// cut stream never yields a response whose tool calls could run. Wire
// format: https://platform.openai.com/docs/api-reference/chat.
//
// Failures are retried by the shared policy of internal/retry (429, 500,
// 502, 503, 504, network errors; Retry-After in seconds honoured); the SDK's
// own retries are off. A failure is a *model.ProviderError whose text never
// contains the API key. The key is sent as "Authorization: Bearer <key>" and
// comes only from [Options]; [KeyFromEnv] is the documented way to read it
// from the environment. The package never reads other environment variables
// (the SDK's OPENAI_BASE_URL and friends are not consulted).
package openai

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/tollgate-dev/tollgate/internal/provider"
	"github.com/tollgate-dev/tollgate/internal/retry"
	"github.com/tollgate-dev/tollgate/model"
)

// Provider is the name this package gives itself in errors and logs.
const Provider = "openai"

// Base URLs of well-known OpenAI-compatible services.
const (
	// DefaultBaseURL is OpenAI's API, used when [Options.BaseURL] is empty.
	DefaultBaseURL = "https://api.openai.com/v1"
	// OpenRouterBaseURL is OpenRouter's OpenAI-compatible API.
	OpenRouterBaseURL = "https://openrouter.ai/api/v1"
)

// Options configure a [Model]. The zero value (or nil) talks to OpenAI with
// no key, which only suits servers that need none (a local Ollama).
type Options struct {
	// BaseURL is the API root, the path before "/chat/completions"
	// (default [DefaultBaseURL]); for Ollama, "http://localhost:11434/v1".
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <APIKey>" when not empty. It
	// is never logged and is redacted from every error.
	APIKey string
	// Model is the model ID used when [model.Request.Model] is empty. Model
	// IDs are sent verbatim.
	Model string
	// Headers are added to every request (OpenRouter's HTTP-Referer, a
	// gateway's tenant header).
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
	// Timeout bounds one model call: every attempt, the waits between
	// retries and, for Stream, the reading of the whole stream (0:
	// [DefaultTimeout]; negative: no bound but ctx's). When it fires, the
	// error is a retryable *model.ProviderError that says so, and
	// errors.Is(err, context.DeadlineExceeded) holds.
	Timeout time.Duration
	// Logger receives retries, with how long each waits, at level Warn and
	// each call at Debug. Nil sends the Warn records to [slog.Default] and
	// discards the rest, so that a retry that waits is never silent.
	// Credentials are never logged.
	Logger *slog.Logger
}

// DefaultTimeout is [Options.Timeout] when it is 0.
const DefaultTimeout = provider.DefaultTimeout

// Model is an OpenAI Chat Completions model. It implements [model.Model] and
// [model.Streamer] and is safe for concurrent use.
type Model struct {
	svc     oai.ChatCompletionService
	model   string
	key     string
	policy  retry.Policy
	timeout time.Duration
	log     *slog.Logger
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
		ropts = append(ropts, option.WithAPIKey(o.APIKey))
	}
	ropts = append(ropts, provider.Headers(o.Headers, option.WithHeader, option.WithHeaderAdd)...)
	return &Model{
		svc:     oai.NewChatCompletionService(ropts...),
		model:   o.Model,
		key:     o.APIKey,
		policy:  retry.Policy{MaxRetries: o.MaxRetries, BaseDelay: o.RetryBaseDelay, MaxDelay: o.RetryMaxDelay},
		timeout: o.Timeout,
		log:     provider.Logger(o.Logger, Provider),
	}, nil
}

// KeyFromEnv returns the API key for a server at baseURL from the
// environment, and the name of the variable it read: OPENROUTER_API_KEY when
// baseURL's host is openrouter.ai or one of its subdomains, OPENAI_API_KEY
// otherwise (an empty baseURL means OpenAI). key is "" when the variable is
// unset. The key is never logged; callers should not log it either.
func KeyFromEnv(baseURL string) (key, envVar string) {
	envVar = "OPENAI_API_KEY"
	if u, err := url.Parse(baseURL); err == nil {
		h := strings.ToLower(u.Hostname())
		if h == "openrouter.ai" || strings.HasSuffix(h, ".openrouter.ai") {
			envVar = "OPENROUTER_API_KEY"
		}
	}
	return os.Getenv(envVar), envVar
}

// Generate implements [model.Model]: one Chat Completions call, retried on
// transient failures. Errors are *model.ProviderError, a request that cannot
// be translated (an unknown role), or the context's error.
func (m *Model) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	tctx, cancel := provider.WithTimeout(ctx, m.timeout)
	defer cancel()
	resp, err := m.generate(tctx, req)
	return resp, provider.TimeoutError(Provider, ctx, tctx, err, m.timeout)
}

func (m *Model) generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	params, err := m.params(req)
	if err != nil {
		return nil, err
	}
	var out *oai.ChatCompletion
	err = retry.Do(ctx, m.policy, m.log, func(ctx context.Context, attempt int) error {
		m.log.LogAttrs(ctx, slog.LevelDebug, "chat completion", slog.String("model", string(params.Model)), slog.Int("attempt", attempt))
		c, err := m.svc.New(ctx, params)
		if err != nil {
			return m.wrap(ctx, err)
		}
		out = c
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m.response(out)
}

// Stream implements [model.Streamer]: a streaming Chat Completions call.
// Text deltas are yielded as they arrive; the last chunk carries the whole
// response, tool-call arguments assembled across chunks by index, usage from
// the final usage chunk. Transient failures are retried only until the
// first event has arrived, before anything was yielded; a failure after that
// ends the sequence with the error. Breaking out of the loop closes the
// connection.
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		tctx, cancel := provider.WithTimeout(ctx, m.timeout)
		defer cancel()
		m.stream(tctx, req, func(c model.Chunk, err error) bool {
			return yield(c, provider.TimeoutError(Provider, ctx, tctx, err, m.timeout))
		})
	}
}

func (m *Model) stream(ctx context.Context, req *model.Request, yield func(model.Chunk, error) bool) {
	params, err := m.params(req)
	if err != nil {
		yield(model.Chunk{}, err)
		return
	}
	params.StreamOptions = oai.ChatCompletionStreamOptionsParam{IncludeUsage: oai.Bool(true)}
	var st interface {
		Next() bool
		Current() oai.ChatCompletionChunk
		Err() error
		Close() error
	}
	err = retry.Do(ctx, m.policy, m.log, func(ctx context.Context, attempt int) error {
		m.log.LogAttrs(ctx, slog.LevelDebug, "chat completion stream", slog.String("model", string(params.Model)), slog.Int("attempt", attempt))
		s := m.svc.NewStreaming(ctx, params)
		if s.Next() {
			// A server that fails at once may still answer 200 and send
			// the error as the first event (vLLM): retry it like a status.
			if e := chunkError(s.Current()); e != nil {
				_ = s.Close()
				return m.redact(e)
			}
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
	var acc accumulator
	for more := true; more; more = st.Next() {
		d, err := acc.add(st.Current())
		if err != nil {
			yield(model.Chunk{}, m.redact(err))
			return
		}
		if d != "" && !yield(model.Chunk{Delta: d}, nil) {
			return
		}
	}
	if err := st.Err(); err != nil {
		yield(model.Chunk{}, m.wrap(ctx, err))
		return
	}
	resp, perr := acc.response()
	if perr != nil {
		yield(model.Chunk{}, m.redact(perr))
		return
	}
	if resp.Model == "" {
		resp.Model = string(params.Model)
	}
	yield(model.Chunk{Response: resp}, nil)
}

var errEmptyStream = errors.New("stream ended before its first event")

// wrap turns an SDK failure into a *model.ProviderError, or the context's
// error when ctx has ended.
func (m *Model) wrap(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		if e := eventError(se.Event.Data); e != nil {
			return m.redact(e)
		}
	}
	var apiErr *oai.Error
	if errors.As(err, &apiErr) {
		msg := apiErr.Message
		if msg == "" && !apiErr.JSON.Message.Valid() {
			msg = provider.Truncate(apiErr.RawJSON(), 300)
		}
		var h http.Header
		if apiErr.Response != nil {
			h = apiErr.Response.Header
		}
		return retry.HTTPError(Provider, apiErr.StatusCode, h, cmp.Or(apiErr.Code, apiErr.Type), msg, m.key)
	}
	return retry.NetworkError(Provider, err, m.key)
}

// params translates a tollgate request into Chat Completions parameters.
func (m *Model) params(req *model.Request) (oai.ChatCompletionNewParams, error) {
	var p oai.ChatCompletionNewParams
	id := cmp.Or(req.Model, m.model)
	if id == "" {
		return p, errors.New("openai: no model ID: set Request.Model or Options.Model")
	}
	p.Model = shared.ChatModel(id)
	for i, msg := range req.Messages {
		switch msg.Role {
		case model.RoleSystem:
			p.Messages = append(p.Messages, oai.SystemMessage(msg.Content))
		case model.RoleUser:
			p.Messages = append(p.Messages, oai.UserMessage(msg.Content))
		case model.RoleAssistant:
			a := oai.ChatCompletionAssistantMessageParam{}
			if msg.Content != "" || len(msg.ToolCalls) == 0 {
				a.Content.OfString = oai.String(msg.Content)
			}
			for _, c := range msg.ToolCalls {
				args := wireArguments(c.Arguments)
				a.ToolCalls = append(a.ToolCalls, oai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &oai.ChatCompletionMessageFunctionToolCallParam{
						ID:       c.ID,
						Function: oai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: args},
					},
				})
			}
			p.Messages = append(p.Messages, oai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case model.RoleTool:
			p.Messages = append(p.Messages, oai.ToolMessage(msg.Content, msg.ToolCallID))
		default:
			return p, fmt.Errorf("openai: message %d has unknown role %q", i, msg.Role)
		}
	}
	for _, t := range req.Tools {
		schema := map[string]any{"type": "object", "properties": map[string]any{}}
		if len(t.InputSchema) > 0 {
			schema = nil
			if err := json.Unmarshal(t.InputSchema, &schema); err != nil || schema == nil {
				return p, fmt.Errorf("openai: tool %q: input schema is not a JSON object", t.Name)
			}
		}
		fd := shared.FunctionDefinitionParam{Name: t.Name, Parameters: shared.FunctionParameters(schema)}
		if t.Description != "" {
			fd.Description = oai.String(t.Description)
		}
		p.Tools = append(p.Tools, oai.ChatCompletionFunctionTool(fd))
	}
	if req.MaxTokens > 0 {
		p.MaxCompletionTokens = oai.Int(int64(req.MaxTokens))
	}
	if req.Temperature != nil {
		p.Temperature = param.NewOpt(*req.Temperature)
	}
	return p, nil
}

// response translates a chat completion into a tollgate response.
func (m *Model) response(c *oai.ChatCompletion) (*model.Response, error) {
	if len(c.Choices) == 0 {
		if e := eventError([]byte(c.RawJSON())); e != nil {
			return nil, m.redact(e)
		}
		return nil, &model.ProviderError{Provider: Provider, Message: "response has no choices"}
	}
	ch := c.Choices[0]
	if ch.FinishReason == "error" {
		if e := eventError([]byte(c.RawJSON())); e != nil {
			return nil, m.redact(e)
		}
		return nil, &model.ProviderError{Provider: Provider, Message: `the server answered with finish_reason "error"`}
	}
	msg := model.Message{Role: model.RoleAssistant, Content: ch.Message.Content}
	for _, tc := range ch.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue
		}
		msg.ToolCalls = append(msg.ToolCalls, model.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: arguments(tc.Function.Arguments)})
	}
	return &model.Response{
		Message:      msg,
		Usage:        usage(c.Usage),
		FinishReason: finishReason(ch.FinishReason, len(msg.ToolCalls) > 0),
		Model:        c.Model,
		Raw:          json.RawMessage(c.RawJSON()),
	}, nil
}

// arguments keeps the model's arguments when they are valid JSON; an empty
// string becomes {}, and text that is not JSON is passed on as a JSON string
// so that argument validation reports it to the model.
func arguments(s string) json.RawMessage {
	if strings.TrimSpace(s) == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

// wireArguments is the arguments text of a tool call sent back to the
// server: the JSON as the transcript has it, {} for none, and the model's own
// text for arguments kept as a JSON string because they were not JSON (a
// call cut off at the output limit), so that the model sees what it wrote.
func wireArguments(args json.RawMessage) string {
	b := bytes.TrimSpace(args)
	if len(b) == 0 {
		return "{}"
	}
	if b[0] == '"' {
		var text string
		if json.Unmarshal(b, &text) == nil {
			return text
		}
	}
	return string(args)
}

func usage(u oai.CompletionUsage) model.Usage {
	out := model.Usage{InputTokens: int(u.PromptTokens), OutputTokens: int(u.CompletionTokens), TotalTokens: int(u.TotalTokens)}
	if out.TotalTokens == 0 {
		out.TotalTokens = out.InputTokens + out.OutputTokens
	}
	return out
}

// finishReason maps OpenAI's finish_reason: stop, tool_calls (and the older
// function_call), length, content_filter; anything else is other. Some
// compatible servers report stop on a turn with tool calls; that is reported
// as tool_calls.
func finishReason(r string, hasCalls bool) model.FinishReason {
	switch r {
	case "stop", "":
		if hasCalls {
			return model.FinishToolCalls
		}
		return model.FinishStop
	case "tool_calls", "function_call":
		return model.FinishToolCalls
	case "length":
		return model.FinishLength
	case "content_filter":
		return model.FinishContentFilter
	}
	return model.FinishOther
}

// redact removes the key from the text of a ProviderError the package built
// itself (a stream's error event may echo anything).
func (m *Model) redact(e *model.ProviderError) *model.ProviderError {
	e.Type = retry.Redact(e.Type, m.key)
	e.Message = retry.Redact(e.Message, m.key)
	e.Detail = retry.Redact(e.Detail, m.key)
	return e
}

// wireError is the error object of the shapes OpenAI-compatible servers send
// inside a 200 stream: {"error":{"message","type","code"}} (OpenAI,
// llama.cpp, LiteLLM, OpenRouter, with a numeric code there),
// {"error":"text"}, and vLLM's flat {"object":"error","message","type","code"}.
type wireError struct {
	Object  string          `json:"object"`
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
	Error   json.RawMessage `json:"error"`
}

// eventError returns the ProviderError an event's data describes, or nil when
// the data is not an error.
func eventError(data []byte) *model.ProviderError {
	var w wireError
	if json.Unmarshal(data, &w) != nil {
		return nil
	}
	switch {
	case w.Object == "error":
	case len(w.Error) > 0 && string(w.Error) != "null":
		var text string
		if json.Unmarshal(w.Error, &text) == nil {
			w = wireError{Message: text}
			break
		}
		var inner wireError
		if json.Unmarshal(w.Error, &inner) != nil {
			return &model.ProviderError{Provider: Provider, Message: provider.Truncate(string(w.Error), 300)}
		}
		w = inner
	default:
		return nil
	}
	code := strings.Trim(string(w.Code), `"`)
	if code == "null" {
		code = ""
	}
	e := &model.ProviderError{Provider: Provider, Type: cmp.Or(w.Type, code), Message: provider.Truncate(w.Message, 1000)}
	if e.Message == "" {
		e.Message = "the server sent an error event without a message"
	}
	status, _ := strconv.Atoi(code)
	e.Retryable = retry.RetryableStatus(status) || w.Type == "server_error" || w.Type == "rate_limit_exceeded"
	return e
}

// chunkError returns the error a decoded chunk stands for: an error object
// that the SDK decoded as a chunk because it has no "error" key (vLLM's flat
// shape), or a choice finished with finish_reason "error" (OpenRouter, some
// gateways). It returns nil for an ordinary chunk.
func chunkError(c oai.ChatCompletionChunk) *model.ProviderError {
	for _, ch := range c.Choices {
		if ch.FinishReason == "error" {
			if e := eventError([]byte(c.RawJSON())); e != nil {
				return e
			}
			return &model.ProviderError{Provider: Provider, Message: `the server ended the stream with finish_reason "error"`}
		}
	}
	if len(c.Choices) == 0 && !c.JSON.Usage.Valid() {
		return eventError([]byte(c.RawJSON()))
	}
	return nil
}

// errNoFinish is the failure of a stream that ended (the connection closed,
// or [DONE] came) before any choice reported a finish_reason: what arrived
// may be cut anywhere, so none of its tool calls may run.
var errNoFinish = &model.ProviderError{Provider: Provider, Message: "the stream ended before a finish_reason: the answer is incomplete"}

// accumulator assembles a streamed chat completion.
//
// Tool calls are keyed by the index of each tool-call delta, as OpenAI sends
// them; a delta that carries an id different from the one its index already
// has starts a new call (servers such as Ollama send several complete calls
// all with index 0). A call whose id never arrives gets one of
// [model.NewCallID].
type accumulator struct {
	text   strings.Builder
	calls  []*callBuilder // in order of first appearance
	byIdx  map[int64]*callBuilder
	finish string
	usage  oai.CompletionUsage
	model  string
	// For Response.Raw: the completion's id, creation time, fingerprint and
	// service tier, and its usage as the provider sent it.
	id, fingerprint, tier string
	created               int64
	rawUsage              json.RawMessage
}

type callBuilder struct {
	id, name string
	args     strings.Builder
}

// add takes in one chunk and returns its text delta, or the error the chunk
// reports.
func (a *accumulator) add(c oai.ChatCompletionChunk) (string, *model.ProviderError) {
	if e := chunkError(c); e != nil {
		return "", e
	}
	if c.Model != "" {
		a.model = c.Model
	}
	a.id, a.created = cmp.Or(c.ID, a.id), cmp.Or(c.Created, a.created)
	a.fingerprint, a.tier = cmp.Or(c.SystemFingerprint, a.fingerprint), cmp.Or(string(c.ServiceTier), a.tier)
	if c.JSON.Usage.Valid() && (c.Usage.PromptTokens != 0 || c.Usage.CompletionTokens != 0 || c.Usage.TotalTokens != 0) {
		a.usage = c.Usage
		a.rawUsage = json.RawMessage(c.JSON.Usage.Raw())
	}
	var delta string
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		delta += ch.Delta.Content
		for _, tc := range ch.Delta.ToolCalls {
			if a.byIdx == nil {
				a.byIdx = map[int64]*callBuilder{}
			}
			b := a.byIdx[tc.Index]
			if b == nil || (tc.ID != "" && b.id != "" && tc.ID != b.id) {
				b = &callBuilder{}
				a.byIdx[tc.Index] = b
				a.calls = append(a.calls, b)
			}
			if b.id == "" {
				b.id = tc.ID
			}
			if b.name == "" {
				b.name = tc.Function.Name
			}
			b.args.WriteString(tc.Function.Arguments)
		}
		if ch.FinishReason != "" {
			a.finish = ch.FinishReason
		}
	}
	a.text.WriteString(delta)
	return delta, nil
}

func (a *accumulator) response() (*model.Response, *model.ProviderError) {
	if a.finish == "" {
		e := *errNoFinish
		return nil, &e
	}
	msg := model.Message{Role: model.RoleAssistant, Content: a.text.String()}
	for i, b := range a.calls {
		if b.name == "" {
			return nil, &model.ProviderError{Provider: Provider, Message: fmt.Sprintf("streamed tool call %d has no function name", i)}
		}
		msg.ToolCalls = append(msg.ToolCalls, model.ToolCall{ID: cmp.Or(b.id, model.NewCallID()), Name: b.name, Arguments: arguments(b.args.String())})
	}
	return &model.Response{
		Message:      msg,
		Usage:        usage(a.usage),
		FinishReason: finishReason(a.finish, len(msg.ToolCalls) > 0),
		Model:        a.model,
		Raw:          a.raw(),
	}, nil
}

// raw is the streamed completion as the chat.completion object the API
// returns without streaming (id, created, model, the one choice with its
// message and finish_reason, usage as sent), so that Response.Raw has one
// shape on both paths.
func (a *accumulator) raw() json.RawMessage {
	type function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type toolCall struct {
		ID       string   `json:"id"`
		Type     string   `json:"type"`
		Function function `json:"function"`
	}
	type message struct {
		Role      string     `json:"role"`
		Content   *string    `json:"content"`
		ToolCalls []toolCall `json:"tool_calls,omitempty"`
	}
	type choice struct {
		Index        int     `json:"index"`
		Message      message `json:"message"`
		FinishReason string  `json:"finish_reason"`
	}
	var content *string
	if t := a.text.String(); t != "" || len(a.calls) == 0 {
		content = &t
	}
	msg := message{Role: "assistant", Content: content}
	for _, b := range a.calls {
		msg.ToolCalls = append(msg.ToolCalls, toolCall{ID: b.id, Type: "function", Function: function{Name: b.name, Arguments: b.args.String()}})
	}
	b, err := json.Marshal(struct {
		ID                string          `json:"id"`
		Object            string          `json:"object"`
		Created           int64           `json:"created"`
		Model             string          `json:"model"`
		Choices           []choice        `json:"choices"`
		Usage             json.RawMessage `json:"usage,omitempty"`
		ServiceTier       string          `json:"service_tier,omitempty"`
		SystemFingerprint string          `json:"system_fingerprint,omitempty"`
	}{a.id, "chat.completion", a.created, a.model, []choice{{Message: msg, FinishReason: a.finish}}, a.rawUsage, a.tier, a.fingerprint})
	if err != nil {
		return nil
	}
	return b
}
