// Package openai is tollgate's provider for the OpenAI Chat Completions API
// and the servers that speak it (OpenRouter, Ollama, vLLM, LM Studio, ...).
// It speaks the wire format itself, with net/http: answers are decoded with
// encoding/json into lean structs, requests are written by hand into the
// bytes encoding/json would write. The official SDK
// github.com/openai/openai-go/v3 is its test oracle: the tests decode the
// requests it sends and the answers it reads with the SDK's own types and
// compare.
//
// It only translates: tollgate's [model.Request] becomes a Chat Completions
// request (system, user, assistant messages with tool calls, tool messages
// keyed by call ID, function tools whose parameters are the raw JSON Schema
// of [model.ToolDef.InputSchema], MaxTokens as max_completion_tokens), and
// the answer becomes a [model.Response]. OpenAI has no error flag on tool
// messages: a failed tool result is sent as its text. [Model.Stream] reads the server-sent events of a
// streaming request (stream_options.include_usage set), assembles tool-call
// arguments across chunks by their index (a new id on a known index starts a
// new call; every choice is part of the one answer, whatever its index; a
// character that a server cut between two chunks, as UTF-8 bytes or as the
// halves of an escaped surrogate pair, is put together) and takes the usage
// from the last chunk that has one. An error inside a 200
// stream, in any of the shapes compatible servers send ("event: error"
// included), and a stream that ends without a finish_reason are a
// *model.ProviderError: a cut stream never yields a response whose tool
// calls could run. A server that answers a streaming request with one JSON
// body is read as Generate reads it. An error body that is not JSON (a
// proxy's HTML page, plain text) becomes a one-line message. Wire
// format: https://platform.openai.com/docs/api-reference/chat.
//
// Failures are retried by the shared policy of internal/retry (429, 500,
// 502, 503, 504, network errors; Retry-After in seconds honoured). A failure
// is a *model.ProviderError whose text never contains the API key. The key
// is sent as "Authorization: Bearer <key>" and comes only from [Options];
// [KeyFromEnv] is the documented way to read it from the environment. The
// package never reads other environment variables (OPENAI_BASE_URL and
// friends are not consulted). A JSON answer and a whole stream are bounded
// to 32 MiB (Options.MaxResponseBytes), one event of a stream to 8 MiB; a
// redirect is followed only within the base URL's origin.
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
	"sync/atomic"
	"time"

	"github.com/tollgate-dev/tollgate/internal/ids"
	"github.com/tollgate-dev/tollgate/internal/provider"
	"github.com/tollgate-dev/tollgate/internal/retry"
	"github.com/tollgate-dev/tollgate/model"
)

// providerName is the name this package gives itself in errors and logs.
const providerName = "openai"

// Options configure a [Model]. The zero value (or nil) talks to OpenAI with
// no key, which only suits servers that need none (a local Ollama).
type Options struct {
	// BaseURL is the API root, the path before "/chat/completions"
	// (default https://api.openai.com/v1); for Ollama, "http://localhost:11434/v1".
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
	// Timeout, if any, bounds each attempt including a whole stream. A
	// redirect is followed only to the scheme, host and port of BaseURL
	// (then HTTPClient's own CheckRedirect decides); one elsewhere fails
	// the call, not retried, with a *model.ProviderError that names both
	// origins, so that neither the key nor the conversation goes to a host
	// that was not configured.
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
	// 10 minutes; negative: no bound but ctx's). When it fires, the
	// error is a retryable *model.ProviderError that says so, and
	// errors.Is(err, context.DeadlineExceeded) holds.
	Timeout time.Duration
	// MaxResponseBytes bounds the answer as read from the server: the JSON
	// body of Generate, the whole event stream of Stream, counted as it is
	// read, whatever it holds (0 or negative: 32 MiB). More ends the call
	// with a *model.ProviderError, not retried, that states the limit;
	// the text deltas already yielded stay yielded. One event of a stream
	// is bounded to 8 MiB besides.
	MaxResponseBytes int64
	// Logger receives retries, with how long each waits, at level Warn and
	// each call at Debug. Nil sends the Warn records to [slog.Default] and
	// discards the rest, so that a retry that waits is never silent.
	// Credentials are never logged.
	Logger *slog.Logger
}

