package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tollgate-dev/tollgate/internal/providertest"
	"github.com/tollgate-dev/tollgate/internal/retry"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/model/anthropic"
	"github.com/tollgate-dev/tollgate/model/modeltest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

const testKey = "sk-ant-test-KEY-0123456789abcdef"

// newModel returns a model for a local server, with fast retries.
func newModel(t *testing.T, baseURL string, mod func(*anthropic.Options)) *anthropic.Model {
	t.Helper()
	o := &anthropic.Options{
		BaseURL:        baseURL,
		APIKey:         testKey,
		MaxRetries:     3,
		RetryBaseDelay: time.Millisecond,
		RetryMaxDelay:  5 * time.Millisecond,
	}
	if mod != nil {
		mod(o)
	}
	m, err := anthropic.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestConformance(t *testing.T) {
	modeltest.Run(t, func(t *testing.T, turns []modeltest.Turn) modeltest.Backend {
		f := newFake(t, turns)
		return modeltest.Backend{Model: newModel(t, f.srv.URL, nil), Requests: f.requests, NoTemperature: true}
	})
}

// With an API version that has sampling parameters, temperature is sent.
func TestConformanceAPIVersion20230601(t *testing.T) {
	modeltest.Run(t, func(t *testing.T, turns []modeltest.Turn) modeltest.Backend {
		f := newFake(t, turns)
		m := newModel(t, f.srv.URL, func(o *anthropic.Options) { o.APIVersion = "2023-06-01" })
		return modeltest.Backend{Model: m, Requests: f.requests}
	})
}

func TestRequestGolden(t *testing.T) {
	rec := providertest.NewRecorder(t,
		providertest.Answer{Body: providertest.ReadFile(t, "response_tool_use.json")},
		providertest.Answer{Body: providertest.ReadFile(t, "response_tool_use.json")},
		providertest.Answer{Body: providertest.ReadFile(t, "stream_tool_use.sse")},
	)
	m := newModel(t, rec.URL(), nil)
	req := canonical()
	temp := 0.3
	req.Temperature = &temp // not sent under the default API version
	if _, err := m.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	m2 := newModel(t, rec.URL(), func(o *anthropic.Options) {
		o.Model, o.MaxTokens, o.APIVersion = "claude-default", 1000, "2023-06-01"
	})
	req = &model.Request{Messages: []model.Message{model.User("Hi")}, Temperature: &temp}
	if _, err := m2.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	req = canonical()
	req.MaxTokens = 64
	if _, _, err := modeltest.Collect(m.Stream(context.Background(), req)); err != nil {
		t.Fatal(err)
	}
	providertest.Golden(t, "request.golden.json", rec.Body(0), *update)
	providertest.Golden(t, "request_minimal.golden.json", rec.Body(1), *update)
	providertest.Golden(t, "request_stream.golden.json", rec.Body(2), *update)
}

func TestAuthAndHeaders(t *testing.T) {
	rec := providertest.NewRecorder(t, providertest.Answer{Body: providertest.ReadFile(t, "response_tool_use.json")})
	m := newModel(t, rec.URL(), func(o *anthropic.Options) {
		o.Headers = http.Header{"Anthropic-Beta": {"feature-a", "feature-b"}}
	})
	if _, err := m.Generate(context.Background(), canonical()); err != nil {
		t.Fatal(err)
	}
	m = newModel(t, rec.URL(), func(o *anthropic.Options) { o.APIVersion = "2023-06-01" })
	if _, err := m.Generate(context.Background(), canonical()); err != nil {
		t.Fatal(err)
	}
	h := rec.Header(0)
	if got := h.Get("X-Api-Key"); got != testKey {
		t.Errorf("x-api-key = %q, want the key", got)
	}
	if got := h.Get("Authorization"); got != "" {
		t.Errorf("Authorization = %q, want none (the key goes in x-api-key only)", got)
	}
	if got := h.Get("Anthropic-Version"); got != "2026-10-21" {
		t.Errorf("anthropic-version = %q, want %q", got, "2026-10-21")
	}
	if got := h.Values("Anthropic-Beta"); !cmp.Equal(got, []string{"feature-a", "feature-b"}) {
		t.Errorf("anthropic-beta = %q", got)
	}
	if got := rec.Header(1).Values("Anthropic-Version"); !cmp.Equal(got, []string{"2023-06-01"}) {
		t.Errorf("anthropic-version with APIVersion set = %q, want exactly [2023-06-01]", got)
	}

	// The environment is not read.
	t.Setenv("ANTHROPIC_API_KEY", "sk-from-env")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	m = newModel(t, rec.URL(), func(o *anthropic.Options) { o.APIKey = "" })
	if _, err := m.Generate(context.Background(), canonical()); err != nil {
		t.Fatal(err)
	}
	if h := rec.Header(2); h.Get("X-Api-Key") != "" || h.Get("Authorization") != "" {
		t.Errorf("credentials sent without a key: %v", h)
	}
}

var wantToolUse = &model.Response{
	Message: model.Assistant("I'll check both.",
		model.ToolCall{ID: "toolu_01A09q90qw90lq917835lq9", Name: "get_weather", Arguments: json.RawMessage(`{"city": "Paris"}`)},
		model.ToolCall{ID: "toolu_01B7mRt2kLx", Name: "get_time", Arguments: json.RawMessage(`{"city": "Paris", "format": "24h"}`)},
	),
	Usage:        model.Usage{InputTokens: 572, OutputTokens: 89, TotalTokens: 661},
	FinishReason: model.FinishToolCalls,
	Model:        "claude-sonnet-4-5-20250929",
}

func TestResponseFromTestdata(t *testing.T) {
	rec := providertest.NewRecorder(t, providertest.Answer{Body: providertest.ReadFile(t, "response_tool_use.json")})
	resp, err := newModel(t, rec.URL(), nil).Generate(context.Background(), canonical())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantToolUse, resp, cmpopts.IgnoreFields(model.Response{}, "Raw")); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	if !json.Valid(resp.Raw) || !bytes.Contains(resp.Raw, []byte("msg_01XFDUDYJgAACzvnptvVoYEL")) {
		t.Errorf("Raw = %.80s, want the provider payload", resp.Raw)
	}
}

