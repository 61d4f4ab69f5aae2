// Package provider holds what tollgate's HTTP model providers
// (model/openai, model/anthropic) share: the base URL check, the logger
// default, the extra headers and the timeout; the client that follows a
// redirect only within the base URL's origin; the request (one header per
// accept type, shared by every request when the client cannot write to it),
// the bounded reading of a body and of server-sent events; and the pieces of
// their wire codecs: [String] and [Members] to decode with fewer
// allocations, [Text] for the pieces of a string a server may cut
// mid-character and [TextDelta] to hand on a stream's text in whole
// characters, [AppendString] and [AppendRaw] to write requests by hand into
// the bytes encoding/json writes. What differs between the vendors (their
// options, their wire structs) stays in each provider; the retry policy and
// the error values are in package internal/retry.
package provider

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/internal/retry"
	"github.com/tollgate-dev/tollgate/model"
)

// BaseURL returns base, or def when base is empty, with a trailing slash (the
// SDKs join paths onto it). It fails when the URL is not an absolute http or
// https URL, or when key is set and the URL is plain http to a host that is
// not loopback (the key would cross the network in clear text); the error
// starts with name and never contains key.
func BaseURL(name, base, def, key string) (string, error) {
	base = cmp.Or(base, def)
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s: base URL %q is not an absolute http(s) URL", name, retry.Redact(base, key))
	}
	if key != "" && u.Scheme == "http" && !loopback(u.Hostname()) {
		return "", fmt.Errorf("%s: base URL %q: refusing to send an API key over plain http to a host that is not loopback; use https", name, retry.Redact(base, key))
	}
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	return base, nil
}

// loopback reports whether host (a name or an IP address, without port)
// is this machine: localhost, a name under .localhost (RFC 6761), or a
// loopback address.
func loopback(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.Unmap().IsLoopback()
}

// Logger returns log with the attribute provider=name on every record. When
// log is nil, records of level Warn and above (a retry and how long it
// waits) go to [slog.Default] and the rest is discarded, so that a wait of
// many seconds is never silent.
func Logger(log *slog.Logger, name string) *slog.Logger {
	if log == nil {
		log = slog.New(warnHandler{slog.Default().Handler()})
	}
	return log.With(slog.String("provider", name))
}

// warnHandler passes records of level Warn and above to its handler.
type warnHandler struct{ h slog.Handler }

func (w warnHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && w.h.Enabled(ctx, l)
}
func (w warnHandler) Handle(ctx context.Context, r slog.Record) error { return w.h.Handle(ctx, r) }
func (w warnHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return warnHandler{w.h.WithAttrs(as)}
}
func (w warnHandler) WithGroup(g string) slog.Handler { return warnHandler{w.h.WithGroup(g)} }

// Base URLs of the hosted APIs tollgate knows.
const (
	// OpenAIBaseURL is OpenAI's API, package openai's default.
	OpenAIBaseURL = "https://api.openai.com/v1"
	// OpenRouterBaseURL is OpenRouter's OpenAI-compatible API.
	OpenRouterBaseURL = "https://openrouter.ai/api/v1"
	// AnthropicBaseURL is Anthropic's API, package anthropic's default.
	AnthropicBaseURL = "https://api.anthropic.com"
)

// DefaultTimeout bounds one model call when the provider's options set no
// timeout: every attempt, the waits between them and, for a stream, the
// reading of the whole stream.
const DefaultTimeout = 10 * time.Minute

// WithTimeout returns ctx bounded by d: d > 0 is used as is, 0 means
// [DefaultTimeout], a negative d means no bound of the provider's own. When
// ctx already ends no later than d from now (or d is negative), ctx itself
// is returned with a no-op cancel: a deadline of the provider's own would
// bound nothing, and a model call made under a caller's deadline costs no
// context and timer of its own.
func WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	switch {
	case d == 0:
		d = DefaultTimeout
	case d < 0:
		return ctx, noCancel
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
		return ctx, noCancel
	}
	return context.WithTimeout(ctx, d)
}

func noCancel() {}

// TimeoutError returns err, or, when err is the end of tctx (the context of
// [WithTimeout] made from parent with d) while parent is still live, a
// retryable *model.ProviderError that names the timeout; errors.Is(result,
// context.DeadlineExceeded) holds either way.
func TimeoutError(name string, parent, tctx context.Context, err error, d time.Duration) error {
	if err == nil || parent.Err() != nil || !errors.Is(tctx.Err(), context.DeadlineExceeded) {
		return err
	}
	if d == 0 {
		d = DefaultTimeout
	}
	return &model.ProviderError{
		Provider:  name,
		Message:   fmt.Sprintf("no complete answer within the timeout of %s (set Options.Timeout to change it)", d),
		Retryable: true,
		Err:       context.DeadlineExceeded,
	}
}

// Headers turns h into request options of an SDK, in a stable order (keys
// sorted, values in order): set(k, v) for the first value of a key, add(k, v)
// for the ones after it. set and add are the SDK's option.WithHeader and
// option.WithHeaderAdd.
func Headers[O any](h http.Header, set, add func(key, value string) O) []O {
	var out []O
	for _, k := range slices.Sorted(maps.Keys(h)) {
		for i, v := range h[k] {
			if i == 0 {
				out = append(out, set(k, v))
			} else {
				out = append(out, add(k, v))
			}
		}
	}
	return out
}

// Truncate returns s cut to n bytes, with "..." appended when it was cut; it
// keeps raw error bodies short in error messages.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
