package openai_test

import (
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/providertest"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/model/openai"
)

// waits describes this provider to the shared tests of its waits.
var waits = providertest.Waits{
	Provider:       "openai",
	Answer:         "response_tool_calls.json",
	Key:            testKey,
	DefaultTimeout: 10 * time.Minute,
	Request:        canonical,
	New: func(client *http.Client, retryMaxDelay time.Duration, logger *slog.Logger) (model.Model, error) {
		return openai.New(&openai.Options{APIKey: testKey, HTTPClient: client, RetryMaxDelay: retryMaxDelay, Logger: logger})
	},
}

// TestRetryWaitIsVisible: a 429 with Retry-After: 60 is waited out with a
// warning on slog.Default that says how long, and what the server asked for
// when RetryMaxDelay (30 s by default) cuts the wait.
func TestRetryWaitIsVisible(t *testing.T) { providertest.TestRetryWaitIsVisible(t, waits) }

// TestDefaultTimeout: with no Options.Timeout, a call that gets no answer
// ends after DefaultTimeout (10 minutes), on Generate and Stream.
func TestDefaultTimeout(t *testing.T) { providertest.TestDefaultTimeout(t, waits) }
