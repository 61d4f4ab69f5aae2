package anthropic_test

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

	"github.com/tollgate-dev/tollgate/internal/providertest"
	"github.com/tollgate-dev/tollgate/model/anthropic"
	"github.com/tollgate-dev/tollgate/model/modeltest"
)

// answers is an in-memory transport that plays its answers in order.
type answers struct {
	mu   sync.Mutex
	list []providertest.Answer
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

// TestRetryWaitIsVisible: a 429 with Retry-After: 60 is waited out with a
// warning on slog.Default (no Options.Logger) that says how long, and what
// the server asked for when RetryMaxDelay (30 s by default) cuts the wait.
// The clock is testing/synctest's: the waits take no real time.
func TestRetryWaitIsVisible(t *testing.T) {
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
			tr := &answers{list: []providertest.Answer{
				{Status: 429, Header: http.Header{"Retry-After": {"60"}}, Body: providertest.ReadFile(t, "error_429.json")},
				{Status: 200, Body: providertest.ReadFile(t, "response_tool_use.json")},
			}}
			m, err := anthropic.New(&anthropic.Options{APIKey: testKey, HTTPClient: &http.Client{Transport: tr}, RetryMaxDelay: tc.maxDelay})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if _, err := m.Generate(context.Background(), canonical()); err != nil {
				t.Fatal(err)
			}
			if got := time.Since(start); got != tc.wait {
				t.Errorf("waited %v, want %v", got, tc.wait)
			}
			out := logs.String()
			if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "provider=anthropic") || !strings.Contains(out, tc.line) || strings.Contains(out, testKey) {
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

// TestDefaultTimeout: with no Options.Timeout, a model call that gets no
// answer ends after DefaultTimeout (10 minutes), on Generate and Stream,
// with an error that names it; retries (the timeout is retryable) come
// within the same bound.
func TestDefaultTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, err := anthropic.New(&anthropic.Options{APIKey: testKey, HTTPClient: &http.Client{Transport: hang{}}, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = m.Generate(context.Background(), canonical())
		_, _, err2 := modeltest.Collect(m.Stream(context.Background(), canonical()))
		for _, err := range []error{err, err2} {
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timeout of 10m0s") {
				t.Errorf("err = %v, want the default timeout", err)
			}
		}
		if got := time.Since(start); got != 2*anthropic.DefaultTimeout || anthropic.DefaultTimeout != 10*time.Minute {
			t.Errorf("the two calls took %v, want 2 × %v (10m)", got, anthropic.DefaultTimeout)
		}
	})
}
