package anthropic

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/tollgate-dev/tollgate/internal/provider"
	"github.com/tollgate-dev/tollgate/internal/retry"
	"github.com/tollgate-dev/tollgate/model"
)

// providerName is the name this package gives itself in errors and logs.
const providerName = "anthropic"

const (
	// defaultMaxTokens is max_tokens when neither the request nor
	// [Options.MaxTokens] sets it (the API requires a value).
	defaultMaxTokens = 4096
	// defaultAPIVersion is the anthropic-version header sent by default: the
	// version of the wire format of the official SDK this package is tested
	// against. This version rejects sampling parameters,
	// so [model.Request.Temperature] is not sent under it.
	defaultAPIVersion = "2026-10-21"
	// statusOverloaded is Anthropic's "overloaded_error" status.
	statusOverloaded = 529
)

// Options configure a [Model]. The zero value (or nil) talks to Anthropic
// without a key, which the API refuses; set APIKey.
type Options struct {
	// BaseURL is the API root, the part before "/v1/messages" (default
	// https://api.anthropic.com).
	BaseURL string
	// APIKey is sent in the x-api-key header when not empty. It is never
	// logged and is redacted from every error.
	APIKey string
	// Model is the model ID used when [model.Request.Model] is empty. Model
	// IDs are sent verbatim.
	Model string
	// MaxTokens is max_tokens when the request sets none (0:
	// 4096).
	MaxTokens int
	// APIVersion overrides the anthropic-version header ("" keeps
	// 2026-10-21). With a version before 2026-10-21, such as
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
	base, err := provider.BaseURL(providerName, o.BaseURL, provider.AnthropicBaseURL, o.APIKey)
	if err != nil {
		return nil, err
	}
	version := cmp.Or(o.APIVersion, defaultAPIVersion)
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
		maxTokens:   cmp.Or(o.MaxTokens, defaultMaxTokens),
		temperature: version < defaultAPIVersion,
		policy:      retry.Policy{MaxRetries: o.MaxRetries, BaseDelay: o.RetryBaseDelay, MaxDelay: o.RetryMaxDelay},
		timeout:     o.Timeout,
		maxBody:     maxBody(o.MaxResponseBytes),
		log:         provider.Logger(o.Logger, providerName),
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
	return resp, provider.TimeoutError(providerName, ctx, tctx, err, m.timeout)
}

// generate is Generate within the call's timeout: the request encoded once,
// posted with retries, and the answer read whole and translated.
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
	e := retry.HTTPError(providerName, resp.StatusCode, resp.Header, typ, msg, m.key)
	if resp.StatusCode == statusOverloaded {
		e.Retryable = true
	}
	return nil, e
}

// maxBody is [Options.MaxResponseBytes], or its default when n <= 0.
func maxBody(n int64) int64 {
	if n <= 0 {
		return provider.MaxBodyBytes
	}
	return n
}
