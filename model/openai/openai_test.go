package openai_test

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
	"github.com/tollgate-dev/tollgate/model/modeltest"
	"github.com/tollgate-dev/tollgate/model/openai"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

const testKey = "sk-test-KEY-0123456789abcdef"

// newModel returns a model for a local server, with fast retries.
func newModel(t *testing.T, baseURL string, mod func(*openai.Options)) *openai.Model {
	t.Helper()
	o := &openai.Options{
		BaseURL:        baseURL + "/v1",
		APIKey:         testKey,
		MaxRetries:     3,
		RetryBaseDelay: time.Millisecond,
		RetryMaxDelay:  5 * time.Millisecond,
	}
	if mod != nil {
		mod(o)
	}
	m, err := openai.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestConformance(t *testing.T) {
	modeltest.Run(t, func(t *testing.T, turns []modeltest.Turn) modeltest.Backend {
		f := newFake(t, turns)
		return modeltest.Backend{Model: newModel(t, f.srv.URL, nil), Requests: f.requests}
	})
}

func TestRequestGolden(t *testing.T) {
	rec := providertest.NewRecorder(t,
		providertest.Answer{Body: providertest.ReadFile(t, "response_tool_calls.json")},
		providertest.Answer{Body: providertest.ReadFile(t, "response_tool_calls.json")},
		providertest.Answer{Body: providertest.ReadFile(t, "stream_tool_calls.sse")},
	)
	m := newModel(t, rec.URL(), nil)
	if _, err := m.Generate(context.Background(), canonical()); err != nil {
		t.Fatal(err)
	}
	req := canonical()
	req.Model, req.MaxTokens, req.Temperature, req.Tools = "", 0, nil, nil
	m2 := newModel(t, rec.URL(), func(o *openai.Options) { o.Model = "default-model" })
	if _, err := m2.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if _, _, err := modeltest.Collect(m.Stream(context.Background(), canonical())); err != nil {
		t.Fatal(err)
	}
	providertest.Golden(t, "request.golden.json", rec.Body(0), *update)
	providertest.Golden(t, "request_minimal.golden.json", rec.Body(1), *update)
	providertest.Golden(t, "request_stream.golden.json", rec.Body(2), *update)
}

func TestAuthAndHeaders(t *testing.T) {
	rec := providertest.NewRecorder(t, providertest.Answer{Body: providertest.ReadFile(t, "response_tool_calls.json")})
	m := newModel(t, rec.URL(), func(o *openai.Options) {
		o.Headers = http.Header{"Http-Referer": {"https://tollgate.example"}, "X-Tenant": {"a", "b"}}
	})
	if _, err := m.Generate(context.Background(), canonical()); err != nil {
		t.Fatal(err)
	}
	h := rec.Header(0)
	if got := h.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization = %q, want Bearer and the key", got)
	}
	if got := h.Get("Http-Referer"); got != "https://tollgate.example" {
		t.Errorf("Http-Referer = %q", got)
	}
	if got := h.Values("X-Tenant"); !cmp.Equal(got, []string{"a", "b"}) {
		t.Errorf("X-Tenant = %q, want [a b]", got)
	}

	// No key, no Authorization header (a local server), even when the
	// environment has one: the package does not read it.
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/nowhere")
	m = newModel(t, rec.URL(), func(o *openai.Options) { o.APIKey = "" })
	if _, err := m.Generate(context.Background(), canonical()); err != nil {
		t.Fatal(err)
	}
	if got := rec.Header(1).Get("Authorization"); got != "" {
		t.Errorf("Authorization without a key = %q, want none", got)
	}
}

