package model

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// ProviderError is a failed model call, as every HTTP provider of tollgate
// (model/openai, model/anthropic) reports it, after its retries. Test for it
// with errors.As:
//
//	var pe *model.ProviderError
//	if errors.As(err, &pe) && pe.StatusCode == http.StatusUnauthorized { ... }
//
// Its text never contains the API key: the providers redact the key from the
// provider's type and message and from the text of a network error (kept in
// Detail) when they build the error, and [ProviderError.Error] prints only
// those fields, never Err's own text (which may name a URL holding a key).
// A provider of your own that returns a ProviderError should do the same.
//
// What to do about it: a Retryable error was already retried as the
// provider's policy allows, so a caller may try again later (a whole new
// turn); 401 and 403 mean a missing or wrong key; 400 usually means a request
// the provider does not accept (model ID, tool schema).
type ProviderError struct {
	// Provider names the provider: "openai", "anthropic".
	Provider string
	// StatusCode is the HTTP status; 0 when no response arrived (network
	// error) or the stream failed after it had started.
	StatusCode int
	// Type is the provider's error type or code when it sent one, such as
	// "rate_limit_error" or "invalid_api_key".
	Type string
	// Message is the provider's own explanation, redacted.
	Message string
	// Detail is the text of Err, redacted, fixed when the error was built;
	// empty when there is no underlying error.
	Detail string
	// Retryable reports whether the failure is transient: HTTP 429, 500, 502,
	// 503, 504 (and a provider's own overload status) or a network error.
	Retryable bool
	// RetryAfter is the server's Retry-After delay (delay-seconds form), or 0.
	RetryAfter time.Duration
	// Attempts is how many attempts were made in all, retries included.
	Attempts int
	// Err is the underlying transport error of a network failure, or nil.
	// Its own text is never part of Error (see Detail).
	Err error
}

// Error returns "<provider>: <status> <status text>: <type>: <message>:
// <detail>" with the parts that are known, and the number of attempts when
// more than one.
func (e *ProviderError) Error() string {
	var b strings.Builder
	b.WriteString(e.Provider)
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ": %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	}
	if e.Type != "" {
		b.WriteString(": " + e.Type)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	return b.String()
}

// Unwrap returns the underlying network error, if any.
func (e *ProviderError) Unwrap() error { return e.Err }