func TestStreamRecorded(t *testing.T) {
	rec := providertest.NewRecorder(t, providertest.Answer{Body: providertest.ReadFile(t, "stream_tool_use.sse")})
	deltas, final, err := modeltest.Collect(newModel(t, rec.URL(), nil).Stream(context.Background(), canonical()))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"I'll check", " both."}, deltas); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantToolUse, final, cmpopts.IgnoreFields(model.Response{}, "Raw")); diff != "" {
		t.Errorf("final response (-want +got):\n%s", diff)
	}
}

func TestFinishReasons(t *testing.T) {
	for stop, want := range map[string]model.FinishReason{
		"end_turn": model.FinishStop, "stop_sequence": model.FinishStop, "tool_use": model.FinishToolCalls,
		"max_tokens": model.FinishLength, "model_context_window_exceeded": model.FinishLength,
		"refusal": model.FinishContentFilter, "pause_turn": model.FinishOther, "something_new": model.FinishOther,
	} {
		body := strings.Replace(providertest.ReadFile(t, "response_tool_use.json"), `"stop_reason": "tool_use"`, `"stop_reason": "`+stop+`"`, 1)
		rec := providertest.NewRecorder(t, providertest.Answer{Body: body})
		resp, err := newModel(t, rec.URL(), nil).Generate(context.Background(), canonical())
		if err != nil {
			t.Fatal(err)
		}
		if resp.FinishReason != want {
			t.Errorf("stop_reason %s: finish reason %s, want %s", stop, resp.FinishReason, want)
		}
	}
}

func TestRetryOn429And529(t *testing.T) {
	rec := providertest.NewRecorder(t,
		providertest.Answer{Status: 429, Header: http.Header{"Retry-After": {"1"}}, Body: providertest.ReadFile(t, "error_429.json")},
		providertest.Answer{Status: 529, Body: providertest.ReadFile(t, "error_529.json")},
		providertest.Answer{Status: 502, Body: "<html>bad gateway</html>", Header: http.Header{"Content-Type": {"text/html"}}},
		providertest.Answer{Body: providertest.ReadFile(t, "response_tool_use.json")},
	)
	if _, err := newModel(t, rec.URL(), nil).Generate(context.Background(), canonical()); err != nil {
		t.Fatal(err)
	}
	if rec.Calls() != 4 {
		t.Errorf("%d calls, want 4 (429, 529, 502, success)", rec.Calls())
	}
}

