package providertest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-dev/tollgate/model"
)

// Waits describes one provider for [TestRetryWaitIsVisible] and
// [TestDefaultTimeout], the tests of how long a model call may wait that
// every HTTP provider must pass the same way.
type Waits struct {
	// Provider is the value of the provider attribute on its log lines
	// ("openai", "anthropic").
	Provider string
	// Answer names a golden file under testdata/ holding a 200 answer.
	Answer string
	// Key is the API key New gives the provider; it must appear in no log.
	Key string
	// DefaultTimeout is the provider's DefaultTimeout, pinned at 10 minutes.
	DefaultTimeout time.Duration
	// Request returns the request each call sends.
	Request func() *model.Request
	// New opens the provider with Key, the client, the retry cap (zero:
	// the provider's default) and the logger (nil: slog.Default).
	New func(client *http.Client, retryMaxDelay time.Duration, logger *slog.Logger) (model.Model, error)
}

// answers is an in-memory transport that plays its answers in order.
type answers struct {
	mu   sync.Mutex
	list []Answer
}

func (a *answers) RoundTrip(r *http.Request) (*http.Response, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ans := a.list[0]
	a.list = a.list[1:]
	h := ans.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set("Content-Type", "application/json")
	return &http.Response{StatusCode: ans.Status, Header: h, Body: io.NopCloser(strings.NewReader(ans.Body)), Request: r}, nil
}

// TestRetryWaitIsVisible checks that a 429 with Retry-After: 60 is waited
// out with a warning on slog.Default (no logger given) that says how long,
// and what the server asked for when the retry cap (30 s by default) cuts
// the wait. The clock is testing/synctest's: the waits take no real time.
func TestRetryWaitIsVisible(t *testing.T, w Waits) {
	for _, tc := range []struct {
		maxDelay time.Duration
		wait     time.Duration
		line     string
	}{
		{0, 30 * time.Second, "delay=30s status=429 retry_after=1m0s"},
		{2 * time.Minute, time.Minute, "delay=1m0s status=429 retry_after=1m0s"},
	} {
		synctest.Test(t, func(t *testing.T) {
			var logs bytes.Buffer
			old := slog.Default()
			slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
			defer slog.SetDefault(old)
			tr := &answers{list: []Answer{
				{Status: 429, Header: http.Header{"Retry-After": {"60"}}, Body: ReadFile(t, "error_429.json")},
				{Status: 200, Body: ReadFile(t, w.Answer)},
			}}
			m, err := w.New(&http.Client{Transport: tr}, tc.maxDelay, nil)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if _, err := m.Generate(context.Background(), w.Request()); err != nil {
				t.Fatal(err)
			}
			if got := time.Since(start); got != tc.wait {
				t.Errorf("waited %v, want %v", got, tc.wait)
			}
			out := logs.String()
			if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "provider="+w.Provider) || !strings.Contains(out, tc.line) || strings.Contains(out, w.Key) {
				t.Errorf("log = %q, want a warning with %q", out, tc.line)
			}
		})
	}
}

// hang is a transport whose requests never get an answer.
type hang struct{}

func (hang) RoundTrip(r *http.Request) (*http.Response, error) {
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// TestDefaultTimeout checks that with no timeout set, a model call that gets
// no answer ends after the provider's DefaultTimeout (10 minutes), on
// Generate and Stream, with an error that names it; retries (the timeout is
// retryable) come within the same bound.
func TestDefaultTimeout(t *testing.T, w Waits) {
	synctest.Test(t, func(t *testing.T) {
		m, err := w.New(&http.Client{Transport: hang{}}, 0, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		s, ok := m.(model.Streamer)
		if !ok {
			t.Fatalf("%T is not a model.Streamer", m)
		}
		start := time.Now()
		_, err = m.Generate(context.Background(), w.Request())
		var err2 error
		for _, err := range s.Stream(context.Background(), w.Request()) {
			if err != nil {
				err2 = err
				break
			}
		}
		for _, err := range []error{err, err2} {
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timeout of 10m0s") {
				t.Errorf("err = %v, want the default timeout", err)
			}
		}
		if got := time.Since(start); got != 2*w.DefaultTimeout || w.DefaultTimeout != 10*time.Minute {
			t.Errorf("the two calls took %v, want 2 × %v (10m)", got, w.DefaultTimeout)
		}
	})
}
