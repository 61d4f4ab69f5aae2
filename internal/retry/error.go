package retry

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// ProviderError is a failed model call, as every HTTP provider of tollgate
// reports it. Test for it with errors.As:
//
//	var pe *retry.ProviderError
//	if errors.As(err, &pe) && pe.StatusCode == http.StatusUnauthorized { ... }
//
// Its text never contains the API key: the provider's message and any
// network error text pass through [Redact] when the error is built.
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
	// Retryable reports whether the failure is transient (see [IsRetryable]).
	Retryable bool
	// RetryAfter is the server's Retry-After delay (delay-seconds form), or 0.
	RetryAfter time.Duration
	// Attempts is how many attempts were made in all, retries included.
	Attempts int
	// Err is the underlying transport error of a network failure, or nil.
	Err error

	text string // Err's text, redacted, fixed at construction
}

// Error returns "<provider>: <status> <status text>: <type>: <message>" with
// the parts that are known, and the number of attempts when more than one.
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
	if e.text != "" {
		b.WriteString(": " + e.text)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	return b.String()
}

// Unwrap returns the underlying network error, if any.
func (e *ProviderError) Unwrap() error { return e.Err }

// HTTPError builds the [ProviderError] of a non-2xx response: status, the
// Retry-After of header (may be nil), the provider's error type and message.
// secrets (the API key) are redacted from typ and msg.
func HTTPError(provider string, status int, header http.Header, typ, msg string, secrets ...string) *ProviderError {
	e := &ProviderError{
		Provider:   provider,
		StatusCode: status,
		Type:       Redact(typ, secrets...),
		Message:    Redact(strings.TrimSpace(msg), secrets...),
		Retryable:  RetryableStatus(status),
	}
	if header != nil {
		e.RetryAfter = ParseRetryAfter(header.Get("Retry-After"))
	}
	return e
}

// NetworkError builds the [ProviderError] of a failure without an HTTP error
// status: a transport failure, a stream cut short, an error event inside a
// stream, an answer that does not decode. It is retryable when
// [IsNetworkError] says so. secrets are redacted from its text.
func NetworkError(provider string, err error, secrets ...string) *ProviderError {
	return &ProviderError{
		Provider:  provider,
		Retryable: IsNetworkError(err),
		Err:       err,
		text:      Redact(err.Error(), secrets...),
	}
}

// Redacted is what [Redact] puts in place of a secret.
const Redacted = "[redacted]"

// Redact returns s with every occurrence of each non-empty secret replaced by
// [Redacted].
func Redact(s string, secrets ...string) string {
	for _, sec := range secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, Redacted)
		}
	}
	return s
}
