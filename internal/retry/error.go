package retry

import (
	"net/http"
	"strings"

	"github.com/tollgate-dev/tollgate/model"
)

// HTTPError builds the [model.ProviderError] of a non-2xx response: status, the
// Retry-After of header (may be nil), the provider's error type and message.
// secrets (the API key) are redacted from typ and msg.
func HTTPError(provider string, status int, header http.Header, typ, msg string, secrets ...string) *model.ProviderError {
	e := &model.ProviderError{
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

// NetworkError builds the [model.ProviderError] of a failure without an HTTP error
// status: a transport failure, a stream cut short, an error event inside a
// stream, an answer that does not decode. It is retryable when
// [IsNetworkError] says so. secrets are redacted from its text.
func NetworkError(provider string, err error, secrets ...string) *model.ProviderError {
	return &model.ProviderError{
		Provider:  provider,
		Retryable: IsNetworkError(err),
		Err:       err,
		Detail:    Redact(err.Error(), secrets...),
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