// Model is an OpenAI Chat Completions model. It implements [model.Model] and
// [model.Streamer] and is safe for concurrent use.
type Model struct {
	client *http.Client
	url    string // the chat completions endpoint
	// jsonHeader and sseHeader are the whole header of a request (from
	// provider.RequestHeader: Content-Type, Accept, then Authorization and Options.Headers),
	// built once and shared by every request.
	jsonHeader, sseHeader http.Header
	model                 string
	key                   string
	policy                retry.Policy
	timeout               time.Duration
	maxBody               int64 // Options.MaxResponseBytes, or its default
	log                   *slog.Logger
	tools                 atomic.Pointer[toolCache] // the last request's tools
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
	base, err := provider.BaseURL(providerName, o.BaseURL, provider.OpenAIBaseURL, o.APIKey)
	if err != nil {
		return nil, err
	}
	header := http.Header{"User-Agent": {"tollgate (model/openai)"}}
	if o.APIKey != "" {
		header.Set("Authorization", "Bearer "+o.APIKey)
	}
	provider.Headers(o.Headers, func(k, v string) any { header.Set(k, v); return nil }, func(k, v string) any { header.Add(k, v); return nil })
	return &Model{
		client:     provider.Client(o.HTTPClient, base),
		url:        base + "chat/completions",
		jsonHeader: provider.RequestHeader(header, "application/json"),
		sseHeader:  provider.RequestHeader(header, "text/event-stream"),
		model:      o.Model,
		key:        o.APIKey,
		policy:     retry.Policy{MaxRetries: o.MaxRetries, BaseDelay: o.RetryBaseDelay, MaxDelay: o.RetryMaxDelay},
		timeout:    o.Timeout,
		maxBody:    maxBody(o.MaxResponseBytes),
		log:        provider.Logger(o.Logger, providerName),
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
	return resp, provider.TimeoutError(providerName, ctx, tctx, err, m.timeout)
}

func (m *Model) generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	w := new(wireRequest)
	if err := m.request(req, w); err != nil {
		return nil, err
	}
	body, err := w.encode()
	if err != nil {
		return nil, fmt.Errorf("openai: encoding the request: %w", err)
	}
	var raw []byte
	err = retry.Do(ctx, m.policy, m.log, func(ctx context.Context, attempt int) error {
		m.log.LogAttrs(ctx, slog.LevelDebug, "chat completion", slog.String("model", w.Model), slog.Int("attempt", attempt))
		resp, err := m.post(ctx, body, m.jsonHeader)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := provider.ReadBodySize(resp.Body, resp.ContentLength, m.maxBody)
		if err != nil {
			return m.wrap(ctx, fmt.Errorf("reading the answer: %w", err))
		}
		raw = b
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m.response(raw, w.Model)
}

// post sends one request and returns the response when its status is 2xx,
// or the *model.ProviderError its status and body describe.
func (m *Model) post(ctx context.Context, body []byte, header http.Header) (*http.Response, error) {
	resp, err := provider.Post(ctx, m.client, m.url, header, body)
	if err != nil {
		return nil, m.wrap(ctx, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	b, _ := provider.ReadBody(resp.Body, 64<<10)
	return nil, m.statusError(resp.StatusCode, resp.Header, b)
}

// statusError is the ProviderError of a non-2xx answer: the error object of
// body ({"error":{"message","type","code"}}, {"error":"text"}, or a flat
// {"message","type","code"}), its code, else its type, as the error's type;
// else the body's first 300 bytes as its message.
func (m *Model) statusError(status int, h http.Header, body []byte) *model.ProviderError {
	var w wireError
	if json.Unmarshal(body, &w) == nil && len(w.Error) > 0 && string(w.Error) != "null" {
		var text string
		if json.Unmarshal(w.Error, &text) == nil {
			w = wireError{Message: text}
		} else {
			var inner wireError
			_ = json.Unmarshal(w.Error, &inner)
			w = inner
		}
	}
	code := strings.Trim(string(w.Code), `"`)
	if code == "null" {
		code = ""
	}
	msg := w.Message
	if msg == "" {
		msg = provider.BodyText(body)
	}
	return retry.HTTPError(providerName, status, h, cmp.Or(code, w.Type), msg, m.key)
}

// Stream implements [model.Streamer]: a streaming Chat Completions call.
// Text deltas are yielded as they arrive, in whole characters: a character
// that the server cut between two chunks (its UTF-8 bytes, or the halves of
// an escaped surrogate pair) is held back from the first delta and yielded
// whole with the next, so that the deltas join into the final text; the
// last chunk carries the whole
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
			return yield(c, provider.TimeoutError(providerName, ctx, tctx, err, m.timeout))
		})
	}
}