func TestRetryExhausted(t *testing.T) {
	for _, tc := range []struct{ retries, calls int }{{-1, 1}, {2, 3}} {
		rec := providertest.NewRecorder(t, providertest.Answer{Status: 429, Header: http.Header{"Retry-After": {"4"}}, Body: providertest.ReadFile(t, "error_429.json")})
		_, err := newModel(t, rec.URL(), func(o *anthropic.Options) { o.MaxRetries = tc.retries }).Generate(context.Background(), canonical())
		var pe *model.ProviderError
		if !errors.As(err, &pe) {
			t.Fatalf("err = %v, want *model.ProviderError", err)
		}
		want := model.ProviderError{Provider: "anthropic", StatusCode: 429, Type: "rate_limit_error", Retryable: true, RetryAfter: 4 * time.Second, Attempts: tc.calls,
			Message: "This request would exceed the rate limit for your organization of 50 requests per minute. Please reduce the rate of requests."}
		if diff := cmp.Diff(want, *pe); diff != "" {
			t.Errorf("error (-want +got):\n%s", diff)
		}
		if rec.Calls() != tc.calls {
			t.Errorf("MaxRetries %d: %d calls, want %d", tc.retries, rec.Calls(), tc.calls)
		}
	}
}

func TestClientErrorsNotRetriedAndKeyNeverEchoed(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rec := providertest.NewRecorder(t, providertest.Answer{Status: 401, Body: providertest.ReadFile(t, "error_401.json")})
	m := newModel(t, rec.URL(), func(o *anthropic.Options) { o.Logger = logger })
	_, err := m.Generate(context.Background(), canonical())
	var pe *model.ProviderError
	if !errors.As(err, &pe) || pe.StatusCode != 401 || pe.Retryable || pe.Type != "authentication_error" {
		t.Fatalf("err = %v, want a non-retryable 401 authentication_error", err)
	}
	if rec.Calls() != 1 {
		t.Errorf("%d calls, want 1", rec.Calls())
	}
	rec2 := providertest.NewRecorder(t,
		providertest.Answer{Drop: true},
		providertest.Answer{Status: 503, Body: `{"type":"error","error":{"type":"api_error","message":"key ` + testKey + ` rejected"}}`},
		providertest.Answer{Status: 401, Body: providertest.ReadFile(t, "error_401.json")},
	)
	m2 := newModel(t, rec2.URL()+"/"+testKey, func(o *anthropic.Options) { o.Logger = logger })
	_, _, err2 := modeltest.Collect(m2.Stream(context.Background(), canonical()))
	if err2 == nil || rec2.Calls() != 3 {
		t.Fatalf("stream: err = %v after %d calls, want an error after 3", err2, rec2.Calls())
	}
	if !strings.Contains(logs.String(), "retrying") {
		t.Errorf("retries not logged: %s", logs.String())
	}
	for _, s := range []string{err.Error(), fmt.Sprint(err), err2.Error(), logs.String()} {
		if strings.Contains(s, testKey) {
			t.Errorf("the API key appears in %q", s)
		}
	}
	if !strings.Contains(err.Error(), "invalid x-api-key: "+retry.Redacted) {
		t.Errorf("err = %q, want the redacted provider message", err)
	}
}

func TestNetworkErrorRetried(t *testing.T) {
	rec := providertest.NewRecorder(t, providertest.Answer{Drop: true}, providertest.Answer{Body: providertest.ReadFile(t, "response_tool_use.json")})
	if _, err := newModel(t, rec.URL(), nil).Generate(context.Background(), canonical()); err != nil {
		t.Fatal(err)
	}
	if rec.Calls() != 2 {
		t.Errorf("%d calls, want 2", rec.Calls())
	}
	_, err := newModel(t, "http://127.0.0.1:1", func(o *anthropic.Options) { o.MaxRetries = 1 }).Generate(context.Background(), canonical())
	var pe *model.ProviderError
	if !errors.As(err, &pe) || !pe.Retryable || pe.StatusCode != 0 || pe.Attempts != 2 {
		t.Fatalf("err = %#v, want a retryable network ProviderError after 2 attempts", err)
	}
}

