package retry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/model"
)

var fast = Policy{MaxRetries: 3, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}

func TestDoRetriesTransientStatuses(t *testing.T) {
	for _, code := range []int{429, 500, 502, 503, 504} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			calls := 0
			err := Do(context.Background(), fast, nil, func(ctx context.Context, attempt int) error {
				calls++
				if attempt != calls {
					t.Errorf("attempt = %d, want %d", attempt, calls)
				}
				return HTTPError("p", code, nil, "", "busy")
			})
			var pe *model.ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want *model.ProviderError", err)
			}
			if calls != 4 || pe.Attempts != 4 {
				t.Errorf("calls = %d, Attempts = %d, want 4 and 4", calls, pe.Attempts)
			}
			if !strings.Contains(err.Error(), "after 4 attempts") {
				t.Errorf("err = %q, want the attempts", err)
			}
		})
	}
}

func TestDoDoesNotRetryClientErrors(t *testing.T) {
	for _, code := range []int{400, 401, 403, 404, 422} {
		calls := 0
		err := Do(context.Background(), fast, nil, func(context.Context, int) error {
			calls++
			return HTTPError("p", code, nil, "", "no")
		})
		if calls != 1 || err == nil {
			t.Errorf("%d: calls = %d, err = %v; want 1 call and an error", code, calls, err)
		}
	}
}

func TestDoStopsOnSuccess(t *testing.T) {
	calls := 0
	err := Do(context.Background(), fast, nil, func(context.Context, int) error {
		calls++
		if calls < 3 {
			return NetworkError("p", syscall.ECONNRESET)
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("err = %v, calls = %d; want nil after 3", err, calls)
	}
}

func TestRetriesConfigurable(t *testing.T) {
	for _, tc := range []struct{ max, calls int }{{-1, 1}, {0, 1 + DefaultMaxRetries}, {1, 2}, {5, 6}} {
		p := Policy{MaxRetries: tc.max, BaseDelay: time.Microsecond, MaxDelay: time.Microsecond}
		calls := 0
		_ = Do(context.Background(), p, nil, func(context.Context, int) error {
			calls++
			return HTTPError("p", 503, nil, "", "")
		})
		if calls != tc.calls {
			t.Errorf("MaxRetries %d: %d calls, want %d", tc.max, calls, tc.calls)
		}
	}
}

func TestDoNoRetryAfterCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err := Do(ctx, fast, nil, func(context.Context, int) error {
		calls++
		cancel()
		return HTTPError("p", 503, nil, "", "")
	})
	if calls != 1 || !errors.Is(err, context.Canceled) {
		t.Errorf("calls = %d, err = %v; want 1 call and context.Canceled", calls, err)
	}
}

func TestDoCancelDuringWait(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := Policy{MaxRetries: 3, BaseDelay: time.Hour, MaxDelay: time.Hour}
	calls := 0
	called := make(chan struct{}, 1)
	done := make(chan error)
	go func() {
		done <- Do(ctx, p, nil, func(context.Context, int) error {
			calls++
			called <- struct{}{}
			return HTTPError("p", 429, nil, "", "")
		})
	}()
	<-called // Do waits for its first retry now
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || calls != 1 {
			t.Errorf("err = %v, calls = %d; want context.Canceled after 1 call", err, calls)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Do did not return after cancellation")
	}
}

func TestDelay(t *testing.T) {
	p := Policy{BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}
	for retry, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 400 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second, 40: time.Second} {
		for range 50 {
			d := p.Delay(retry, errors.New("x"))
			if d < want/2 || d > want {
				t.Fatalf("Delay(%d) = %v, want in [%v, %v]", retry, d, want/2, want)
			}
		}
	}
	h := http.Header{"Retry-After": {"3"}}
	if d := p.Delay(1, HTTPError("p", 429, h, "", "")); d != time.Second {
		t.Errorf("Retry-After 3s with MaxDelay 1s: delay %v, want the cap 1s", d)
	}
	p.MaxDelay = time.Minute
	if d := p.Delay(1, fmt.Errorf("wrapped: %w", HTTPError("p", 429, h, "", ""))); d != 3*time.Second {
		t.Errorf("Retry-After 3: delay %v, want 3s", d)
	}
	h.Set("Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT")
	if d := p.Delay(1, HTTPError("p", 429, h, "", "")); d > 100*time.Millisecond || d < 50*time.Millisecond {
		t.Errorf("HTTP-date Retry-After: delay %v, want the backoff", d)
	}
}

func TestParseRetryAfter(t *testing.T) {
	for in, want := range map[string]time.Duration{"": 0, "0": 0, "7": 7 * time.Second, " 2 ": 2 * time.Second, "-1": 0, "1.5": 0, "Fri, 31 Dec 1999 23:59:59 GMT": 0} {
		if got := ParseRetryAfter(in); got != want {
			t.Errorf("ParseRetryAfter(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestIsRetryable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{context.Canceled, false},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), false},
		{syscall.ECONNREFUSED, true},
		{io.ErrUnexpectedEOF, true},
		{errors.New("json: bad"), false},
		{HTTPError("p", 529, nil, "", ""), false},
		{HTTPError("p", 502, nil, "", ""), true},
		{NetworkError("p", fmt.Errorf("dial: %w", syscall.ECONNREFUSED)), true},
	} {
		if got := IsRetryable(tc.err); got != tc.want {
			t.Errorf("IsRetryable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestErrorsNeverEchoTheKey(t *testing.T) {
	const key = "sk-test-SECRET-0123456789"
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	err := Do(context.Background(), fast, log, func(_ context.Context, attempt int) error {
		if attempt == 1 {
			return NetworkError("p", fmt.Errorf("post https://x/?key=%s: %w", key, syscall.ECONNRESET), key)
		}
		return HTTPError("p", 401, nil, "invalid_api_key "+key, "Incorrect API key provided: "+key, key)
	})
	var pe *model.ProviderError
	if !errors.As(err, &pe) || pe.StatusCode != 401 || pe.Attempts != 2 {
		t.Fatalf("err = %#v", err)
	}
	if !strings.Contains(logs.String(), "retrying") {
		t.Fatalf("no retry logged: %q", logs.String())
	}
	for _, s := range []string{err.Error(), fmt.Sprintf("%+v", err), pe.Message, pe.Type, logs.String()} {
		if strings.Contains(s, key) {
			t.Errorf("key leaked in %q", s)
		}
	}
	if !strings.Contains(err.Error(), "Incorrect API key provided: "+Redacted) {
		t.Errorf("err = %q, want the redacted message", err)
	}
}
