// Package retry is the one retry mechanism of tollgate's HTTP model providers
// (model/openai, model/anthropic): exponential backoff with jitter on transient
// failures, the Retry-After header honoured, no retry once the context has
// ended, and the typed [model.ProviderError] every provider failure turns into.
//
// The vendor SDKs have retry loops of their own; the providers switch them off
// so that behaviour is the same, and testable, across providers.
//
// Transient failures are HTTP 429, 500, 502, 503, 504 and network errors
// (connection refused or reset, a response cut short). Retry-After is honoured
// in its delay-seconds form (RFC 9110, section 10.2.3); the HTTP-date form
// falls back to the computed backoff. Every delay is capped by
// [Policy.MaxDelay].
package retry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tollgate-dev/tollgate/model"
)

// Defaults used by [Policy] for its zero fields.
const (
	// DefaultMaxRetries is the number of retries after the first attempt.
	DefaultMaxRetries = 2
	// DefaultBaseDelay is the backoff before the first retry; it doubles on
	// each further retry.
	DefaultBaseDelay = 500 * time.Millisecond
	// DefaultMaxDelay caps every single delay, Retry-After included.
	DefaultMaxDelay = 30 * time.Second
)

// Policy says how often and how patiently a failed call is retried. The zero
// value retries [DefaultMaxRetries] times with the default delays.
type Policy struct {
	// MaxRetries is the number of retries after the first attempt: 0 means
	// [DefaultMaxRetries], a negative value means no retry at all.
	MaxRetries int
	// BaseDelay is the backoff before the first retry (0: [DefaultBaseDelay]).
	// Retry n waits BaseDelay*2^(n-1), capped by MaxDelay, with jitter: a
	// uniformly random duration between half of that and all of it.
	BaseDelay time.Duration
	// MaxDelay caps every delay, a server's Retry-After included
	// (0: [DefaultMaxDelay]).
	MaxDelay time.Duration
}

// Retries returns the effective number of retries after the first attempt.
func (p Policy) Retries() int {
	switch {
	case p.MaxRetries < 0:
		return 0
	case p.MaxRetries == 0:
		return DefaultMaxRetries
	}
	return p.MaxRetries
}

func (p Policy) base() time.Duration {
	if p.BaseDelay <= 0 {
		return DefaultBaseDelay
	}
	return p.BaseDelay
}

func (p Policy) max() time.Duration {
	if p.MaxDelay <= 0 {
		return DefaultMaxDelay
	}
	return p.MaxDelay
}

// Delay returns how long to wait before retry number retry (1 for the first
// retry) after err: the server's Retry-After when err carries one, else the
// jittered exponential backoff; never more than MaxDelay.
func (p Policy) Delay(retry int, err error) time.Duration {
	maxD := p.max()
	var pe *model.ProviderError
	if errors.As(err, &pe) && pe.RetryAfter > 0 {
		return min(pe.RetryAfter, maxD)
	}
	d := p.base()
	for i := 1; i < retry && d < maxD; i++ {
		d *= 2
	}
	d = min(d, maxD)
	// Jitter: uniformly in [d/2, d].
	half := d / 2
	return half + rand.N(d-half+1)
}

// Do calls op until it succeeds, fails with an error that is not retryable
// (see [IsRetryable]), the retries of p are used up, or ctx ends. attempt
// counts from 1. It returns op's last error; a [model.ProviderError] among it gets
// its Attempts set. When ctx ends, during op or while waiting, Do returns
// ctx.Err() wrapped with the last failure, so errors.Is(err,
// context.Canceled) holds and no further attempt is made.
//
// Each retry is logged at level Warn on log (nil: no logging) with the
// provider, status, attempt and delay, and the server's Retry-After when it
// sent one (the delay is shorter when MaxDelay caps it); never with
// credentials.
func Do(ctx context.Context, p Policy, log *slog.Logger, op func(ctx context.Context, attempt int) error) error {
	retries := p.Retries()
	for attempt := 1; ; attempt++ {
		err := op(ctx, attempt)
		if err == nil {
			return nil
		}
		var pe *model.ProviderError
		if errors.As(err, &pe) {
			pe.Attempts = attempt
		}
		if cerr := ctx.Err(); cerr != nil {
			return contextError(cerr, err)
		}
		if attempt > retries || !IsRetryable(err) {
			return err
		}
		delay := p.Delay(attempt, err)
		if log != nil {
			attrs := []slog.Attr{slog.Int("attempt", attempt), slog.Duration("delay", delay)}
			if pe != nil {
				// The provider is already on the logger (provider.Logger).
				attrs = append(attrs, slog.Int("status", pe.StatusCode))
				if pe.RetryAfter > 0 {
					// What the server asked for, when MaxDelay cuts it.
					attrs = append(attrs, slog.Duration("retry_after", pe.RetryAfter))
				}
			}
			attrs = append(attrs, slog.String("error", err.Error()))
			log.LogAttrs(ctx, slog.LevelWarn, "model call failed, retrying", attrs...)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return contextError(ctx.Err(), err)
		case <-t.C:
		}
	}
}

// contextError reports a context that ended; last is the failure at that
// moment, kept in the text only when it is not already the context error.
func contextError(cerr, last error) error {
	if errors.Is(last, cerr) {
		return cerr
	}
	return fmt.Errorf("%w (last failure: %v)", cerr, last)
}

// IsRetryable reports whether err is a transient failure worth retrying: a
// [model.ProviderError] marked Retryable, or a network error (see
// [IsNetworkError]). Context errors are never retryable.
func IsRetryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pe *model.ProviderError
	if errors.As(err, &pe) {
		return pe.Retryable
	}
	return IsNetworkError(err)
}

// RetryableStatus reports whether an HTTP status is transient: 429, 500, 502,
// 503 or 504.
func RetryableStatus(code int) bool {
	switch code {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// IsNetworkError reports whether err is a failure to reach the server or to
// read its answer: a net.Error (dial, timeout), a connection reset or refused,
// or a response body cut short (io.ErrUnexpectedEOF, io.EOF). Context errors
// are not network errors.
func IsNetworkError(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// ParseRetryAfter reads a Retry-After header value in its delay-seconds form
// (RFC 9110, section 10.2.3) and returns it as a duration. The HTTP-date form,
// an empty value, and anything unparsable return 0 (use the backoff).
func ParseRetryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return 0
	}
	return time.Duration(n) * time.Second
}