func (m *Model) stream(ctx context.Context, req *model.Request, yield func(model.Chunk, error) bool) {
	w := new(wireRequest)
	if err := m.request(req, w); err != nil {
		yield(model.Chunk{}, err)
		return
	}
	w.Stream, w.StreamOptions = true, includeUsage
	body, err := w.encode()
	if err != nil {
		yield(model.Chunk{}, fmt.Errorf("openai: encoding the request: %w", err))
		return
	}
	var (
		resp  *http.Response
		ev    *provider.Events
		c     = new(wireCompletion) // every chunk is decoded into it
		whole *model.Response       // the answer of a server that did not stream
	)
	err = retry.Do(ctx, m.policy, m.log, func(ctx context.Context, attempt int) error {
		m.log.LogAttrs(ctx, slog.LevelDebug, "chat completion stream", slog.String("model", w.Model), slog.Int("attempt", attempt))
		r, err := m.post(ctx, body, m.sseHeader)
		if err != nil {
			return err
		}
		// A server that does not stream (or a gateway that fails) answers
		// a streaming request with one JSON body: a chat completion, or an
		// error object, read as Generate reads them. Events under a JSON
		// Content-Type are read as events.
		src, isJSON := provider.JSONAnswer(r)
		if isJSON {
			defer r.Body.Close()
			b, err := provider.ReadBody(src, m.maxBody)
			if err != nil {
				return m.wrap(ctx, fmt.Errorf("reading the answer: %w", err))
			}
			out, err := m.response(b, w.Model)
			if err != nil {
				return err
			}
			whole = out
			return nil
		}
		e := provider.GetEvents(src, m.maxBody)
		*c = wireCompletion{}
		ok, perr := nextChunk(e, c)
		if ok && perr == nil {
			resp, ev = r, e
			return nil
		}
		_ = r.Body.Close()
		err = e.Err()
		provider.PutEvents(e)
		// A server that fails at once may still answer 200 and send the
		// error as the first event (vLLM): retry it like a status.
		if perr != nil {
			return m.redact(perr)
		}
		if err == nil {
			err = errEmptyStream
		}
		return m.wrap(ctx, err)
	})
	if err != nil {
		yield(model.Chunk{}, err)
		return
	}
	if whole != nil {
		if whole.Model == "" {
			whole.Model = w.Model
		}
		if d := whole.Message.Content; d != "" && !yield(model.Chunk{Delta: d}, nil) {
			return
		}
		yield(model.Chunk{Response: whole}, nil)
		return
	}
	defer resp.Body.Close()
	defer provider.PutEvents(ev) // the chunks are decoded into values of their own
	acc := accumulator{}
	for {
		d, perr := acc.add(c)
		if perr != nil {
			yield(model.Chunk{}, m.redact(perr))
			return
		}
		if d != "" && !yield(model.Chunk{Delta: d}, nil) {
			return
		}
		ok, perr := nextChunk(ev, c)
		if perr != nil {
			yield(model.Chunk{}, m.redact(perr))
			return
		}
		if !ok {
			break
		}
	}
	if err := ev.Err(); err != nil {
		yield(model.Chunk{}, m.wrap(ctx, err))
		return
	}
	out, perr := acc.response()
	if perr != nil {
		yield(model.Chunk{}, m.redact(perr))
		return
	}
	// What was held back: a character that stayed cut, as U+FFFD.
	if d, _ := provider.TextDelta(acc.text.String(), acc.sent, true); d != "" && !yield(model.Chunk{Delta: d}, nil) {
		return
	}
	if out.Model == "" {
		out.Model = w.Model
	}
	yield(model.Chunk{Response: out}, nil)
}

// nextChunk reads the next chunk of a stream into c. ok is false at the end
// of the stream ("data: [DONE]", or the end of the body: Events.Err tells
// which), perr is set when the event is an error object, or a chunk that
// stands for an error, or data that is not JSON.
func nextChunk(e *provider.Events, c *wireCompletion) (ok bool, perr *model.ProviderError) {
	if !e.Next() {
		return false, nil
	}
	data := e.Data()
	if bytes.HasPrefix(data, []byte("[DONE]")) {
		return false, nil
	}
	if string(e.Type()) == "error" {
		// An "event: error" is an error whatever its data holds.
		if pe := eventError(data); pe != nil {
			return false, pe
		}
		var w wireError // a flat object without "object": "error"
		if json.Unmarshal(data, &w) == nil && w.Message != "" {
			return false, errorOf(w)
		}
		return false, &model.ProviderError{Provider: providerName, Message: cmp.Or(provider.BodyText(data), "the server sent an error event without a message")}
	}
	c.reset()
	if err := decode(data, c); err != nil {
		return false, &model.ProviderError{Provider: providerName, Message: "the stream sent an event that is not JSON", Detail: provider.Truncate(err.Error()+": "+string(data), 300)}
	}
	if hasError(c.Error) {
		if pe := eventError(data); pe != nil {
			return false, pe
		}
	}
	if pe := chunkError(c, data); pe != nil {
		return false, pe
	}
	return true, nil
}

