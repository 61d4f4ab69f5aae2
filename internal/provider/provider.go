// Package provider holds the option handling that tollgate's HTTP model
// providers (model/openai, model/anthropic) share: the base URL check, the
// logger default and the extra headers. What differs between the vendors'
// SDKs (their option types, their error types) stays in each provider; the
// retry policy and the error values are in package internal/retry.
package provider

import (
	"cmp"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/tollgate-dev/tollgate/internal/retry"
)

// BaseURL returns base, or def when base is empty, with a trailing slash (the
// SDKs join paths onto it). It fails when the URL is not an absolute http or
// https URL; the error starts with name and never contains key.
func BaseURL(name, base, def, key string) (string, error) {
	base = cmp.Or(base, def)
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s: base URL %q is not an absolute http(s) URL", name, retry.Redact(base, key))
	}
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	return base, nil
}

// Logger returns log, or a logger that discards when log is nil, with the
// attribute provider=name on every record.
func Logger(log *slog.Logger, name string) *slog.Logger {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return log.With(slog.String("provider", name))
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
