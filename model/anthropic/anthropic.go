// Package anthropic is tollgate's provider for Anthropic's Messages API. It
// speaks the wire format itself, with net/http: answers and events are
// decoded by hand into what encoding/json would decode from them (checked
// by differential tests and a fuzz target), requests are written by hand
// into the bytes encoding/json would write. The official SDK
// github.com/anthropics/anthropic-sdk-go/v2 is its test oracle: the tests
// decode the requests it sends and the answers it reads with the SDK's own
// types and compare.
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
// and assembles tool inputs per content block (or takes the input of
// content_block_start, where some compatible servers send it whole). An
// event without an event: line is known by the type in its data, as some
// compatible servers send them; ping events are skipped. An error event is
// a *model.ProviderError with the server's message (its data's text, on one
// line, when that is not JSON). A server that answers a streaming request
// with one JSON body (a message, or an error object) is read as Generate
// reads it.
//
// Every request it builds keeps the Messages API's rules by construction
// (the list is above messages in the source): tool_use inputs are objects,
// failed tool results have text, ids fit the API's alphabet, every tool call
// has its result, blank text is left out. What cannot be made valid is an
// error before anything is sent.
//
// The key is sent in the x-api-key header, with the anthropic-version header
// [DefaultAPIVersion] unless [Options.APIVersion] says otherwise. Failures
// are retried by internal/retry (429, 500, 502, 503, 504, Anthropic's 529
// overloaded, network errors; Retry-After in seconds honoured) and are
// reported as *model.ProviderError, whose text never contains the key. The
// package reads no environment variable; [KeyFromEnv] is the documented way
// to. A JSON answer and a whole stream are bounded to 32 MiB
// (Options.MaxResponseBytes), one event of a stream to 8 MiB; a redirect is
// followed only within the base URL's origin.
package anthropic

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
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

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
	// DefaultAPIVersion is the anthropic-version header sent by default: the
	// version of the wire format of the official SDK this package is tested
	// against. This version rejects sampling parameters,
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
	// [DefaultTimeout]; negative: no bound but ctx's). When it fires, the
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

// DefaultTimeout is [Options.Timeout] when it is 0.
const DefaultTimeout = provider.DefaultTimeout

// Model is an Anthropic Messages API model. It implements [model.Model] and
// [model.Streamer] and is safe for concurrent use.
type Model struct {
	client *http.Client
	url    string // the messages endpoint
	// jsonHeader and sseHeader are the whole header of a request (from
	// provider.RequestHeader: Content-Type, Accept, then x-api-key,
	// anthropic-version, Options.Headers), built once and shared by every
	// request.
	jsonHeader, sseHeader http.Header
	model                 string
	key                   string
	maxTokens             int
	temperature           bool // whether the API version accepts sampling parameters
	policy                retry.Policy
	timeout               time.Duration
	maxBody               int64 // Options.MaxResponseBytes, or its default
	log                   *slog.Logger
	tools                 atomic.Pointer[toolCache] // the last request's tools
}

// toolCache is the tools of a request as sent, with copies of the
// definitions they were made from: a request whose definitions are equal
// (an agent sends the same tools every turn) reuses them as they are. Both
// are read-only once stored.
type toolCache struct {
	defs []model.ToolDef // with their own InputSchema bytes
	wire []wireTool
}

