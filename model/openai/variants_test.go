package openai_test

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
	"github.com/tollgate-dev/tollgate/model/modeltest"
	"github.com/tollgate-dev/tollgate/model/openai"
)

// argsOf returns the arguments of calls, in order.
func argsOf(calls []model.ToolCall) []string {
	var out []string
	for _, c := range calls {
		out = append(out, string(c.Arguments))
	}
	return out
}

// TestServerVariants runs the variants of OpenAI-compatible servers in ids,
// indices, chunk shapes and error shapes that TestServerStreams does not:
// choices numbered by content block (LiteLLM in front of the Messages API),
// tool-call indices from 1 (proxies that take the Messages API's block
// index), calls without ids (Text Generation Inference) or with numeric or
// repeated ids, the id and name repeated on every delta, null in every
// field that may be null, a text answer cut at the output limit, and errors
// as {"error": "text"} (Text Generation Inference) or as an "event: error"
// of another shape.
func TestServerVariants(t *testing.T) {
	usage := model.Usage{InputTokens: 120, OutputTokens: 31, TotalTokens: 151}
	ab := []string{`{"path":"a.txt"}`, `{"path":"b.txt"}`}
	for _, tc := range []struct {
		file string
		want *model.Response
		// ids is false when the server sent no usable ids: the calls
		// then get ids of their own, all different.
		ids     bool
		errText string
	}{
		{file: "litellm_choice_index.sse", ids: true, want: &model.Response{Message: readBoth("Reading both.", "toolu_01A", "toolu_01B"), Usage: usage, FinishReason: model.FinishToolCalls, Model: "claude-sonnet-4-5"}},
		{file: "proxy_index_from_1.sse", ids: true, want: &model.Response{Message: readBoth("Reading both.", "toolu_01P", "toolu_01Q"), Usage: usage, FinishReason: model.FinishToolCalls, Model: "claude-sonnet-4-5"}},
		{file: "missing_ids.sse", want: &model.Response{Message: readBoth("", "", ""), Usage: usage, FinishReason: model.FinishToolCalls, Model: "tgi"}},
		// Both calls complete in one chunk, with neither index nor id.
		{file: "one_chunk_no_index_no_id.sse", want: &model.Response{Message: readBoth("", "", ""), Usage: usage, FinishReason: model.FinishToolCalls, Model: "local-model"}},
		// Arguments as a JSON object, not its text (llama.cpp's server for a
		// while in 2026).
		{file: "llamacpp_object_arguments.sse", ids: true, want: &model.Response{Message: readBoth("", "ObjA1", "ObjB2"), Usage: usage, FinishReason: model.FinishToolCalls, Model: "gpt-3.5-turbo"}},
		{file: "numeric_ids.sse", want: &model.Response{Message: readBoth("", "", ""), Usage: usage, FinishReason: model.FinishToolCalls, Model: "local-model"}},
		// Two calls under one id stay two calls; the agent gives the
		// second an id of its own.
		{file: "repeated_ids.sse", ids: true, want: &model.Response{Message: readBoth("", "call_0", "call_0"), Usage: usage, FinishReason: model.FinishToolCalls, Model: "local-model"}},
		{file: "id_on_every_chunk.sse", ids: true, want: &model.Response{Message: readBoth("", "tool_0_read_file", "tool_1_read_file"), Usage: usage, FinishReason: model.FinishToolCalls, Model: "google/gemini-2.5-flash"}},
		{file: "null_fields.sse", ids: true, want: &model.Response{Message: readBoth("", "call_n0", "call_n1"), Usage: usage, FinishReason: model.FinishToolCalls, Model: "Qwen/Qwen2.5-7B-Instruct"}},
		{file: "length_text.sse", ids: true, want: &model.Response{Message: model.Assistant("The files s"), Usage: usage, FinishReason: model.FinishLength, Model: "gpt-4.1-mini"}},

		{file: "tgi_error.sse", errText: "openai: Request failed during generation: Server error: CUDA out of memory"},
		{file: "event_error.sse", errText: "openai: 504: upstream timed out"},
	} {
		t.Run(strings.TrimSuffix(tc.file, ".sse"), func(t *testing.T) {
			rec := providertest.NewRecorder(t, providertest.Answer{Body: providertest.ReadFile(t, "servers/"+tc.file)})
			deltas, final, err := modeltest.Collect(newModel(t, rec.URL(), nil).Stream(context.Background(), canonical()))
			if tc.errText != "" {
				var pe *model.ProviderError
				if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.errText) || final != nil {
					t.Fatalf("err = %v, final = %v; want only a *model.ProviderError containing %q", err, final, tc.errText)
				}
				if rec.Calls() != 1 {
					t.Errorf("%d requests, want 1 (no retry once the stream has started)", rec.Calls())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			opts := []cmp.Option{cmpopts.IgnoreFields(model.Response{}, "Raw")}
			if !tc.ids {
				opts = append(opts, cmpopts.IgnoreFields(model.ToolCall{}, "ID"))
				if len(final.Message.ToolCalls) != 2 || final.Message.ToolCalls[0].ID == "" || final.Message.ToolCalls[1].ID == "" ||
					final.Message.ToolCalls[0].ID == final.Message.ToolCalls[1].ID {
					t.Errorf("calls %+v, want two calls with ids of their own", final.Message.ToolCalls)
				}
			}
			if diff := cmp.Diff(tc.want, final, opts...); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if len(tc.want.Message.ToolCalls) > 0 {
				if diff := cmp.Diff(ab, argsOf(final.Message.ToolCalls)); diff != "" {
					t.Errorf("arguments (-want +got):\n%s", diff)
				}
			}
			if got := strings.Join(deltas, ""); got != tc.want.Message.Content {
				t.Errorf("deltas %q, want the text %q", got, tc.want.Message.Content)
			}
		})
	}
}

// TestGenerateCutAtOutputLimit: without streaming, as agent.Run asks, an
// answer cut off at the output limit has finish reason length; a call cut
// off mid-arguments keeps the model's text as a JSON string. And arguments
// sent as a JSON object are those arguments.
func TestGenerateCutAtOutputLimit(t *testing.T) {
	usage := model.Usage{InputTokens: 120, OutputTokens: 31, TotalTokens: 151}
	for _, tc := range []struct {
		file string
		want *model.Response
	}{
		{"length_cut.json", &model.Response{Message: model.Assistant("",
			model.ToolCall{ID: "call_a", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.txt"}`)},
			model.ToolCall{ID: "call_b", Name: "read_file", Arguments: json.RawMessage(`"{\"path\":\"b.t"`)},
		), Usage: usage, FinishReason: model.FinishLength, Model: "gpt-4.1-mini"}},
		{"length_text.json", &model.Response{Message: model.Assistant("The files s"), Usage: usage, FinishReason: model.FinishLength, Model: "gpt-4.1-mini"}},
		// Text Generation Inference: arguments as a JSON object.
		{"tgi_object_arguments.json", &model.Response{Message: readBoth("", "0", "1"), Usage: usage, FinishReason: model.FinishToolCalls, Model: "tgi"}},
	} {
		rec := providertest.NewRecorder(t, providertest.Answer{Body: providertest.ReadFile(t, "servers/"+tc.file)})
		got, err := newModel(t, rec.URL(), nil).Generate(context.Background(), canonical())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(model.Response{}, "Raw")); diff != "" {
			t.Errorf("%s: response (-want +got):\n%s", tc.file, diff)
		}
	}
}

// TestErrorBodies: what a server or the proxy in front of it sends with an
// error status, when it is not the API's error object: an HTML page (its
// title, on one line) and plain text, on Generate and Stream; the status
// decides whether it is retried.
func TestErrorBodies(t *testing.T) {
	for _, tc := range []struct {
		status    int
		header    http.Header
		body      string
		message   string
		retryable bool
	}{
		{502, http.Header{"Content-Type": {"text/html"}},
			"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n",
			"the server answered with an HTML page: 502 Bad Gateway", true},
		{503, http.Header{"Content-Type": {"text/plain"}},
			"upstream connect error or disconnect/reset before headers. reset reason: connection termination",
			"upstream connect error or disconnect/reset before headers. reset reason: connection termination", true},
		{404, http.Header{"Content-Type": {"text/plain; charset=utf-8"}}, "404 page not found\n", "404 page not found", false},
	} {
		rec := providertest.NewRecorder(t, providertest.Answer{Status: tc.status, Header: tc.header, Body: tc.body})
		m := newModel(t, rec.URL(), func(o *openai.Options) { o.MaxRetries = -1 })
		_, err := m.Generate(context.Background(), canonical())
		_, _, err2 := modeltest.Collect(m.Stream(context.Background(), canonical()))
		for _, err := range []error{err, err2} {
			var pe *model.ProviderError
			if !errors.As(err, &pe) || pe.StatusCode != tc.status || pe.Message != tc.message || pe.Retryable != tc.retryable {
				t.Errorf("%d: err = %#v, want status %d, message %q, retryable %v", tc.status, err, tc.status, tc.message, tc.retryable)
			}
		}
	}
}

// TestStreamAnsweredWithJSON: a server that does not stream answers a
// streaming request with one JSON body; a chat completion is the response
// (its text the one delta), an error object is the error with the server's
// message, not an empty stream retried.
func TestStreamAnsweredWithJSON(t *testing.T) {
	rec := providertest.NewRecorder(t, providertest.Answer{Body: providertest.ReadFile(t, "response_tool_calls.json")})
	m := newModel(t, rec.URL(), nil)
	want, err := m.Generate(context.Background(), canonical())
	if err != nil {
		t.Fatal(err)
	}
	deltas, final, err := modeltest.Collect(m.Stream(context.Background(), canonical()))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, final); diff != "" {
		t.Errorf("streamed response (-generated +streamed):\n%s", diff)
	}
	if got := strings.Join(deltas, ""); got != want.Message.Content {
		t.Errorf("deltas %q, want %q", got, want.Message.Content)
	}

	rec = providertest.NewRecorder(t, providertest.Answer{Body: `{"error":{"message":"model 'qwen3:8b' not found","type":"not_found_error","code":404}}`})
	_, final, err = modeltest.Collect(newModel(t, rec.URL(), nil).Stream(context.Background(), canonical()))
	var pe *model.ProviderError
	if !errors.As(err, &pe) || pe.Message != "model 'qwen3:8b' not found" || final != nil {
		t.Errorf("err = %v, final = %v; want the server's error", err, final)
	}
	if rec.Calls() != 1 {
		t.Errorf("%d requests, want 1: the error is not transient", rec.Calls())
	}
}