var errEmptyStream = errors.New("stream ended before its first event")

// wrap turns a transport failure into a *model.ProviderError, or the
// context's error when ctx has ended.
func (m *Model) wrap(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	e := retry.NetworkError(providerName, err, m.key)
	if errors.Is(err, provider.ErrTooLarge) {
		// Not a transient failure: the same request would be as large.
		e.Message = "the answer is larger than its limit (Options.MaxResponseBytes)"
		e.Retryable = false
	}
	return e
}

// response translates a chat completion, as the server sent it, into a
// tollgate response; requested is the model ID the request named, the
// response's model when the answer names none (as on [Model.Stream]).
func (m *Model) response(raw []byte, requested string) (*model.Response, error) {
	a := new(answer)
	a.w.Model = provider.String(requested)
	a.w.Choices = a.choices[:0]
	a.choices[0].Message.ToolCalls = a.calls[:0]
	c := &a.w
	if err := decode(raw, c); err != nil {
		return nil, &model.ProviderError{Provider: providerName, Message: "the answer is not a JSON chat completion", Detail: retry.Redact(provider.Truncate(err.Error(), 300), m.key)}
	}
	if len(c.Choices) == 0 {
		if e := eventError(raw); e != nil {
			return nil, m.redact(e)
		}
		return nil, &model.ProviderError{Provider: providerName, Message: "response has no choices"}
	}
	ch := &c.Choices[0]
	if ch.FinishReason == "error" {
		if e := eventError(raw); e != nil {
			return nil, m.redact(e)
		}
		return nil, &model.ProviderError{Provider: providerName, Message: `the server answered with finish_reason "error"`}
	}
	msg := model.Message{Role: model.RoleAssistant, Content: ch.Message.Content}
	if n := len(ch.Message.ToolCalls); n > 0 && n <= len(a.toolCalls) {
		msg.ToolCalls = a.toolCalls[:0:n]
	}
	for _, tc := range ch.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue
		}
		msg.ToolCalls = append(msg.ToolCalls, model.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: arguments(provider.ValidBytes(tc.Function.Arguments))})
	}
	if len(msg.ToolCalls) == 0 {
		msg.ToolCalls = nil
	}
	a.resp = model.Response{
		Message:      msg,
		Usage:        usage(c.Usage.wireUsage),
		FinishReason: finishReason(string(ch.FinishReason), len(msg.ToolCalls) > 0),
		Model:        string(c.Model),
		Raw:          json.RawMessage(raw),
	}
	// The response outlives the answer's decoding: drop what it does not
	// use.
	a.w, a.choices, a.calls = wireAnswer{}, [len(a.choices)]wireChoice{}, [len(a.calls)]wireToolCallOut{}
	return &a.resp, nil
}

// arguments keeps the model's arguments when they are valid JSON; empty
// text becomes {}, and text that is not JSON is passed on as a JSON string
// so that argument validation reports it to the model.
func arguments(s []byte) json.RawMessage {
	if len(bytes.TrimSpace(s)) == 0 {
		return json.RawMessage("{}")
	}
	if json.Valid(s) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(string(s))
	return b
}

// wireArguments is the arguments text of a tool call sent back to the
// server: the JSON as the transcript has it, {} for none, and the model's own
// text for arguments kept as a JSON string because they were not JSON (a
// call cut off at the output limit), so that the model sees what it wrote.
// The JSON is returned as a view of args, not a copy: the caller encodes it
// before args can change.
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

func usage(u wireUsage) model.Usage {
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
			return &model.ProviderError{Provider: providerName, Message: provider.Truncate(string(w.Error), 300)}
		}
		w = inner
	default:
		return nil
	}
	return errorOf(w)
}

