package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tollgate-dev/tollgate/internal/providertest"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/model/anthropic"
	"github.com/tollgate-dev/tollgate/model/modeltest"
)

// TestServerVariants runs the Anthropic-compatible stream shapes that
// TestServerStreams does not: a tool's whole input in content_block_start
// and again in input_json_delta pieces, the input in content_block_start
// followed by empty partial_json deltas, events without an event: line,
// Amazon Bedrock's invocation metrics on message_stop as a proxy passes
// them on (with a model id versioned by "@", as Vertex AI names models), and
// a text answer cut at max_tokens.
func TestServerVariants(t *testing.T) {
	usage := model.Usage{InputTokens: 120, OutputTokens: 31, TotalTokens: 151}
	both := func(text, a, b string) model.Message {
		return model.Assistant(text, call(a, `{"path":"a.txt"}`), call(b, `{"path":"b.txt"}`))
	}
	for _, tc := range []struct {
		file string
		want *model.Response
	}{
		{"input_both.sse", &model.Response{Message: both("", "call_b1", "call_b2"), Usage: usage, FinishReason: model.FinishToolCalls, Model: "compat-model"}},
		{"input_start_empty_deltas.sse", &model.Response{Message: both("", "call_e1", "call_e2"), Usage: usage, FinishReason: model.FinishToolCalls, Model: "compat-model"}},
		{"no_event_lines.sse", &model.Response{Message: both("Reading both.", "toolu_n1", "toolu_n2"), Usage: usage, FinishReason: model.FinishToolCalls, Model: "claude-sonnet-4-5"}},
		{"bedrock_invocation_metrics.sse", &model.Response{Message: both("", "toolu_bdrk_1", "toolu_bdrk_2"), Usage: usage, FinishReason: model.FinishToolCalls, Model: "claude-sonnet-4-5@20250929"}},
		{"max_tokens_text.sse", &model.Response{Message: model.Assistant("The files s"), Usage: usage, FinishReason: model.FinishLength, Model: "claude-sonnet-4-5"}},
	} {
		t.Run(strings.TrimSuffix(tc.file, ".sse"), func(t *testing.T) {
			rec := providertest.NewRecorder(t, providertest.Answer{Body: providertest.ReadFile(t, "servers/"+tc.file)})
			deltas, final, err := modeltest.Collect(newModel(t, rec.URL(), nil).Stream(context.Background(), canonical()))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, final, cmpopts.IgnoreFields(model.Response{}, "Raw")); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if got := strings.Join(deltas, ""); got != tc.want.Message.Content {
				t.Errorf("deltas %q, want %q", got, tc.want.Message.Content)
			}
		})
	}
}

// TestGenerateCutAtMaxTokens: without streaming, as agent.Run asks, an
// answer cut at max_tokens has finish reason length, the cut tool_use with
// the input the API could parse.
func TestGenerateCutAtMaxTokens(t *testing.T) {
	usage := model.Usage{InputTokens: 120, OutputTokens: 31, TotalTokens: 151}
	for _, tc := range []struct {
		file string
		want *model.Response
	}{
		{"max_tokens_cut.json", &model.Response{Message: model.Assistant("", call("toolu_a", `{"path":"a.txt"}`), call("toolu_b", `{}`)), Usage: usage, FinishReason: model.FinishLength, Model: "claude-sonnet-4-5"}},
		{"max_tokens_text.json", &model.Response{Message: model.Assistant("The files s"), Usage: usage, FinishReason: model.FinishLength, Model: "claude-sonnet-4-5"}},
	} {
		rec := providertest.NewRecorder(t, providertest.Answer{Body: providertest.ReadFile(t, "servers/"+tc.file)})
		got, err := newModel(t, rec.URL(), nil).Generate(context.Background(), canonical())
		if err != nil {
			t.Fatal(err)
		}
		// The fixtures are indented: compare the arguments as JSON.
		for i := range got.Message.ToolCalls {
			var v any
			if err := json.Unmarshal(got.Message.ToolCalls[i].Arguments, &v); err != nil {
				t.Fatal(err)
			}
			got.Message.ToolCalls[i].Arguments, _ = json.Marshal(v)
		}
		if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(model.Response{}, "Raw")); diff != "" {
			t.Errorf("%s: response (-want +got):\n%s", tc.file, diff)
		}
	}
}