func TestStreamRetriesOnlyBeforeFirstByte(t *testing.T) {
	rec := providertest.NewRecorder(t,
		providertest.Answer{Status: 529, Body: providertest.ReadFile(t, "error_529.json")},
		providertest.Answer{Body: providertest.ReadFile(t, "stream_tool_use.sse")},
	)
	_, final, err := modeltest.Collect(newModel(t, rec.URL(), nil).Stream(context.Background(), canonical()))
	if err != nil || final == nil || len(final.Message.ToolCalls) != 2 {
		t.Fatalf("final = %+v, err = %v", final, err)
	}
	if rec.Calls() != 2 {
		t.Errorf("%d calls, want 2", rec.Calls())
	}

	sse := providertest.ReadFile(t, "stream_tool_use.sse")
	rec = providertest.NewRecorder(t, providertest.Answer{Body: sse, Cut: strings.Index(sse, "toolu_01B7mRt2kLx")})
	deltas, final, err := modeltest.Collect(newModel(t, rec.URL(), nil).Stream(context.Background(), canonical()))
	if err == nil || final != nil {
		t.Fatalf("cut stream: final = %+v, err = %v; want an error", final, err)
	}
	if strings.Join(deltas, "") != "I'll check both." || rec.Calls() != 1 {
		t.Errorf("cut stream: deltas %q, %d calls; want the text and 1 call", deltas, rec.Calls())
	}

	// A stream that ends cleanly but without message_stop is an error.
	rec = providertest.NewRecorder(t, providertest.Answer{Body: sse[:strings.Index(sse, "event: message_stop")]})
	if _, _, err := modeltest.Collect(newModel(t, rec.URL(), nil).Stream(context.Background(), canonical())); err == nil || !strings.Contains(err.Error(), "message_stop") {
		t.Errorf("truncated stream: err = %v", err)
	}

	rec = providertest.NewRecorder(t, providertest.Answer{Body: providertest.ReadFile(t, "stream_overloaded_midway.sse")})
	deltas, _, err = modeltest.Collect(newModel(t, rec.URL(), nil).Stream(context.Background(), canonical()))
	var pe *model.ProviderError
	if !errors.As(err, &pe) || pe.Type != "overloaded_error" || pe.StatusCode != 0 || pe.Message != "Overloaded" {
		t.Errorf("mid-stream error = %#v, want overloaded_error without status", err)
	}
	if strings.Join(deltas, "") != "Partial answer" || rec.Calls() != 1 {
		t.Errorf("deltas = %q, calls = %d", deltas, rec.Calls())
	}
}

func TestNoRetryAfterCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	rec := providertest.NewRecorder(t, providertest.Answer{Status: 529, Body: providertest.ReadFile(t, "error_529.json")})
	m := newModel(t, rec.URL(), func(o *anthropic.Options) { o.RetryBaseDelay, o.RetryMaxDelay = time.Hour, time.Hour })
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := m.Generate(ctx, canonical())
	if !errors.Is(err, context.Canceled) || rec.Calls() != 1 {
		t.Errorf("err = %v after %d calls, want context.Canceled after 1", err, rec.Calls())
	}
}

func TestNewAndRequestErrors(t *testing.T) {
	for _, u := range []string{"api.anthropic.com", "ftp://x", "https://"} {
		if _, err := anthropic.New(&anthropic.Options{BaseURL: u}); err == nil {
			t.Errorf("New with base URL %q: no error", u)
		}
	}
	m, err := anthropic.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(context.Background(), &model.Request{Messages: []model.Message{model.User("hi")}}); err == nil || !strings.Contains(err.Error(), "no model ID") {
		t.Errorf("no model ID: err = %v", err)
	}
	bad := &model.Request{Model: "x", Messages: []model.Message{{Role: "robot"}}}
	if _, _, err := modeltest.Collect(m.Stream(context.Background(), bad)); err == nil || !strings.Contains(err.Error(), "unknown role") {
		t.Errorf("unknown role: err = %v", err)
	}
	badTool := &model.Request{Model: "x", Tools: []model.ToolDef{{Name: "t", InputSchema: json.RawMessage(`"object"`)}}}
	if _, err := m.Generate(context.Background(), badTool); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Errorf("bad schema: err = %v", err)
	}
}

func TestKeyFromEnv(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "k-ant")
	if key, env := anthropic.KeyFromEnv(); key != "k-ant" || env != "ANTHROPIC_API_KEY" {
		t.Errorf("KeyFromEnv() = %q, %q", key, env)
	}
}
