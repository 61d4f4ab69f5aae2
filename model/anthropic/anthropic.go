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
// and assembles tool inputs per content block (or takes the input of
// content_block_start, where some compatible servers send it whole).
//
// Every request it builds keeps the Messages API's rules by construction
// (the list is above messages in the source): tool_use inputs are objects,
// failed tool results have text, ids fit the API's alphabet, every tool call
// has its result, blank text is left out. What cannot be made valid is an
// error before anything is sent.
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
	"strings"
	"time"
	"unicode"

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

// Model is an Anthropic Messages API model. It implements [model.Model] and
// [model.Streamer] and is safe for concurrent use.
type Model struct {
	svc         anth.MessageService
	model       string
	key         string
	maxTokens   int
	temperature bool // whether the API version accepts sampling parameters
	policy      retry.Policy
	timeout     time.Duration
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
		timeout:     o.Timeout,
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
		tctx, cancel := provider.WithTimeout(ctx, m.timeout)
		defer cancel()
		m.stream(tctx, req, func(c model.Chunk, err error) bool {
			return yield(c, provider.TimeoutError(Provider, ctx, tctx, err, m.timeout))
		})
	}
}

func (m *Model) stream(ctx context.Context, req *model.Request, yield func(model.Chunk, error) bool) {
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
	p.MaxTokens = int64(m.maxTokens) // rule 9: at least 1
	if req.MaxTokens > 0 {
		p.MaxTokens = int64(req.MaxTokens)
	}

	seen := make(map[string]bool, len(req.Tools))
	for i, t := range req.Tools {
		if !validToolName(t.Name) {
			return p, nil, fmt.Errorf("anthropic: tool %d: name %q must be 1 to 128 letters, digits, '_' or '-'", i, t.Name)
		}
		if seen[t.Name] {
			return p, nil, fmt.Errorf("anthropic: tool %d: name %q is used by an earlier tool; names must be unique", i, t.Name)
		}
		seen[t.Name] = true
		schema, err := inputSchema(t.InputSchema)
		if err != nil {
			return p, nil, fmt.Errorf("anthropic: tool %q: %w", t.Name, err)
		}
		tp := anth.ToolParam{Name: t.Name, InputSchema: param.Override[anth.ToolInputSchemaParam](schema)}
		if t.Description != "" {
			tp.Description = anth.String(t.Description)
		}
		p.Tools = append(p.Tools, anth.ToolUnionParam{OfTool: &tp})
	}
	msgs, err := messages(req.Messages)
	if err != nil {
		return p, nil, err
	}
	p.Messages = msgs
	for _, msg := range req.Messages {
		if msg.Role == model.RoleSystem && strings.TrimSpace(msg.Content) != "" {
			p.System = append(p.System, anth.TextBlockParam{Text: msg.Content})
		}
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
//  9. max_tokens is at least 1.

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
)

// turn is one user or assistant turn under construction.
type turn struct {
	assistant bool
	results   []anth.ContentBlockParamUnion // tool_result blocks, user turns only
	blocks    []anth.ContentBlockParamUnion
	calls     []string // tool_use ids, assistant turns only
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
func messages(in []model.Message) ([]anth.MessageParam, error) {
	var turns []*turn
	last := func(assistant bool) *turn {
		if n := len(turns); n > 0 && turns[n-1].assistant == assistant {
			return turns[n-1]
		}
		t := &turn{assistant: assistant}
		turns = append(turns, t)
		return t
	}
	for i, msg := range in {
		switch msg.Role {
		case model.RoleSystem:
		case model.RoleUser:
			if strings.TrimSpace(msg.Content) != "" {
				t := last(false)
				t.blocks = append(t.blocks, anth.NewTextBlock(msg.Content))
			}
		case model.RoleAssistant:
			if strings.TrimSpace(msg.Content) == "" && len(msg.ToolCalls) == 0 {
				continue
			}
			t := last(true)
			if strings.TrimSpace(msg.Content) != "" {
				t.blocks = append(t.blocks, anth.NewTextBlock(msg.Content))
			}
			for _, c := range msg.ToolCalls {
				id := toolUseID(c.ID)
				t.blocks = append(t.blocks, anth.NewToolUseBlock(id, inputObject(c.Arguments), c.Name))
				t.calls = append(t.calls, id)
			}
		case model.RoleTool:
			tr := anth.ToolResultBlockParam{ToolUseID: toolUseID(msg.ToolCallID)}
			text := msg.Content
			if msg.IsError && strings.TrimSpace(text) == "" {
				text = emptyErrorText
			}
			if text != "" {
				tr.Content = []anth.ToolResultBlockParamContentUnion{{OfText: &anth.TextBlockParam{Text: text}}}
			}
			if msg.IsError {
				tr.IsError = anth.Bool(true)
			}
			t := last(false)
			t.results = append(t.results, anth.ContentBlockParamUnion{OfToolResult: &tr})
		default:
			return nil, fmt.Errorf("anthropic: message %d has unknown role %q", i, msg.Role)
		}
	}
	// Rule 5: pair results with the calls of the assistant turn before.
	for i, t := range turns {
		if t.assistant {
			continue
		}
		var calls []string
		if i > 0 {
			calls = turns[i-1].calls
		}
		t.results, t.blocks = pairResults(calls, t.results, t.blocks)
	}
	if n := len(turns); n > 0 && turns[n-1].assistant && len(turns[n-1].calls) > 0 {
		// A transcript that ends on tool calls: answer them, so that the
		// model can go on.
		t := &turn{}
		t.results, t.blocks = pairResults(turns[n-1].calls, nil, nil)
		turns = append(turns, t)
	}
	if len(turns) == 0 {
		return nil, errors.New("anthropic: the request has no user or assistant content (the Messages API needs at least one message)")
	}
	if turns[0].assistant {
		turns = append([]*turn{{blocks: []anth.ContentBlockParamUnion{anth.NewTextBlock(continueText)}}}, turns...)
	}
	out := make([]anth.MessageParam, 0, len(turns))
	for i, t := range turns {
		if t.assistant {
			if i == len(turns)-1 {
				trimFinalText(t.blocks)
			}
			out = append(out, anth.NewAssistantMessage(t.blocks...))
			continue
		}
		out = append(out, anth.NewUserMessage(append(t.results, t.blocks...)...))
	}
	return out, nil
}

// pairResults returns the tool results of a user turn that follows an
// assistant turn with the tool_use ids calls: one per call, in the calls'
// order (an error result for a call without one), and the turn's other
// blocks, after text blocks that stand for the results that answer no call
// (or a call answered already).
func pairResults(calls []string, results, blocks []anth.ContentBlockParamUnion) ([]anth.ContentBlockParamUnion, []anth.ContentBlockParamUnion) {
	byID := make(map[string]anth.ContentBlockParamUnion, len(results))
	var orphans []anth.ContentBlockParamUnion
	want := make(map[string]bool, len(calls))
	for _, id := range calls {
		want[id] = true
	}
	for _, r := range results {
		id := r.OfToolResult.ToolUseID
		if _, dup := byID[id]; dup || !want[id] {
			orphans = append(orphans, r)
			continue
		}
		byID[id] = r
	}
	out := make([]anth.ContentBlockParamUnion, 0, len(calls))
	for _, id := range calls {
		r, ok := byID[id]
		if !ok {
			r = anth.ContentBlockParamUnion{OfToolResult: &anth.ToolResultBlockParam{
				ToolUseID: id, IsError: anth.Bool(true),
				Content: []anth.ToolResultBlockParamContentUnion{{OfText: &anth.TextBlockParam{Text: missingResultText}}},
			}}
		}
		out = append(out, r)
	}
	texts := make([]anth.ContentBlockParamUnion, 0, len(orphans)+len(blocks))
	for _, r := range orphans {
		tr := r.OfToolResult
		var text strings.Builder
		fmt.Fprintf(&text, "result of tool call %s", tr.ToolUseID)
		if tr.IsError.Valid() && tr.IsError.Value {
			text.WriteString(" (error)")
		}
		text.WriteString(":")
		for _, c := range tr.Content {
			if c.OfText != nil {
				text.WriteString(" " + c.OfText.Text)
			}
		}
		texts = append(texts, anth.NewTextBlock(text.String()))
	}
	return out, append(texts, blocks...)
}

// trimFinalText removes trailing whitespace from the last block of the final
// assistant turn when it is text (rule 2). The block stays non-empty: blank
// text blocks are never added.
func trimFinalText(blocks []anth.ContentBlockParamUnion) {
	if n := len(blocks); n > 0 && blocks[n-1].OfText != nil {
		blocks[n-1].OfText.Text = strings.TrimRightFunc(blocks[n-1].OfText.Text, unicode.IsSpace)
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
	if len(bytes.TrimSpace(schema)) == 0 {
		return json.RawMessage(`{"type":"object","properties":{}}`), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(schema, &obj); err != nil || obj == nil {
		return nil, errors.New("input schema is not a JSON object")
	}
	typ, ok := obj["type"]
	if !ok {
		obj["type"] = json.RawMessage(`"object"`)
		return model.MarshalJSON(obj)
	}
	var s string
	if json.Unmarshal(typ, &s) != nil || s != "object" {
		return nil, fmt.Errorf("input schema has type %s; the Messages API needs \"object\"", typ)
	}
	return schema, nil
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
	start    string // the input of content_block_start
	input    strings.Builder
}

// arguments returns the block's input: the input_json_delta pieces when any
// arrived, else the input of content_block_start.
func (b *toolBlock) arguments() json.RawMessage {
	if b.input.Len() > 0 {
		return arguments([]byte(b.input.String()))
	}
	return arguments([]byte(b.start))
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
			// Anthropic sends input {} here and the input in
			// input_json_delta pieces; some compatible servers send the
			// whole input here and no delta.
			b := &toolBlock{id: ev.ContentBlock.ID, name: ev.ContentBlock.Name, start: ev.ContentBlock.JSON.Input.Raw()}
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

// raw is the streamed message as the API returns it without streaming (id,
// model, content, stop_reason, usage), assembled by the SDK.
func (a *accumulator) raw() json.RawMessage {
	r := a.msg.RawJSON()
	if a.rawErr != nil || !json.Valid([]byte(r)) {
		return nil
	}
	return json.RawMessage(r)
}