func TestResponseFromTestdata(t *testing.T) {
	rec := providertest.NewRecorder(t, providertest.Answer{Body: providertest.ReadFile(t, "response_tool_calls.json")})
	resp, err := newModel(t, rec.URL(), nil).Generate(context.Background(), canonical())
	if err != nil {
		t.Fatal(err)
	}
	want := &model.Response{
		Message: model.Assistant("",
			model.ToolCall{ID: "call_Jd8hq2kT0", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
			model.ToolCall{ID: "call_Mx3Vb7LpQ", Name: "get_time", Arguments: json.RawMessage(`{"city":"Paris","format":"24h"}`)},
		),
		Usage:        model.Usage{InputTokens: 82, OutputTokens: 51, TotalTokens: 133},
		FinishReason: model.FinishToolCalls,
		Model:        "gpt-4.1-mini-2025-04-14",
	}
	if diff := cmp.Diff(want, resp, cmpopts.IgnoreFields(model.Response{}, "Raw")); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	if !json.Valid(resp.Raw) || !bytes.Contains(resp.Raw, []byte("fp_6f2eabb9a5")) {
		t.Errorf("Raw = %.80s, want the provider payload", resp.Raw)
	}
}

func TestStreamRecorded(t *testing.T) {
	rec := providertest.NewRecorder(t, providertest.Answer{Body: providertest.ReadFile(t, "stream_tool_calls.sse")})
	deltas, final, err := modeltest.Collect(newModel(t, rec.URL(), nil).Stream(context.Background(), canonical()))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Let me", " check."}, deltas); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
	want := &model.Response{
		Message: model.Assistant("Let me check.",
			model.ToolCall{ID: "call_Jd8hq2kT0", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
			model.ToolCall{ID: "call_Mx3Vb7LpQ", Name: "get_time", Arguments: json.RawMessage(`{"city":"Paris","format":"24h"}`)},
		),
		Usage:        model.Usage{InputTokens: 82, OutputTokens: 51, TotalTokens: 133},
		FinishReason: model.FinishToolCalls,
		Model:        "gpt-4.1-mini-2025-04-14",
	}
	if diff := cmp.Diff(want, final, cmpopts.IgnoreFields(model.Response{}, "Raw")); diff != "" {
		t.Errorf("final response (-want +got):\n%s", diff)
	}
}

func TestRetryOn429WithRetryAfter(t *testing.T) {
	rec := providertest.NewRecorder(t,
		providertest.Answer{Status: 429, Header: http.Header{"Retry-After": {"1"}}, Body: providertest.ReadFile(t, "error_429.json")},
		providertest.Answer{Status: 503, Body: `{"error":{"message":"overloaded","type":"server_error"}}`},
		providertest.Answer{Body: providertest.ReadFile(t, "response_tool_calls.json")},
	)
	// RetryMaxDelay 5ms caps the server's one second.
	if _, err := newModel(t, rec.URL(), nil).Generate(context.Background(), canonical()); err != nil {
		t.Fatal(err)
	}
	if rec.Calls() != 3 {
		t.Errorf("%d calls, want 3 (429, 503, success)", rec.Calls())
	}
}

func TestRetryExhausted(t *testing.T) {
	for _, tc := range []struct {
		retries, calls int
	}{{-1, 1}, {1, 2}, {3, 4}} {
		rec := providertest.NewRecorder(t, providertest.Answer{Status: 429, Header: http.Header{"Retry-After": {"2"}}, Body: providertest.ReadFile(t, "error_429.json")})
		_, err := newModel(t, rec.URL(), func(o *openai.Options) { o.MaxRetries = tc.retries }).Generate(context.Background(), canonical())
		var pe *model.ProviderError
		if !errors.As(err, &pe) {
			t.Fatalf("err = %v, want *model.ProviderError", err)
		}
		if rec.Calls() != tc.calls || pe.Attempts != tc.calls {
			t.Errorf("MaxRetries %d: %d calls, Attempts %d; want %d", tc.retries, rec.Calls(), pe.Attempts, tc.calls)
		}
		want := model.ProviderError{Provider: "openai", StatusCode: 429, Type: "rate_limit_exceeded", Retryable: true, RetryAfter: 2 * time.Second, Attempts: tc.calls}
		if diff := cmp.Diff(want, *pe, cmpopts.IgnoreFields(model.ProviderError{}, "Message")); diff != "" {
			t.Errorf("error (-want +got):\n%s", diff)
		}
		if !strings.HasPrefix(pe.Message, "Rate limit reached for gpt-4.1-mini") {
			t.Errorf("Message = %q", pe.Message)
		}
	}
}

func TestClientErrorsNotRetriedAndKeyNeverEchoed(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rec := providertest.NewRecorder(t, providertest.Answer{Status: 401, Body: providertest.ReadFile(t, "error_401.json")})
	m := newModel(t, rec.URL(), func(o *openai.Options) { o.Logger = logger })
	_, err := m.Generate(context.Background(), canonical())
	var pe *model.ProviderError
	if !errors.As(err, &pe) || pe.StatusCode != 401 || pe.Retryable || pe.Type != "invalid_api_key" {
		t.Fatalf("err = %v, want a non-retryable 401 invalid_api_key", err)
	}
	if rec.Calls() != 1 {
		t.Errorf("%d calls, want 1", rec.Calls())
	}
	// The stream path, a network error and a retried 5xx echoing the key too.
	rec2 := providertest.NewRecorder(t,
		providertest.Answer{Drop: true},
		providertest.Answer{Status: 500, Body: `{"error":{"message":"bad key ` + testKey + `","type":"server_error"}}`},
		providertest.Answer{Status: 401, Body: providertest.ReadFile(t, "error_401.json")},
	)
	m2 := newModel(t, rec2.URL()+"/"+testKey, func(o *openai.Options) { o.Logger = logger })
	_, _, err2 := modeltest.Collect(m2.Stream(context.Background(), canonical()))
	if err2 == nil {
		t.Fatal("stream: no error")
	}
	if rec2.Calls() != 3 {
		t.Errorf("stream: %d calls, want 3", rec2.Calls())
	}
	if !strings.Contains(logs.String(), "retrying") {
		t.Errorf("retries not logged: %s", logs.String())
	}
	for _, s := range []string{err.Error(), fmt.Sprint(err), err2.Error(), logs.String()} {
		if strings.Contains(s, testKey) {
			t.Errorf("the API key appears in %q", s)
		}
	}
	if !strings.Contains(err.Error(), "Incorrect API key provided: "+retry.Redacted) {
		t.Errorf("err = %q, want the redacted provider message", err)
	}
}

func TestNetworkErrorRetried(t *testing.T) {
	rec := providertest.NewRecorder(t, providertest.Answer{Drop: true}, providertest.Answer{Drop: true}, providertest.Answer{Body: providertest.ReadFile(t, "response_tool_calls.json")})
	if _, err := newModel(t, rec.URL(), nil).Generate(context.Background(), canonical()); err != nil {
		t.Fatal(err)
	}
	if rec.Calls() != 3 {
		t.Errorf("%d calls, want 3", rec.Calls())
	}

	// Nothing listening: connection refused, retried, then typed.
	m := newModel(t, "http://127.0.0.1:1", func(o *openai.Options) { o.MaxRetries = 1 })
	_, err := m.Generate(context.Background(), canonical())
	var pe *model.ProviderError
	if !errors.As(err, &pe) || !pe.Retryable || pe.StatusCode != 0 || pe.Attempts != 2 {
		t.Fatalf("err = %#v, want a retryable network ProviderError after 2 attempts", err)
	}
}

func TestStreamRetriesOnlyBeforeFirstByte(t *testing.T) {
	rec := providertest.NewRecorder(t,
		providertest.Answer{Status: 503, Body: `{"error":{"message":"overloaded","type":"server_error"}}`},
		providertest.Answer{Body: providertest.ReadFile(t, "stream_tool_calls.sse")},
	)
	_, final, err := modeltest.Collect(newModel(t, rec.URL(), nil).Stream(context.Background(), canonical()))
	if err != nil || final == nil || len(final.Message.ToolCalls) != 2 {
		t.Fatalf("final = %+v, err = %v", final, err)
	}
	if rec.Calls() != 2 {
		t.Errorf("%d calls, want 2", rec.Calls())
	}

	// Cut after some chunks: the error ends the stream, no retry.
	sse := providertest.ReadFile(t, "stream_tool_calls.sse")
	cut := strings.Index(sse, `"id":"call_Mx3Vb7LpQ"`)
	rec = providertest.NewRecorder(t, providertest.Answer{Body: sse, Cut: cut})
	deltas, final, err := modeltest.Collect(newModel(t, rec.URL(), nil).Stream(context.Background(), canonical()))
	if err == nil || final != nil {
		t.Fatalf("cut stream: final = %+v, err = %v; want an error", final, err)
	}
	if strings.Join(deltas, "") != "Let me check." {
		t.Errorf("deltas before the cut = %q", deltas)
	}
	if rec.Calls() != 1 {
		t.Errorf("cut stream: %d calls, want 1", rec.Calls())
	}

	// An error event in the middle of the stream.
	rec = providertest.NewRecorder(t, providertest.Answer{Body: providertest.ReadFile(t, "stream_error_midway.sse")})
	deltas, _, err = modeltest.Collect(newModel(t, rec.URL(), nil).Stream(context.Background(), canonical()))
	var pe *model.ProviderError
	if !errors.As(err, &pe) || !strings.Contains(pe.Error(), "The server had an error") {
		t.Errorf("mid-stream error = %v, want a ProviderError with the server's message", err)
	}
	if strings.Join(deltas, "") != "Partial answer" || rec.Calls() != 1 {
		t.Errorf("deltas = %q, calls = %d", deltas, rec.Calls())
	}
}

func TestNoRetryAfterCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	rec := providertest.NewRecorder(t, providertest.Answer{Status: 503, Body: `{"error":{"message":"overloaded"}}`})
	m := newModel(t, rec.URL(), func(o *openai.Options) { o.RetryBaseDelay, o.RetryMaxDelay = time.Hour, time.Hour })
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := m.Generate(ctx, canonical())
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if rec.Calls() != 1 {
		t.Errorf("%d calls, want 1", rec.Calls())
	}
}

func TestNewAndRequestErrors(t *testing.T) {
	for _, u := range []string{"localhost:8080", "ftp://x", "http://"} {
		if _, err := openai.New(&openai.Options{BaseURL: u}); err == nil {
			t.Errorf("New with base URL %q: no error", u)
		}
	}
	m, err := openai.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(context.Background(), &model.Request{Messages: []model.Message{model.User("hi")}}); err == nil || !strings.Contains(err.Error(), "no model ID") {
		t.Errorf("no model ID: err = %v", err)
	}
	bad := &model.Request{Model: "x", Messages: []model.Message{{Role: "robot", Content: "hi"}}}
	if _, _, err := modeltest.Collect(m.Stream(context.Background(), bad)); err == nil || !strings.Contains(err.Error(), "unknown role") {
		t.Errorf("unknown role: err = %v", err)
	}
	badTool := &model.Request{Model: "x", Tools: []model.ToolDef{{Name: "t", InputSchema: json.RawMessage(`[1]`)}}}
	if _, err := m.Generate(context.Background(), badTool); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Errorf("bad schema: err = %v", err)
	}
}