// TestErrorBodies: what a gateway in front of the Messages API sends with
// an error status: an HTML page (its title, on one line), plain text, and
// an OpenAI-shaped {"error":{"message","type"}} (LiteLLM's /v1/messages),
// on Generate and Stream; the status decides whether it is retried.
func TestErrorBodies(t *testing.T) {
	for _, tc := range []struct {
		status       int
		header       http.Header
		body         string
		typ, message string
		retryable    bool
	}{
		{502, http.Header{"Content-Type": {"text/html"}},
			"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n</body>\r\n</html>\r\n",
			"", "the server answered with an HTML page: 502 Bad Gateway", true},
		{503, http.Header{"Content-Type": {"text/plain"}}, "upstream connect error or disconnect/reset before headers. reset reason: overflow\n",
			"", "upstream connect error or disconnect/reset before headers. reset reason: overflow", true},
		{400, nil, `{"error":{"message":"litellm.BadRequestError: AnthropicException - prompt is too long","type":"invalid_request_error","param":null,"code":"400"}}`,
			"invalid_request_error", "litellm.BadRequestError: AnthropicException - prompt is too long", false},
	} {
		rec := providertest.NewRecorder(t, providertest.Answer{Status: tc.status, Header: tc.header, Body: tc.body})
		m := newModel(t, rec.URL(), func(o *anthropic.Options) { o.MaxRetries = -1 })
		_, err := m.Generate(context.Background(), canonical())
		_, _, err2 := modeltest.Collect(m.Stream(context.Background(), canonical()))
		for _, err := range []error{err, err2} {
			var pe *model.ProviderError
			if !errors.As(err, &pe) || pe.StatusCode != tc.status || pe.Type != tc.typ || pe.Message != tc.message || pe.Retryable != tc.retryable {
				t.Errorf("%d: err = %#v, want status %d, type %q, message %q, retryable %v", tc.status, err, tc.status, tc.typ, tc.message, tc.retryable)
			}
		}
	}
}

// TestSplitCharacters: a tool's input cut mid-character between two
// input_json_delta pieces, as raw UTF-8 bytes and between the halves of an
// escaped surrogate pair (a proxy that cuts UTF-16 strings), arrives whole;
// encoding/json alone makes each half U+FFFD.
func TestSplitCharacters(t *testing.T) {
	rec := providertest.NewRecorder(t, providertest.Answer{Body: providertest.ReadFile(t, "servers/split_characters.sse")})
	_, final, err := modeltest.Collect(newModel(t, rec.URL(), nil).Stream(context.Background(), canonical()))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range final.Message.ToolCalls {
		got = append(got, string(c.Arguments))
	}
	if diff := cmp.Diff([]string{`{"path":"été/日本.txt"}`, `{"path":"😀.txt"}`}, got); diff != "" {
		t.Errorf("arguments (-want +got):\n%s", diff)
	}
}