// matches reports whether defs equal the definitions of c, byte for byte.
func (c *toolCache) matches(defs []model.ToolDef) bool {
	if c == nil || len(c.defs) != len(defs) {
		return false
	}
	for i, d := range defs {
		o := &c.defs[i]
		if d.Name != o.Name || d.Description != o.Description ||
			(d.InputSchema == nil) != (o.InputSchema == nil) || !bytes.Equal(d.InputSchema, o.InputSchema) {
			return false
		}
	}
	return true
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
	version := cmp.Or(o.APIVersion, DefaultAPIVersion)
	header := http.Header{"User-Agent": {"tollgate (model/anthropic)"}, "Anthropic-Version": {version}}
	if o.APIKey != "" {
		header.Set("X-Api-Key", o.APIKey)
	}
	provider.Headers(o.Headers, func(k, v string) any { header.Set(k, v); return nil }, func(k, v string) any { header.Add(k, v); return nil })
	return &Model{
		client:      provider.Client(o.HTTPClient, base),
		url:         base + "v1/messages",
		jsonHeader:  provider.RequestHeader(header, "application/json"),
		sseHeader:   provider.RequestHeader(header, "text/event-stream"),
		model:       o.Model,
		key:         o.APIKey,
		maxTokens:   cmp.Or(o.MaxTokens, DefaultMaxTokens),
		temperature: version < DefaultAPIVersion,
		policy:      retry.Policy{MaxRetries: o.MaxRetries, BaseDelay: o.RetryBaseDelay, MaxDelay: o.RetryMaxDelay},
		timeout:     o.Timeout,
		maxBody:     maxBody(o.MaxResponseBytes),
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
	tctx, cancel := provider.WithTimeout(ctx, m.timeout)
	defer cancel()
	resp, err := m.generate(tctx, req)
	return resp, provider.TimeoutError(Provider, ctx, tctx, err, m.timeout)
}

func (m *Model) generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	body, id, err := m.body(ctx, req, false)
	if err != nil {
		return nil, err
	}
	var raw []byte
	err = retry.Do(ctx, m.policy, m.log, func(ctx context.Context, attempt int) error {
		m.log.LogAttrs(ctx, slog.LevelDebug, "messages", slog.String("model", id), slog.Int("attempt", attempt))
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
	return m.response(raw, id)
}

// body returns req translated and encoded, and the model it names. The
// turns are built in a scratch from the pool, given back once encoded.
func (m *Model) body(ctx context.Context, req *model.Request, stream bool) (body []byte, id string, err error) {
	sc := scratchPool.Get().(*scratch)
	defer sc.free()
	w, err := m.requestWith(ctx, req, sc)
	if err != nil {
		return nil, "", err
	}
	w.Stream = stream
	if body, err = w.encode(); err != nil {
		return nil, "", fmt.Errorf("anthropic: encoding the request: %w", err)
	}
	return body, w.Model, nil
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
	var w wireResponse
	var typ, msg string
	if json.Unmarshal(b, &w) == nil && w.Error != nil {
		typ, msg = w.Error.Type, w.Error.Message
	}
	if msg == "" {
		msg = provider.BodyText(b) // an HTML page's title, plain text: one line
	}
	e := retry.HTTPError(Provider, resp.StatusCode, resp.Header, typ, msg, m.key)
	if resp.StatusCode == statusOverloaded {
		e.Retryable = true
	}
	return nil, e
}

// eventError is the ProviderError of an error event inside a 200 stream:
// no status, retryable for the kinds of error that are transient.
func (m *Model) eventError(e *wireError, data []byte) *model.ProviderError {
	var typ, msg string
	if e != nil {
		typ, msg = strings.Clone(e.Type), strings.Clone(e.Message) // borrowed from data
	}
	if msg == "" {
		msg = cmp.Or(provider.BodyText(data), "the server sent an error event without a message")
	}
	pe := retry.HTTPError(Provider, 0, nil, typ, msg, m.key)
	pe.Retryable = typ == "overloaded_error" || typ == "api_error" || typ == "rate_limit_error"
	return pe
}

// Stream implements [model.Streamer]: a streaming Messages API call. Text
// deltas are yielded as they arrive, in whole characters: a character that
// the server cut between two text_delta events (its UTF-8 bytes, or the
// halves of an escaped surrogate pair) is held back from the first delta
// and yielded whole with the next, so that the deltas join into the final
// text; the last chunk carries the whole
// response, tool inputs assembled from their input_json_delta pieces. Transient
// failures are retried only until the first event has arrived, before
// anything was yielded; a failure after that ends the sequence with the
// error. Breaking out of the loop closes the connection.
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
	body, id, err := m.body(ctx, req, true)
	if err != nil {
		yield(model.Chunk{}, err)
		return
	}
	var (
		resp  *http.Response
		evs   *provider.Events
		first wireEvent
		dec   decoder
		whole *model.Response // the answer of a server that did not stream
	)
	err = retry.Do(ctx, m.policy, m.log, func(ctx context.Context, attempt int) error {
		m.log.LogAttrs(ctx, slog.LevelDebug, "messages stream", slog.String("model", id), slog.Int("attempt", attempt))
		r, err := m.post(ctx, body, m.sseHeader)
		if err != nil {
			return err
		}
		// A server that does not stream (or a gateway that fails) answers
		// a streaming request with one JSON body: a message, or an error
		// object, read as Generate reads them. Events under a JSON
		// Content-Type are read as events.
		src, isJSON := provider.JSONAnswer(r)
		if isJSON {
			defer r.Body.Close()
			b, err := provider.ReadBody(src, m.maxBody)
			if err != nil {
				return m.wrap(ctx, fmt.Errorf("reading the answer: %w", err))
			}
			out, err := m.response(b, id)
			if err != nil {
				return err
			}
			whole = out
			return nil
		}
		e := provider.NewEventsLimit(src, m.maxBody)
		var ev wireEvent
		ok, perr := m.nextEvent(e, &dec, &ev)
		if ok && perr == nil {
			resp, evs, first = r, e, ev
			return nil
		}
		_ = r.Body.Close()
		if perr != nil {
			return perr
		}
		err = e.Err()
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
		if d := whole.Message.Content; d != "" && !yield(model.Chunk{Delta: d}, nil) {
			return
		}
		yield(model.Chunk{Response: whole}, nil)
		return
	}
	defer resp.Body.Close()
	acc := accumulator{model: id}
	ev := &first
	for {
		if d := acc.add(ev); d != "" && !yield(model.Chunk{Delta: d}, nil) {
			return
		}
		ok, perr := m.nextEvent(evs, &dec, ev)
		if perr != nil {
			yield(model.Chunk{}, perr)
			return
		}
		if !ok {
			break
		}
	}
	if err := evs.Err(); err != nil {
		yield(model.Chunk{}, m.wrap(ctx, err))
		return
	}
	if !acc.stopped {
		yield(model.Chunk{}, m.wrap(ctx, errTruncated))
		return
	}
	if d := acc.rest(); d != "" && !yield(model.Chunk{Delta: d}, nil) {
		return
	}
	yield(model.Chunk{Response: acc.response()}, nil)
}

// nextEvent reads the next event of a stream into ev with d, skipping
// pings and events without data. ok is false at the end of the body
// (Events.Err says whether it failed); perr is set for an error event or
// data that is not JSON. ev's strings are borrowed from e and d until the
// next call, which clears them before it reads on.
func (m *Model) nextEvent(e *provider.Events, d *decoder, ev *wireEvent) (ok bool, perr *model.ProviderError) {
	*ev = wireEvent{}
	for e.Next() {
		typ, data := e.Type(), bytes.TrimSpace(e.Data())
		if string(typ) == "ping" || len(data) == 0 {
			continue
		}
		if err := d.decodeEvent(typ, data, ev); err != nil {
			if string(typ) == "error" {
				// An "event: error" is an error whatever its data holds:
				// its text, on one line.
				return false, m.eventError(nil, data)
			}
			return false, &model.ProviderError{Provider: Provider, Message: "the stream sent an event that is not JSON", Detail: retry.Redact(provider.Truncate(err.Error()+": "+string(data), 300), m.key)}
		}
		switch ev.Type {
		case "ping", "":
			continue
		case "error":
			return false, m.eventError(ev.Error, data)
		}
		return true, nil
	}
	return false, nil
}

var (
	errEmptyStream = errors.New("stream ended before its first event")
	errTruncated   = errors.New("stream ended before message_stop")
)

// wrap turns a transport failure into a *model.ProviderError, or the
// context's error when ctx has ended.
func (m *Model) wrap(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	e := retry.NetworkError(Provider, err, m.key)
	if errors.Is(err, provider.ErrTooLarge) {
		// Not a transient failure: the same request would be as large.
		e.Message = "the answer is larger than its limit (Options.MaxResponseBytes)"
		e.Retryable = false
	}
	return e
}

// request translates a tollgate request into a Messages API request.
func (m *Model) request(ctx context.Context, req *model.Request) (wireRequest, error) {
	return m.requestWith(ctx, req, new(scratch))
}

// scratch is room for the turns of a short request, from scratchPool,
// until the request is encoded.
type scratch struct {
	blocks [8]wireBlock
	texts  [4]wireText
	turns  [4]wireMessage
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// free clears sc, which must no longer be used, and puts it back into the
// pool.
func (sc *scratch) free() {
	*sc = scratch{}
	scratchPool.Put(sc)
}

// requestWith is request, with the turns in sc when they fit: the request
// is valid while sc is.
func (m *Model) requestWith(ctx context.Context, req *model.Request, sc *scratch) (wireRequest, error) {
	id := cmp.Or(req.Model, m.model)
	if id == "" {
		return wireRequest{}, errors.New("anthropic: no model ID: set Request.Model or Options.Model")
	}
	w := wireRequest{Model: id, MaxTokens: m.maxTokens} // rule 9: at least 1
	if req.MaxTokens > 0 {
		w.MaxTokens = req.MaxTokens
	}
	if c := m.tools.Load(); c.matches(req.Tools) {
		w.Tools = c.wire
	} else if len(req.Tools) > 0 {
		tools, err := m.wireTools(req.Tools)
		if err != nil {
			return wireRequest{}, err
		}
		w.Tools = tools
	}
	msgs, err := messagesWith(req.Messages, sc)
	if err != nil {
		return wireRequest{}, err
	}
	w.Messages = msgs
	for _, msg := range req.Messages {
		if msg.Role == model.RoleSystem && strings.TrimSpace(msg.Content) != "" {
			w.System = append(w.System, wireText{Type: "text", Text: msg.Content})
		}
	}
	if req.Temperature != nil {
		if m.temperature {
			t := min(max(*req.Temperature, 0), 1) // rule 11 (OpenAI's range is 0 to 2)
			w.Temperature = &t
		} else {
			m.log.LogAttrs(ctx, slog.LevelDebug, "temperature not sent: the API version rejects sampling parameters")
		}
	}
	return w, nil
}

// wireTools translates tool definitions (rule 8: unique valid names, object
// schemas) and keeps them, with copies of defs, for the next request
// (toolCache).
func (m *Model) wireTools(defs []model.ToolDef) ([]wireTool, error) {
	tools := make([]wireTool, 0, len(defs))
	seen := make(map[string]bool, len(defs))
	for i, t := range defs {
		if !validToolName(t.Name) {
			return nil, fmt.Errorf("anthropic: tool %d: name %q must be 1 to 128 letters, digits, '_' or '-'", i, t.Name)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("anthropic: tool %d: name %q is used by an earlier tool; names must be unique", i, t.Name)
		}
		seen[t.Name] = true
		schema, err := inputSchema(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("anthropic: tool %q: %w", t.Name, err)
		}
		tools = append(tools, wireTool{Name: t.Name, Description: t.Description, InputSchema: bytes.Clone(schema)})
	}
	c := &toolCache{defs: slices.Clone(defs), wire: tools}
	for i := range c.defs {
		c.defs[i].InputSchema = bytes.Clone(c.defs[i].InputSchema)
	}
	m.tools.Store(c)
	return tools, nil
}

// The Messages API's rules for a request, which [messages] and the tool
// checks of params keep by construction
// (https://docs.anthropic.com/en/api/messages):
//
//  1. messages is not empty, and its turns alternate between user and
//     assistant, starting with user;
//  2. a text block holds non-whitespace text, and the final assistant turn
//     does not end with whitespace;
//  3. tool_use.input is a JSON object;
//  4. tool_use ids match ^[a-zA-Z0-9_-]+$;
//  5. every tool_use of an assistant turn has its tool_result in the user
//     turn right after it, and every tool_result answers a tool_use of the
//     assistant turn right before it;
//  6. in a user turn, the tool_result blocks come before any other block;
//  7. a tool_result with is_error set has content;
//  8. tool names match ^[a-zA-Z0-9_-]{1,128}$ and are unique, and a tool's
//     input_schema is a JSON object of type "object";
//  9. max_tokens is at least 1;
//  10. tool_use ids are unique in the request, across turns too ("`tool_use`
//     ids must be unique");
//  11. temperature, under an API version that takes it, is from 0 to 1;
//  12. a tool_use block has a name (the field is required).

// Texts the provider writes where the API needs content tollgate's transcript
// does not have.
const (
	// emptyErrorText is the content of a failed tool result without text.
	emptyErrorText = "the tool call failed without a message"
	// missingResultText answers a tool call the transcript has no result for.
	missingResultText = "no result was recorded for this tool call"
	// continueText opens a conversation that would otherwise start with an
	// assistant turn.
	continueText = "(continue)"
	// unnamedTool names a tool call that has no name (a model's call that
	// named no tool, which failed as an unknown tool).
	unnamedTool = "unnamed_tool"
)

// turn is one user or assistant turn under construction.
type turn struct {
	assistant bool
	results   []wireBlock // tool_result blocks, user turns only
	blocks    []wireBlock // for an assistant turn, its tool_use blocks are its calls
}

// messages translates a transcript into Messages API turns that keep rules
// 1 to 7 above whatever the transcript holds: system messages are skipped
// (the caller hoists them); consecutive messages of one role merge into one
// turn; blank text is left out; arguments that are not a JSON object are sent
// as {} (the transcript keeps the model's text); ids are mapped onto the
// allowed alphabet; a tool call without a result is answered by an error
// result, a result that answers no call of the turn before becomes text; a
// conversation that starts with the assistant gets a short user turn first.
// The only error is an unknown role, or a transcript with no content at all.
func messages(in []model.Message) ([]wireMessage, error) {
	return messagesWith(in, new(scratch))
}

// messagesWith is messages, with the blocks, texts and turns in sc when
// they fit.
func messagesWith(in []model.Message, sc *scratch) ([]wireMessage, error) {
	// The blocks of all turns share one array, the results another part of
	// it and their texts a second one: only the last turn grows, so each
	// turn's blocks and results stay contiguous. At most one turn per
	// message, one for a conversation that starts with the assistant and
	// one that answers trailing calls; a short transcript keeps its turns
	// on the stack.
	nBlocks, nResults := 0, 0
	for _, msg := range in {
		switch msg.Role {
		case model.RoleUser:
			if strings.TrimSpace(msg.Content) != "" {
				nBlocks++
			}
		case model.RoleAssistant:
			if strings.TrimSpace(msg.Content) != "" {
				nBlocks++
			}
			nBlocks += len(msg.ToolCalls)
		case model.RoleTool:
			nResults++
		}
	}
	arena := sc.blocks[:]
	if n := nBlocks + nResults; n > len(arena) {
		arena = make([]wireBlock, n)
	}
	texts := sc.texts[:0]
	if nResults > len(sc.texts) {
		texts = make([]wireText, 0, nResults)
	}
	nb, nr := 0, nBlocks // the next free block and result
	addBlock := func(t *turn, b wireBlock) {
		arena[nb] = b
		nb++
		t.blocks = arena[nb-len(t.blocks)-1 : nb : nb]
	}
	var stack [8]turn
	turns := stack[:0]
	if len(in)+2 > len(stack) {
		turns = make([]turn, 0, len(in)+2)
	}
	last := func(assistant bool) *turn {
		if n := len(turns); n > 0 && turns[n-1].assistant == assistant {
			return &turns[n-1]
		}
		turns = append(turns, turn{assistant: assistant})
		return &turns[len(turns)-1]
	}
	for i, msg := range in {
		switch msg.Role {
		case model.RoleSystem:
		case model.RoleUser:
			if strings.TrimSpace(msg.Content) != "" {
				addBlock(last(false), textBlock(msg.Content))
			}
		case model.RoleAssistant:
			if strings.TrimSpace(msg.Content) == "" && len(msg.ToolCalls) == 0 {
				continue
			}
			t := last(true)
			if strings.TrimSpace(msg.Content) != "" {
				addBlock(t, textBlock(msg.Content))
			}
			for _, c := range msg.ToolCalls {
				addBlock(t, wireBlock{Type: "tool_use", ID: toolUseID(c.ID), Name: cmp.Or(c.Name, unnamedTool), Input: inputObject(c.Arguments)}) // rule 12
			}
		case model.RoleTool:
			tr := wireBlock{Type: "tool_result", ToolUseID: toolUseID(msg.ToolCallID), IsError: msg.IsError}
			text := msg.Content
			if msg.IsError && strings.TrimSpace(text) == "" {
				text = emptyErrorText
			}
			if strings.TrimSpace(text) != "" { // rule 2: no blank text, in results too
				texts = append(texts, wireText{Type: "text", Text: text})
				tr.Content = texts[len(texts)-1 : len(texts) : len(texts)]
			}
			t := last(false)
			arena[nr] = tr
			nr++
			t.results = arena[nr-len(t.results)-1 : nr : nr]
		default:
			return nil, fmt.Errorf("anthropic: message %d has unknown role %q", i, msg.Role)
		}
	}
	// Rule 5: pair results with the calls of the assistant turn before.
	for i := range turns {
		t := &turns[i]
		if t.assistant {
			continue
		}
		var calls []wireBlock
		if i > 0 {
			calls = turns[i-1].blocks
		}
		t.results, t.blocks = pairResults(calls, t.results, t.blocks)
	}
	if n := len(turns); n > 0 && turns[n-1].assistant && hasCalls(turns[n-1].blocks) {
		// A transcript that ends on tool calls: answer them, so that the
		// model can go on.
		var t turn
		t.results, t.blocks = pairResults(turns[n-1].blocks, nil, nil)
		turns = append(turns, t)
	}
	uniqueToolUseIDs(turns)
	if len(turns) == 0 {
		return nil, errors.New("anthropic: the request has no user or assistant content (the Messages API needs at least one message)")
	}
	if turns[0].assistant {
		turns = slices.Insert(turns, 0, turn{blocks: []wireBlock{textBlock(continueText)}})
	}
	out := sc.turns[:0]
	if len(turns) > len(sc.turns) {
		out = make([]wireMessage, 0, len(turns))
	}
	for i, t := range turns {
		if t.assistant {
			if i == len(turns)-1 {
				trimFinalText(t.blocks)
			}
			out = append(out, wireMessage{Role: "assistant", Content: t.blocks})
			continue
		}
		content := t.results
		switch {
		case len(t.blocks) == 0:
		case len(content) == 0:
			content = t.blocks
		default:
			content = append(content, t.blocks...)
		}
		out = append(out, wireMessage{Role: "user", Content: content})
	}
	return out, nil
}

// uniqueToolUseIDs keeps rule 10 in turns, whose results [pairResults] has
// left one per call of the assistant turn before, in their order: a tool_use
// id that an earlier block of the request already has (a server that numbers
// its calls per turn, as Kimi's "functions.read_file:0", or two ids that
// [toolUseID] maps onto one) becomes the id with a suffix "_2", "_3", ...
// that no block has, and so does the result that answers it. The transcript
// keeps its own ids. Without a repeat (the common case, checked without
// allocating up to 64 calls) nothing changes.
func uniqueToolUseIDs(turns []turn) {
	var ids []*wireBlock
	var stack [64]*wireBlock
	ids = stack[:0]
	for i := range turns {
		if !turns[i].assistant {
			continue
		}
		for j := range turns[i].blocks {
			if b := &turns[i].blocks[j]; b.Type == "tool_use" {
				ids = append(ids, b)
			}
		}
	}
	repeat := len(ids) > len(stack)
	for i := 1; i < len(ids) && !repeat; i++ {
		for _, e := range ids[:i] {
			if e.ID == ids[i].ID {
				repeat = true
				break
			}
		}
	}
	if !repeat {
		return
	}
	all := make(map[string]bool, len(ids))
	for _, b := range ids {
		all[b.ID] = true
	}
	seen := make(map[string]bool, len(ids))
	for i := range turns {
		if !turns[i].assistant {
			continue
		}
		k := 0 // the call's position among its turn's calls
		for j := range turns[i].blocks {
			b := &turns[i].blocks[j]
			if b.Type != "tool_use" {
				continue
			}
			if seen[b.ID] {
				id := b.ID
				for n := 2; all[id]; n++ {
					id = b.ID + "_" + strconv.Itoa(n)
				}
				all[id] = true
				if i+1 < len(turns) && !turns[i+1].assistant && k < len(turns[i+1].results) {
					turns[i+1].results[k].ToolUseID = id
				}
				b.ID = id
			}
			seen[b.ID] = true
			k++
		}
	}
}

// hasCalls reports whether blocks hold a tool_use block.
func hasCalls(blocks []wireBlock) bool {
	for _, b := range blocks {
		if b.Type == "tool_use" {
			return true
		}
	}
	return false
}

// pairResults returns the tool results of a user turn that follows an
// assistant turn with the blocks prev: one per tool_use block of prev, in
// their order (an error result for a call without one), and the turn's other
// blocks, after text blocks that stand for the results that answer no call
// (or a call answered already).
func pairResults(prev, results, blocks []wireBlock) ([]wireBlock, []wireBlock) {
	if inOrder(prev, results) {
		return results, blocks
	}
	byID := make(map[string]wireBlock, len(results))
	var orphans []wireBlock
	want := make(map[string]bool, len(prev))
	calls := 0
	for _, c := range prev {
		if c.Type == "tool_use" {
			want[c.ID] = true
			calls++
		}
	}
	for _, r := range results {
		id := r.ToolUseID
		if _, dup := byID[id]; dup || !want[id] {
			orphans = append(orphans, r)
			continue
		}
		byID[id] = r
	}
	out := make([]wireBlock, 0, calls)
	for _, c := range prev {
		if c.Type != "tool_use" {
			continue
		}
		r, ok := byID[c.ID]
		if !ok {
			r = wireBlock{Type: "tool_result", ToolUseID: c.ID, IsError: true, Content: []wireText{{Type: "text", Text: missingResultText}}}
		}
		out = append(out, r)
	}
	if len(orphans) == 0 {
		return out, blocks
	}
	texts := make([]wireBlock, 0, len(orphans)+len(blocks))
	for _, tr := range orphans {
		var text strings.Builder
		fmt.Fprintf(&text, "result of tool call %s", tr.ToolUseID)
		if tr.IsError {
			text.WriteString(" (error)")
		}
		text.WriteString(":")
		for _, c := range tr.Content {
			text.WriteString(" " + c.Text)
		}
		texts = append(texts, textBlock(text.String()))
	}
	return out, append(texts, blocks...)
}

// inOrder reports whether results answer the tool_use blocks of prev one
// for one, in their order, with ids that are all different: the common case,
// in which [pairResults] has nothing to reorder, add or turn into text.
func inOrder(prev, results []wireBlock) bool {
	j := 0
	for _, c := range prev {
		if c.Type != "tool_use" {
			continue
		}
		if j >= len(results) || results[j].ToolUseID != c.ID {
			return false
		}
		j++
	}
	if j != len(results) || len(results) > 64 {
		return false // (past 64 results, the maps of pairResults check faster)
	}
	for i := range results {
		for k := range i {
			if results[k].ToolUseID == results[i].ToolUseID {
				return false
			}
		}
	}
	return true
}

// trimFinalText removes trailing whitespace from the last block of the final
// assistant turn when it is text (rule 2). The block stays non-empty: blank
// text blocks are never added.
func trimFinalText(blocks []wireBlock) {
	if n := len(blocks); n > 0 && blocks[n-1].Type == "text" {
		blocks[n-1].Text = strings.TrimRightFunc(blocks[n-1].Text, unicode.IsSpace)
	}
}

// inputObject returns arguments as a tool_use input, which must be a JSON
// object (rule 3): anything else (a cut-off text kept as a JSON string, an
// array, nothing) becomes {}.
func inputObject(args json.RawMessage) json.RawMessage {
	b := bytes.TrimSpace(args)
	if len(b) > 0 && b[0] == '{' && json.Valid(b) {
		return b
	}
	return json.RawMessage("{}")
}

// toolUseID maps id onto the alphabet the API accepts for tool_use ids
// (rule 4): every other byte becomes '_', and an empty id becomes "toolu_".
// Calls and results go through the same mapping, so they still pair up.
func toolUseID(id string) string {
	if id == "" {
		return "toolu_"
	}
	ok := true
	for i := 0; i < len(id) && ok; i++ {
		ok = idByte(id[i])
	}
	if ok {
		return id
	}
	b := []byte(id)
	for i := range b {
		if !idByte(b[i]) {
			b[i] = '_'
		}
	}
	return string(b)
}

func idByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// validToolName reports whether name fits the API's pattern for tool names
// (rule 8).
func validToolName(name string) bool {
	if len(name) == 0 || len(name) > 128 {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !idByte(name[i]) {
			return false
		}
	}
	return true
}

// inputSchema returns the input_schema of a tool (rule 8): schema when it is a
// JSON object of type "object"; {"type":"object"} with schema's other keys
// when it has no type; an empty object schema when schema is empty. Any
// other schema is an error.
func inputSchema(schema json.RawMessage) (json.RawMessage, error) {
	t := bytes.TrimSpace(schema)
	if len(t) == 0 {
		return json.RawMessage(`{"type":"object","properties":{}}`), nil
	}
	if t[0] != '{' || !json.Valid(t) {
		return nil, errors.New("input schema is not a JSON object")
	}
	// The schema's own type, read without decoding it (its last "type"
	// key wins, as in encoding/json).
	var typ json.RawMessage
	for k, v := range provider.Members(t) {
		if string(k) == "type" {
			typ = v
		}
	}
	if typ == nil {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(t, &obj); err != nil {
			return nil, errors.New("input schema is not a JSON object")
		}
		obj["type"] = json.RawMessage(`"object"`)
		return model.MarshalJSON(obj)
	}
	if string(typ) != `"object"` {
		var s string
		if json.Unmarshal(typ, &s) != nil || s != "object" {
			return nil, fmt.Errorf("input schema has type %s; the Messages API needs \"object\"", typ)
		}
	}
	return schema, nil
}

// response translates a message, as the server sent it, into a tollgate
// response. The message is decoded by hand (decoder.messageContent), on the
// stack, its strings borrowed from raw; what the response keeps (texts,
// ids, names, tool inputs, and the model when it is not the requested one)
// is copied into room at the end of the response's own allocation
// (newAnswer), so that raw, kept as Response.Raw, can change without
// changing them.
func (m *Model) response(raw []byte, requested string) (*model.Response, error) {
	var (
		d      decoder
		msg    wireResponse
		blocks [4]wireBlockOut
	)
	content, err := d.messageContent(raw, &msg, blocks[:0])
	if err != nil {
		return nil, &model.ProviderError{Provider: Provider, Message: "the answer is not a JSON message", Detail: retry.Redact(provider.Truncate(err.Error(), 300), m.key)}
	}
	if msg.Type == "error" || msg.Error != nil {
		return nil, m.eventError(msg.Error, raw)
	}
	// What the response keeps, counted, then copied into the answer's
	// room: the texts first, in their order (the message's text is their
	// concatenation), then the model, the ids and names of the calls, and
	// their inputs. The room is written once: its strings never change,
	// and each input is a slice of its own that cannot grow into the next.
	calls, n := 0, 0
	name := string(msg.Model.name)
	if name != requested {
		n += len(name)
	}
	for i := range content {
		b := &content[i]
		switch b.Type {
		case "text":
			n += len(b.Text)
		case "tool_use":
			calls++
			n += len(b.ID) + len(b.Name) + len(b.Input)
		}
	}
	resp, toolCalls, room := newAnswer(n)
	keep := func(s string) string {
		start := len(room)
		room = append(room, s...)
		return stringOf(room[start:])
	}
	text := len(room)
	for i := range content {
		if b := &content[i]; b.Type == "text" {
			room = append(room, b.Text...)
		}
	}
	out := model.Message{Role: model.RoleAssistant, Content: stringOf(room[text:])}
	if name == requested {
		name = requested
	} else {
		name = keep(name)
	}
	if calls > cap(toolCalls) {
		toolCalls = make([]model.ToolCall, 0, calls)
	}
	for i := range content {
		b := &content[i]
		if b.Type != "tool_use" {
			continue
		}
		call := model.ToolCall{ID: keep(b.ID), Name: keep(b.Name)}
		if len(b.Input) > 0 {
			// A value of a valid document, without space around it: valid
			// JSON, which arguments keeps as it is.
			start := len(room)
			room = append(room, b.Input...)
			call.Arguments = room[start:len(room):len(room)]
		} else {
			call.Arguments = json.RawMessage("{}")
		}
		toolCalls = append(toolCalls, call)
	}
	if calls > 0 {
		out.ToolCalls = toolCalls[:calls:calls]
	}
	u := msg.Usage
	*resp = model.Response{
		Message:      out,
		Usage:        usage(u.input(), u.OutputTokens),
		FinishReason: finishReason(string(msg.StopReason)),
		Model:        name,
		Raw:          json.RawMessage(raw),
	}
	return resp, nil
}

// stringOf returns a copy of b as a string.
func stringOf(b []byte) string { return string(b) }

// arguments returns a tool_use block's input as tool-call arguments: b
// itself when it is JSON (b is the caller's own copy: it is kept, not
// copied), {} when it is blank, and a JSON string of the text otherwise.
func arguments(b []byte) json.RawMessage {
	if len(bytes.TrimSpace(b)) == 0 {
		return json.RawMessage("{}")
	}
	if json.Valid(b) {
		return json.RawMessage(b)
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
func finishReason(r string) model.FinishReason {
	switch r {
	case "end_turn", "stop_sequence":
		return model.FinishStop
	case "tool_use":
		return model.FinishToolCalls
	case "max_tokens", "model_context_window_exceeded":
		return model.FinishLength
	case "refusal":
		return model.FinishContentFilter
	}
	return model.FinishOther
}

// accumulator assembles a streamed message.
type accumulator struct {
	text    strings.Builder  // as the deltas sent it: a character cut between two is whole only once both arrived
	sent    int              // the bytes of text handed on as deltas
	blocks  map[int64]*block // by index, once a delta is not for the last block (blockAt)
	order   []*block         // every content block, in order of content_block_start
	tools   []*block         // the tool_use blocks among them
	stop    string
	in, out int64
	model   string
	stopped bool
	// For Response.Raw: message_start's message, and the usage objects of
	// message_start and message_delta as sent, in order (merged key by key
	// when Raw is built).
	start      wireStart
	usages     []json.RawMessage
	usageBytes []byte
}

// block is one content block of a stream.
type block struct {
	index     int64
	typ       string
	start     json.RawMessage // content_block_start's block, as sent
	id, name  string
	startIn   json.RawMessage // the input of content_block_start
	text      strings.Builder // text, or thinking
	input     []byte          // input_json_delta pieces
	signature strings.Builder
	args      json.RawMessage // arguments(), once computed
}

// arguments returns the block's input: the input_json_delta pieces when any
// arrived, else the input of content_block_start.
func (b *block) arguments() json.RawMessage {
	if b.args == nil {
		if len(b.input) > 0 {
			b.args = arguments(provider.ValidBytes(b.input))
		} else {
			b.args = arguments(b.startIn)
		}
	}
	return b.args
}

// add takes in one event and returns its text delta. ev is borrowed (see
// decoder.event): what the accumulator keeps of it, it copies.
func (a *accumulator) add(ev *wireEvent) string {
	switch ev.Type {
	case "message_start":
		var msg wireStart
		if ev.Message != nil {
			msg = *ev.Message
		}
		a.start = wireStart{ID: strings.Clone(msg.ID)}
		if present(msg.StopSequence) {
			a.start.StopSequence = bytes.Clone(msg.StopSequence)
		}
		if msg.Model != "" && msg.Model != a.model {
			a.model = strings.Clone(msg.Model)
		}
		u := parseUsage(msg.Usage)
		a.in, a.out = u.input(), u.OutputTokens
		a.mergeUsage(msg.Usage)
	case "content_block_start":
		var cb wireBlockOut
		if ev.ContentBlock != nil {
			cb = *ev.ContentBlock
		}
		b := &block{index: ev.Index, typ: provider.Keep(cb.Type), start: ev.rawBlock}
		if cb.ID != "" || cb.Name != "" {
			idName := cb.ID + cb.Name // one copy for both
			b.id, b.name = idName[:len(cb.ID)], idName[len(cb.ID):]
		}
		if a.blocks != nil {
			a.blocks[ev.Index] = b
		}
		a.order = append(a.order, b)
		switch cb.Type {
		case "text":
			b.text.WriteString(cb.Text)
			return a.addText(cb.Text)
		case "tool_use":
			// Anthropic sends input {} here and the input in
			// input_json_delta pieces; some compatible servers send the
			// whole input here and no delta.
			b.startIn = bytes.Clone(cb.Input)
			a.tools = append(a.tools, b)
		}
	case "content_block_delta":
		b := a.blockAt(ev.Index)
		switch ev.Delta.Type {
		case "text_delta":
			if b != nil {
				b.text.WriteString(string(ev.Delta.Text))
			}
			return a.addText(string(ev.Delta.Text))
		case "input_json_delta":
			if b != nil {
				b.input = append(b.input, ev.Delta.PartialJSON...)
			}
		case "thinking_delta":
			if b != nil {
				b.text.WriteString(ev.Delta.Thinking)
			}
		case "signature_delta":
			if b != nil {
				b.signature.WriteString(ev.Delta.Signature)
			}
		}
	case "message_delta":
		if ev.Delta.StopReason != "" {
			a.stop = provider.Keep(ev.Delta.StopReason)
		}
		// message_delta usage is cumulative.
		u := parseUsage(ev.Usage)
		if u.OutputTokens != 0 {
			a.out = u.OutputTokens
		}
		if in := u.input(); in != 0 {
			a.in = in
		}
		a.mergeUsage(ev.Usage)
	case "message_stop":
		a.stopped = true
	}
	return ""
}

// addText adds a text delta to the message's text and returns the text
// not handed on yet up to its last whole character (provider.TextDelta: a
// character cut between two deltas is held back until it is whole), as a
// copy that shares the text's memory when it is valid UTF-8.
func (a *accumulator) addText(s string) string {
	a.text.WriteString(s)
	d, end := provider.TextDelta(a.text.String(), a.sent, false)
	a.sent = end
	return d
}

// rest returns what addText held back, once the stream has ended: a
// character that stayed cut, as U+FFFD.
func (a *accumulator) rest() string {
	d, end := provider.TextDelta(a.text.String(), a.sent, true)
	a.sent = end
	return d
}

// mergeUsage keeps a copy of a usage object for Response.Raw, in
// usageBytes with the others.
func (a *accumulator) mergeUsage(raw json.RawMessage) {
	if present(raw) {
		start := len(a.usageBytes)
		a.usageBytes = append(a.usageBytes, raw...)
		// An earlier usage stays where it was when usageBytes grows.
		a.usages = append(a.usages, a.usageBytes[start:len(a.usageBytes):len(a.usageBytes)])
	}
}

// blockAt returns the block last started with index i (nil for none):
// the last block of all, which the deltas of a stream are for, or one
// found in a map of the blocks by index, made the first time a delta is
// for another.
func (a *accumulator) blockAt(i int64) *block {
	n := len(a.order)
	if n > 0 && a.order[n-1].index == i {
		return a.order[n-1]
	}
	if a.blocks == nil {
		a.blocks = make(map[int64]*block, n)
		for _, b := range a.order {
			a.blocks[b.index] = b
		}
	}
	return a.blocks[i]
}

// usageMember is a member of a usage object of the stream.
type usageMember struct{ key, value []byte }

// rawUsage returns, appended to members, the usage of Response.Raw,
// sorted by key: the keys of every usage object the stream sent, each with
// its last value that is not null (a key whose values are all null is left
// out). ok is false when the stream sent no usage object (Raw's usage is
// null).
func (a *accumulator) rawUsage(members []usageMember) (_ []usageMember, ok bool) {
	for _, raw := range a.usages {
		ok = ok || raw[0] == '{' // present: not empty
		for k, v := range provider.Members(raw) {
			if present(v) {
				members = append(members, usageMember{k, v})
			}
		}
	}
	// Sorted by key, the values of a key in the stream's order: the last
	// of each run wins.
	slices.SortStableFunc(members, func(x, y usageMember) int { return bytes.Compare(x.key, y.key) })
	out := members[:0]
	for i, m := range members {
		if i+1 < len(members) && bytes.Equal(members[i+1].key, m.key) {
			continue
		}
		out = append(out, m)
	}
	return out, ok
}

func (a *accumulator) response() *model.Response {
	msg := model.Message{Role: model.RoleAssistant, Content: provider.ValidText(a.text.String())}
	for _, b := range a.tools {
		msg.ToolCalls = append(msg.ToolCalls, model.ToolCall{ID: b.id, Name: b.name, Arguments: b.arguments()})
	}
	return &model.Response{
		Message:      msg,
		Usage:        usage(a.in, a.out),
		FinishReason: finishReason(a.stop),
		Model:        a.model,
		Raw:          a.raw(),
	}
}

// raw is the streamed message as the API returns it without streaming: id,
// type, role and model of message_start, the content blocks (text, thinking
// with its signature, tool_use with the assembled input, any other block as
// content_block_start sent it), stop_reason, stop_sequence, and the usage of
// message_start updated by message_delta's.
func (a *accumulator) raw() json.RawMessage {
	n := 256 + len(a.start.ID) + len(a.model) + len(a.start.StopSequence)
	for _, b := range a.order {
		n += 64 + b.text.Len()*9/8 + b.signature.Len() + len(b.id) + len(b.name) + len(b.input) + len(b.startIn) + len(b.start)
	}
	for _, u := range a.usages {
		n += len(u)
	}
	out := make([]byte, 0, n)
	out = append(out, `{"id":`...)
	out = provider.AppendString(out, a.start.ID)
	out = append(out, `,"type":"message","role":"assistant","model":`...)
	out = provider.AppendString(out, a.model)
	out = append(out, `,"content":[`...)
	var err error
	first := true
	for _, b := range a.order {
		switch b.typ {
		case "text", "thinking", "tool_use":
		default:
			if !present(b.start) {
				continue
			}
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		switch b.typ {
		case "text":
			out = append(out, `{"type":"text","text":`...)
			out = provider.AppendString(out, provider.ValidText(b.text.String())) // a character cut between two deltas, whole
			out = append(out, '}')
		case "thinking":
			out = append(out, `{"type":"thinking","thinking":`...)
			out = provider.AppendString(out, b.text.String())
			out = append(out, `,"signature":`...)
			out = provider.AppendString(out, b.signature.String())
			out = append(out, '}')
		case "tool_use":
			in := b.arguments()
			if !bytes.HasPrefix(in, []byte("{")) {
				in = json.RawMessage("{}")
			}
			out = (&wireBlock{Type: "tool_use", ID: b.id, Name: b.name, Input: in}).appendJSON(out)
		default:
			if out, err = provider.AppendRaw(out, b.start); err != nil {
				return nil
			}
		}
	}
	out = append(out, `],"stop_reason":`...)
	if a.stop != "" {
		out = provider.AppendString(out, a.stop)
	} else {
		out = append(out, "null"...)
	}
	out = append(out, `,"stop_sequence":`...)
	stopSeq := a.start.StopSequence
	if !present(stopSeq) {
		stopSeq = json.RawMessage("null")
	}
	if out, err = provider.AppendRaw(out, stopSeq); err != nil {
		return nil
	}
	out = append(out, `,"usage":`...)
	var room [8]usageMember
	if u, ok := a.rawUsage(room[:0]); !ok {
		out = append(out, "null"...)
	} else {
		out = append(out, '{')
		for i, m := range u {
			if i > 0 {
				out = append(out, ',')
			}
			out = provider.AppendString(out, string(m.key))
			out = append(out, ':')
			if out, err = provider.AppendRaw(out, m.value); err != nil {
				return nil
			}
		}
		out = append(out, '}')
	}
	return append(out, '}')
}

// maxBody is [Options.MaxResponseBytes], or its default when n <= 0.
func maxBody(n int64) int64 {
	if n <= 0 {
		return provider.MaxBodyBytes
	}
	return n
}