func TestInvalidArgumentsPassedAsString(t *testing.T) {
	body := strings.Replace(providertest.ReadFile(t, "response_tool_calls.json"), `"{\"city\":\"Paris\"}"`, `"{\"city\": Paris"`, 1)
	rec := providertest.NewRecorder(t, providertest.Answer{Body: body})
	resp, err := newModel(t, rec.URL(), nil).Generate(context.Background(), canonical())
	if err != nil {
		t.Fatal(err)
	}
	if got := string(resp.Message.ToolCalls[0].Arguments); got != `"{\"city\": Paris"` {
		t.Errorf("arguments = %s, want the text as a JSON string", got)
	}
}

func TestKeyFromEnv(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "k-openai")
	t.Setenv("OPENROUTER_API_KEY", "k-router")
	for _, tc := range []struct{ url, key, env string }{
		{"", "k-openai", "OPENAI_API_KEY"},
		{"https://api.openai.com/v1", "k-openai", "OPENAI_API_KEY"},
		{"https://openrouter.ai/api/v1", "k-router", "OPENROUTER_API_KEY"},
		{"https://eu.OpenRouter.ai/api/v1", "k-router", "OPENROUTER_API_KEY"},
		{"https://notopenrouter.ai/v1", "k-openai", "OPENAI_API_KEY"},
		{"http://localhost:11434/v1", "k-openai", "OPENAI_API_KEY"},
	} {
		key, env := openai.KeyFromEnv(tc.url)
		if key != tc.key || env != tc.env {
			t.Errorf("KeyFromEnv(%q) = %q, %q; want %q, %q", tc.url, key, env, tc.key, tc.env)
		}
	}
}