// errorOf is the ProviderError of an error object: its message, its type
// (else its code) as the error's type, retryable when its code is a
// transient status or its type a server error or a rate limit.
func errorOf(w wireError) *model.ProviderError {
	code := strings.Trim(string(w.Code), `"`)
	if code == "null" {
		code = ""
	}
	e := &model.ProviderError{Provider: providerName, Type: cmp.Or(w.Type, code), Message: provider.Truncate(w.Message, 1000)}
	if e.Message == "" {
		e.Message = "the server sent an error event without a message"
	}
	status, _ := strconv.Atoi(code)
	e.Retryable = retry.RetryableStatus(status) || w.Type == "server_error" || w.Type == "rate_limit_exceeded"
	return e
}

// chunkError returns the error a decoded chunk stands for: an error object
// without an "error" key (vLLM's flat shape), or a choice finished with
// finish_reason "error" (OpenRouter, some gateways). It returns nil for an
// ordinary chunk. data is the chunk as sent.
func chunkError(c *wireCompletion, data []byte) *model.ProviderError {
	for _, ch := range c.Choices {
		if ch.FinishReason == "error" {
			if e := eventError(data); e != nil {
				return e
			}
			return &model.ProviderError{Provider: providerName, Message: `the server ended the stream with finish_reason "error"`}
		}
	}
	if len(c.Choices) == 0 && !c.Usage.present() {
		return eventError(data)
	}
	return nil
}

// errNoFinish is the failure of a stream that ended (the connection closed,
// or [DONE] came) before any choice reported a finish_reason: what arrived
// may be cut anywhere, so none of its tool calls may run.
var errNoFinish = &model.ProviderError{Provider: providerName, Message: "the stream ended before a finish_reason: the answer is incomplete"}

// accumulator assembles a streamed chat completion.
//
// Tool calls are keyed by the index of each tool-call delta, as OpenAI sends
// them; a delta that carries an id different from the one its index already
// has starts a new call (servers such as Ollama send several complete calls
// all with index 0), and so does a second delta on one index in one chunk
// (several complete calls with neither index nor id). A call whose id never arrives gets one of
// internal/ids.New.
type accumulator struct {
	text   strings.Builder // as the chunks sent it: a character cut between two is whole only once both arrived
	sent   int             // the bytes of text handed on as deltas
	calls  []callBuilder   // in order of first appearance
	finish string
	usage  wireUsage
	model  string
	// For Response.Raw: the completion's id, creation time, fingerprint and
	// service tier, and its usage as the provider sent it.
	id, fingerprint, tier string
	created               int64
	rawUsage              json.RawMessage
}

// callBuilder is a streamed tool call: the index its deltas carry, and what
// they sent so far.
type callBuilder struct {
	index    int64
	id, name string
	args     []byte
}

// call returns the call that a delta with index and id adds to: the last
// one with that index, unless the delta's id differs from the one it has or
// fresh is set (the chunk had a delta on that index already: see indexUsed);
// else a new one.
func (a *accumulator) call(index int64, id string, fresh bool) *callBuilder {
	for i := len(a.calls) - 1; i >= 0 && !fresh; i-- {
		if b := &a.calls[i]; b.index == index {
			if id != "" && b.id != "" && id != b.id {
				break
			}
			return b
		}
	}
	if a.calls == nil {
		a.calls = make([]callBuilder, 0, 4)
	}
	a.calls = append(a.calls, callBuilder{index: index})
	return &a.calls[len(a.calls)-1]
}

// add takes in one chunk and returns its text delta, or the error the chunk
// reports.
func (a *accumulator) add(c *wireCompletion) (string, *model.ProviderError) {
	if c.Model != "" {
		a.model = string(c.Model)
	}
	a.id, a.created = cmp.Or(string(c.ID), a.id), cmp.Or(c.Created, a.created)
	a.fingerprint, a.tier = cmp.Or(string(c.SystemFingerprint), a.fingerprint), cmp.Or(string(c.ServiceTier), a.tier)
	if u := c.Usage.wireUsage; u.PromptTokens != 0 || u.CompletionTokens != 0 || u.TotalTokens != 0 {
		a.usage = u
		a.rawUsage = bytes.Clone(c.Usage.raw)
	}
	var delta string
	for i := range c.Choices {
		// Every choice is part of the one answer: the request never asks
		// for more than one, and a proxy in front of the Messages API
		// (LiteLLM, before it fixed it) numbers choices by content block,
		// the text at 0 and the tool calls at 1 and after.
		ch := &c.Choices[i]
		delta += string(ch.Delta.Content)
		for i := range ch.Delta.ToolCalls {
			tc := &ch.Delta.ToolCalls[i]
			b := a.call(tc.Index, tc.ID, indexUsed(ch.Delta.ToolCalls[:i], tc.Index))
			if b.id == "" {
				b.id = tc.ID
			}
			if b.name == "" {
				b.name = tc.Function.Name
			}
			if b.args == nil {
				b.args = tc.Function.Arguments // decoded into its own bytes
			} else {
				b.args = append(b.args, tc.Function.Arguments...)
			}
		}
		if ch.FinishReason != "" {
			a.finish = string(ch.FinishReason)
		}
	}
	if delta == "" {
		return "", nil
	}
	a.text.WriteString(delta)
	// A character cut between two chunks is held back until it is whole.
	d, end := provider.TextDelta(a.text.String(), a.sent, false)
	a.sent = end
	return d, nil
}