// TestGenerateErrorBody: an error object in a 200 answer (a gateway that
// answers 200 whatever happened) is the error, with the server's message,
// not an empty message; a transient kind is retryable.
func TestGenerateErrorBody(t *testing.T) {
	rec := providertest.NewRecorder(t, providertest.Answer{Body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`})
	_, err := newModel(t, rec.URL(), func(o *anthropic.Options) { o.MaxRetries = -1 }).Generate(context.Background(), canonical())
	var pe *model.ProviderError
	if !errors.As(err, &pe) || pe.Message != "Overloaded" || pe.Type != "overloaded_error" || !pe.Retryable {
		t.Errorf("err = %#v, want the server's retryable error", err)
	}
}

// TestStreamJSONAnswer: a server that answers a streaming request with one
// JSON body (it does not stream, or a gateway failed) gives that answer,
// its text as the one delta, or its error object as the error with the
// server's message; neither is retried as an empty stream.
func TestStreamJSONAnswer(t *testing.T) {
	rec := providertest.NewRecorder(t, providertest.Answer{Body: providertest.ReadFile(t, "servers/stream_json_message.json")})
	deltas, final, err := modeltest.Collect(newModel(t, rec.URL(), nil).Stream(context.Background(), canonical()))
	if err != nil {
		t.Fatal(err)
	}
	want := &model.Response{Message: model.Assistant("Reading both.", call("toolu_j1", `{"path":"a.txt"}`), call("toolu_j2", `{"path":"b.txt"}`)),
		Usage: model.Usage{InputTokens: 120, OutputTokens: 31, TotalTokens: 151}, FinishReason: model.FinishToolCalls, Model: "claude-sonnet-4-5"}
	if diff := cmp.Diff(want, final, cmpopts.IgnoreFields(model.Response{}, "Raw")); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	if got := strings.Join(deltas, ""); got != "Reading both." {
		t.Errorf("deltas %q, want the text", got)
	}

	rec = providertest.NewRecorder(t, providertest.Answer{Body: providertest.ReadFile(t, "servers/stream_json_error.json")})
	_, _, err = modeltest.Collect(newModel(t, rec.URL(), func(o *anthropic.Options) { o.MaxRetries = -1 }).Stream(context.Background(), canonical()))
	var pe *model.ProviderError
	if !errors.As(err, &pe) || pe.Message != "Overloaded" || pe.Type != "overloaded_error" || !pe.Retryable {
		t.Errorf("err = %#v, want the server's retryable error", err)
	}
	if n := rec.Calls(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// TestEventsUnderJSONContentType: a server that labels its event stream
// application/json still streams.
func TestEventsUnderJSONContentType(t *testing.T) {
	rec := providertest.NewRecorder(t, providertest.Answer{Header: http.Header{"Content-Type": {"application/json"}}, Body: providertest.ReadFile(t, "servers/no_event_lines.sse")})
	_, final, err := modeltest.Collect(newModel(t, rec.URL(), nil).Stream(context.Background(), canonical()))
	if err != nil || final == nil || len(final.Message.ToolCalls) != 2 {
		t.Fatalf("final = %+v, err = %v; want the two calls", final, err)
	}
}

// TestEventErrorText: an "event: error" whose data is not JSON is the
// error, with the server's text on one line (its tab a space).
func TestEventErrorText(t *testing.T) {
	rec := providertest.NewRecorder(t, providertest.Answer{Body: providertest.ReadFile(t, "servers/event_error_text.sse")})
	_, _, err := modeltest.Collect(newModel(t, rec.URL(), nil).Stream(context.Background(), canonical()))
	var pe *model.ProviderError
	if !errors.As(err, &pe) || pe.Message != "upstream request timeout (gateway)" {
		t.Errorf("err = %#v, want the server's text as the message", err)
	}
}

// TestSplitText: text deltas cut mid-character, as raw UTF-8 bytes and
// between the halves of an escaped surrogate pair, give the whole text, in
// the response, in its Raw, and in the deltas handed on, each of which
// is whole characters (a cut one is held back until the next delta).
func TestSplitText(t *testing.T) {
	const want = "Café 日😀 ok"
	rec := providertest.NewRecorder(t, providertest.Answer{Body: providertest.ReadFile(t, "servers/split_text.sse")})
	deltas, final, err := modeltest.Collect(newModel(t, rec.URL(), nil).Stream(context.Background(), canonical()))
	if err != nil {
		t.Fatal(err)
	}
	if final.Message.Content != want {
		t.Errorf("text %q, want %q", final.Message.Content, want)
	}
	if got := strings.Join(deltas, ""); got != want {
		t.Errorf("deltas %q join into %q, want %q", deltas, got, want)
	}
	for _, d := range deltas {
		if !utf8.ValidString(d) || strings.ContainsRune(d, utf8.RuneError) {
			t.Errorf("delta %q is not whole characters", d)
		}
	}
	var raw struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal(final.Raw, &raw); err != nil || len(raw.Content) != 1 || raw.Content[0].Text != want {
		t.Errorf("Raw = %s (%v), want the same text", final.Raw, err)
	}
}