// TestSplitCharacters: tool-call arguments cut mid-character between two
// chunks, as raw UTF-8 bytes (a server that cuts bytes, such as llama.cpp's
// C++) and between the halves of an escaped surrogate pair (a server that
// cuts UTF-16, such as one written in JavaScript), arrive whole; encoding/json
// alone makes each half U+FFFD.
func TestSplitCharacters(t *testing.T) {
	rec := providertest.NewRecorder(t, providertest.Answer{Body: providertest.ReadFile(t, "servers/split_characters.sse")})
	_, final, err := modeltest.Collect(newModel(t, rec.URL(), nil).Stream(context.Background(), canonical()))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"path":"été/日本.txt"}`, `{"path":"😀.txt"}`}
	if diff := cmp.Diff(want, argsOf(final.Message.ToolCalls)); diff != "" {
		t.Errorf("arguments (-want +got):\n%s", diff)
	}
	var raw struct {
		Choices []struct {
			Message struct {
				ToolCalls []struct {
					Function struct{ Arguments string } `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(final.Raw, &raw); err != nil || len(raw.Choices) != 1 || len(raw.Choices[0].Message.ToolCalls) != 2 ||
		raw.Choices[0].Message.ToolCalls[1].Function.Arguments != want[1] {
		t.Errorf("Raw = %s (%v), want the same arguments", final.Raw, err)
	}
}

// TestEventsUnderJSONContentType: a server that labels its event stream
// application/json still streams.
func TestEventsUnderJSONContentType(t *testing.T) {
	rec := providertest.NewRecorder(t, providertest.Answer{Header: http.Header{"Content-Type": {"application/json"}}, Body: providertest.ReadFile(t, "servers/vllm_tool_calls.sse")})
	_, final, err := modeltest.Collect(newModel(t, rec.URL(), nil).Stream(context.Background(), canonical()))
	if err != nil || final == nil || len(final.Message.ToolCalls) != 2 {
		t.Fatalf("final = %+v, err = %v; want the two calls", final, err)
	}
}

// TestSplitText: text deltas cut mid-character between two chunks, as raw
// UTF-8 bytes and between the halves of an escaped surrogate pair, give the
// whole text, in the response, in its Raw, and in the deltas handed on,
// each of which is whole characters (a cut one is held back until the next
// chunk).
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
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(final.Raw, &raw); err != nil || len(raw.Choices) != 1 || raw.Choices[0].Message.Content != want {
		t.Errorf("Raw = %s (%v), want the same text", final.Raw, err)
	}
}
