package provider

import (
	"bytes"
	stdcmp "cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tollgate-dev/tollgate/model"
)

func TestBaseURL(t *testing.T) {
	for _, tt := range []struct{ base, want, err string }{
		{"", "https://api.example.com/v1/", ""},
		{"http://localhost:11434/v1", "http://localhost:11434/v1/", ""},
		{"https://x.example/", "https://x.example/", ""},
		{"ftp://x.example", "", `p: base URL "ftp://x.example" is not an absolute http(s) URL`},
		{"localhost:8080/sk-KEY", "", `p: base URL "localhost:8080/[redacted]" is not an absolute http(s) URL`},
		// The key never crosses the network in clear text.
		{"http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1/", ""},
		{"http://127.9.9.9:8000", "http://127.9.9.9:8000/", ""},
		{"http://[::1]:8000/v1", "http://[::1]:8000/v1/", ""},
		{"http://api.localhost/v1", "http://api.localhost/v1/", ""},
		{"http://LOCALHOST./v1", "http://LOCALHOST./v1/", ""},
		{"http://vllm.internal:8000/v1", "", `p: base URL "http://vllm.internal:8000/v1": refusing to send an API key over plain http to a host that is not loopback; use https`},
		{"http://10.0.0.5/sk-KEY", "", `p: base URL "http://10.0.0.5/[redacted]": refusing to send an API key over plain http to a host that is not loopback; use https`},
		{"http://localhost.example.com/v1", "", `p: base URL "http://localhost.example.com/v1": refusing to send an API key over plain http to a host that is not loopback; use https`},
		{"http://[::ffff:8.8.8.8]/v1", "", `p: base URL "http://[::ffff:8.8.8.8]/v1": refusing to send an API key over plain http to a host that is not loopback; use https`},
	} {
		got, err := BaseURL("p", tt.base, "https://api.example.com/v1", "sk-KEY")
		if got != tt.want || fmt.Sprint(err) != stdcmp.Or(tt.err, "<nil>") {
			t.Errorf("BaseURL(%q) = %q, %v; want %q, %s", tt.base, got, err, tt.want, tt.err)
		}
	}
}

// Without a key, plain http to any host is fine (a local or in-cluster
// server that needs none).
func TestBaseURLWithoutKey(t *testing.T) {
	if got, err := BaseURL("p", "http://vllm.internal:8000/v1", "", ""); err != nil || got != "http://vllm.internal:8000/v1/" {
		t.Errorf("BaseURL = %q, %v", got, err)
	}
}

// With no logger of its own, a provider's retry warnings reach slog.Default;
// its debug records do not.
func TestLoggerNilWarnsToDefault(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	t.Cleanup(func() { slog.SetDefault(old) })
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	log := Logger(nil, "p")
	log.Debug("each call")
	log.Info("info")
	log.Warn("model call failed, retrying", "delay", "1m0s")
	got := buf.String()
	if !strings.Contains(got, "retrying") || !strings.Contains(got, "provider=p") || strings.Contains(got, "each call") || strings.Contains(got, "info") {
		t.Errorf("default log = %q, want the warning only", got)
	}
}

func TestTimeout(t *testing.T) {
	parent := context.Background()
	tctx, cancel := WithTimeout(parent, time.Nanosecond)
	defer cancel()
	<-tctx.Done()
	err := TimeoutError("p", parent, tctx, tctx.Err(), time.Nanosecond)
	var pe *model.ProviderError
	if !errors.As(err, &pe) || !pe.Retryable || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timeout of 1ns") {
		t.Errorf("err = %v, want a retryable ProviderError naming the timeout", err)
	}
	// The caller's own cancellation stays what it is.
	pctx, pcancel := context.WithCancel(parent)
	tctx2, cancel2 := WithTimeout(pctx, time.Hour)
	defer cancel2()
	pcancel()
	if err := TimeoutError("p", pctx, tctx2, context.Canceled, time.Hour); err != context.Canceled {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	// 0 is the default, a negative value no deadline.
	d, c := WithTimeout(parent, 0)
	defer c()
	if dl, ok := d.Deadline(); !ok || time.Until(dl) < DefaultTimeout-time.Minute {
		t.Errorf("deadline %v %v, want about DefaultTimeout", dl, ok)
	}
	n, c2 := WithTimeout(parent, -1)
	defer c2()
	if _, ok := n.Deadline(); ok {
		t.Error("a negative timeout set a deadline")
	}
}

// A caller's deadline that comes first is the call's bound: no context of the
// provider's own, and its end is the caller's context error, not a timeout
// of the provider's.
func TestTimeoutUnderCallerDeadline(t *testing.T) {
	parent, pcancel := context.WithTimeout(context.Background(), time.Minute)
	defer pcancel()
	tctx, cancel := WithTimeout(parent, time.Hour)
	cancel()
	if tctx != parent || tctx.Err() != nil {
		t.Fatalf("WithTimeout(ctx ending in 1m, 1h) = %v (err %v), want ctx itself, live", tctx, tctx.Err())
	}
	if n := testing.AllocsPerRun(100, func() { _, c := WithTimeout(parent, time.Hour); c() }); n != 0 {
		t.Errorf("WithTimeout under an earlier deadline allocates %v times, want 0", n)
	}
	// A later caller's deadline does not stop the provider's own.
	far, fcancel := context.WithTimeout(context.Background(), 2*time.Hour)
	defer fcancel()
	tctx, cancel = WithTimeout(far, time.Hour)
	defer cancel()
	if dl, _ := tctx.Deadline(); tctx == far || time.Until(dl) > time.Hour {
		t.Errorf("WithTimeout(ctx ending in 2h, 1h) ends at %v, want within the hour", dl)
	}
	short, scancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer scancel()
	tctx, cancel = WithTimeout(short, time.Hour)
	defer cancel()
	<-tctx.Done()
	if err := TimeoutError("p", short, tctx, tctx.Err(), time.Hour); err != context.DeadlineExceeded {
		t.Errorf("err = %v, want the caller's context.DeadlineExceeded as is", err)
	}
}

func TestHeaders(t *testing.T) {
	set := func(k, v string) string { return "set " + k + "=" + v }
	add := func(k, v string) string { return "add " + k + "=" + v }
	got := Headers(http.Header{"X-Tenant": {"a", "b"}, "Http-Referer": {"r"}}, set, add)
	want := []string{"set Http-Referer=r", "set X-Tenant=a", "add X-Tenant=b"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Headers (-want +got):\n%s", d)
	}
}

func TestLoggerAndTruncate(t *testing.T) {
	Logger(nil, "p").Info("discarded")
	var buf bytes.Buffer
	Logger(slog.New(slog.NewTextHandler(&buf, nil)), "p").Info("hi")
	if !strings.Contains(buf.String(), "provider=p") {
		t.Errorf("log = %q, want provider=p", buf.String())
	}
	if got := Truncate("abcdef", 3); got != "abc..." {
		t.Errorf("Truncate = %q", got)
	}
	if got := Truncate("abc", 3); got != "abc" {
		t.Errorf("Truncate = %q", got)
	}
}