// indexUsed reports whether one of the tool-call deltas before, in the same
// chunk, has index idx: a chunk carries at most one piece of a call, so a
// second entry on an index (servers that send every call complete in one
// chunk with neither index nor id) is a call of its own.
func indexUsed(before []wireToolCallOut, idx int64) bool {
	for _, tc := range before {
		if tc.Index == idx {
			return true
		}
	}
	return false
}

func (a *accumulator) response() (*model.Response, *model.ProviderError) {
	if a.finish == "" {
		e := *errNoFinish
		return nil, &e
	}
	msg := model.Message{Role: model.RoleAssistant, Content: provider.ValidText(a.text.String())}
	if len(a.calls) > 0 {
		msg.ToolCalls = make([]model.ToolCall, len(a.calls))
	}
	for i := range a.calls {
		b := &a.calls[i]
		if b.name == "" {
			return nil, &model.ProviderError{Provider: providerName, Message: fmt.Sprintf("streamed tool call %d has no function name", i)}
		}
		id := b.id
		if id == "" {
			id = ids.New("call_")
		}
		b.args = provider.ValidBytes(b.args) // a character cut between two pieces, put together (Raw too)
		msg.ToolCalls[i] = model.ToolCall{ID: id, Name: b.name, Arguments: arguments(b.args)}
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
// shape on both paths. It is written by hand: the bytes json.Marshal writes
// for the same object (the tests compare the two).
func (a *accumulator) raw() json.RawMessage {
	n := 256 + len(a.id) + len(a.model) + a.text.Len()*9/8 + len(a.rawUsage) + len(a.tier) + len(a.fingerprint)
	for _, c := range a.calls {
		n += 64 + len(c.id) + len(c.name) + len(c.args)*5/4
	}
	b := make([]byte, 0, n)
	b = append(b, `{"id":`...)
	b = provider.AppendString(b, a.id)
	b = append(b, `,"object":"chat.completion","created":`...)
	b = strconv.AppendInt(b, a.created, 10)
	b = append(b, `,"model":`...)
	b = provider.AppendString(b, a.model)
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	if t := provider.ValidText(a.text.String()); t != "" || len(a.calls) == 0 {
		b = provider.AppendString(b, t)
	} else {
		b = append(b, "null"...)
	}
	if len(a.calls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i, c := range a.calls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = provider.AppendString(b, c.id)
			b = append(b, `,"type":"function","function":{"name":`...)
			b = provider.AppendString(b, c.name)
			b = append(b, `,"arguments":`...)
			b = provider.AppendString(b, string(c.args))
			b = append(b, "}}"...)
		}
		b = append(b, ']')
	}
	b = append(b, `},"finish_reason":`...)
	b = provider.AppendString(b, a.finish)
	b = append(b, "}]"...)
	if len(a.rawUsage) > 0 {
		b = append(b, `,"usage":`...)
		var err error
		if b, err = provider.AppendRaw(b, a.rawUsage); err != nil {
			return nil
		}
	}
	if a.tier != "" {
		b = append(b, `,"service_tier":`...)
		b = provider.AppendString(b, a.tier)
	}
	if a.fingerprint != "" {
		b = append(b, `,"system_fingerprint":`...)
		b = provider.AppendString(b, a.fingerprint)
	}
	return append(b, '}')
}

// maxBody is [Options.MaxResponseBytes], or its default when n <= 0.
func maxBody(n int64) int64 {
	if n <= 0 {
		return provider.MaxBodyBytes
	}
	return n
}
