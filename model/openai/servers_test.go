package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tollgate-dev/tollgate/internal/providertest"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/model/modeltest"
	"github.com/tollgate-dev/tollgate/model/openai"
)

// readBoth is the answer of the server fixtures that read a.txt and b.txt in
// one turn, each call with its own arguments.
func readBoth(text string, ids ...string) model.Message {
	return model.Assistant(text,
		model.ToolCall{ID: ids[0], Name: "read_file", Arguments: json.RawMessage(`{"path":"a.txt"}`)},
		model.ToolCall{ID: ids[1], Name: "read_file", Arguments: json.RawMessage(`{"path":"b.txt"}`)},
	)
}

// TestServerStreams runs the stream of each OpenAI-compatible server shape
// under testdata/servers through Stream: the variants in ids, indices, chunk
// shapes, usage chunks and error shapes of vLLM, llama.cpp, Ollama, LiteLLM,
// OpenRouter and Azure OpenAI, and the malformed streams every server can
// produce.
func TestServerStreams(t *testing.T) {
	usage := model.Usage{InputTokens: 120, OutputTokens: 31, TotalTokens: 151}
	for _, tc := range []struct {
		file string
		want *model.Response
		// errText, when set, is what the error must contain; no response
		// may come with it.
		errText string
	}{
		// Two calls on one index, told apart by their ids.
		{file: "two_calls_one_index.sse", want: &model.Response{Message: readBoth("", "call_a", "call_b"), FinishReason: model.FinishToolCalls, Model: "qwen3:8b"}},
		// Ollama: both complete calls in one chunk, no index, finish_reason stop.
		{file: "ollama_tool_calls.sse", want: &model.Response{Message: readBoth("", "call_xm2k1c4p", "call_9v0qz7tn"), Usage: usage, FinishReason: model.FinishToolCalls, Model: "llama3.1:8b"}},
		{file: "vllm_tool_calls.sse", want: &model.Response{Message: model.Assistant("",
			model.ToolCall{ID: "chatcmpl-tool-4b1e2f", Name: "read_file", Arguments: json.RawMessage(`{"path": "a.txt"}`)},
			model.ToolCall{ID: "chatcmpl-tool-77ac90", Name: "read_file", Arguments: json.RawMessage(`{"path": "b.txt"}`)},
		), Usage: usage, FinishReason: model.FinishToolCalls, Model: "Qwen/Qwen2.5-7B-Instruct"}},
		// llama.cpp: usage and timings on the finish chunk.
		{file: "llamacpp_tool_calls.sse", want: &model.Response{Message: readBoth("", "Kx8uP2mWq1", "Zt4rN9bVc0"), Usage: usage, FinishReason: model.FinishToolCalls, Model: "gpt-3.5-turbo"}},
		// LiteLLM: "id": null and "name": null on continuation chunks, usage
		// on a chunk with an empty choice.
		{file: "litellm_tool_calls.sse", want: &model.Response{Message: model.Assistant("Reading both.",
			model.ToolCall{ID: "toolu_01LL", Name: "read_file", Arguments: json.RawMessage(`{"path": "a.txt"}`)},
			model.ToolCall{ID: "toolu_01MM", Name: "read_file", Arguments: json.RawMessage(`{"path": "b.txt"}`)},
		), Usage: usage, FinishReason: model.FinishToolCalls, Model: "claude-sonnet-4-5"}},
		// OpenRouter: SSE comments, usage on the finish chunk.
		{file: "openrouter_tool_calls.sse", want: &model.Response{Message: model.Assistant("Reading both.",
			model.ToolCall{ID: "toolu_01A", Name: "read_file", Arguments: json.RawMessage(`{"path": "a.txt"}`)},
			model.ToolCall{ID: "toolu_01B", Name: "read_file", Arguments: json.RawMessage(`{"path": "b.txt"}`)},
		), Usage: usage, FinishReason: model.FinishToolCalls, Model: "anthropic/claude-sonnet-4.5"}},
		// Azure: a first chunk without choices (prompt filter results).
		{file: "azure_tool_calls.sse", want: &model.Response{Message: readBoth("", "call_AzA", "call_AzB"), Usage: usage, FinishReason: model.FinishToolCalls, Model: "gpt-4o-2024-11-20"}},
		// Cut off at the output limit: the complete call, and the cut one
		// with its text kept as a JSON string.
		{file: "length_cut.sse", want: &model.Response{Message: model.Assistant("",
			model.ToolCall{ID: "call_a", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.txt"}`)},
			model.ToolCall{ID: "call_b", Name: "read_file", Arguments: json.RawMessage(`"{\"path\":\"b.t"`)},
		), Usage: usage, FinishReason: model.FinishLength, Model: "gpt-4.1-mini"}},

		// Errors inside a 200 stream, in each server's shape.
		{file: "vllm_error.sse", errText: "openai: InternalServerError: CUDA out of memory"},
		{file: "llamacpp_error.sse", errText: "openai: server_error: CUDA out of memory"},
		{file: "litellm_error.sse", errText: "CUDA out of memory"},
		{file: "openrouter_error.sse", errText: "openai: 502: Provider disconnected"},
		{file: "finish_error.sse", errText: `finish_reason "error"`},
		// A stream that just stops, and one that ends with [DONE] but no
		// finish_reason: an error, not a turn whose calls run.
		{file: "stops_without_finish.sse", errText: "the stream ended before a finish_reason"},
		{file: "done_without_finish.sse", errText: "the stream ended before a finish_reason"},
	} {
		t.Run(strings.TrimSuffix(tc.file, ".sse"), func(t *testing.T) {
			rec := providertest.NewRecorder(t, providertest.Answer{Body: providertest.ReadFile(t, "servers/"+tc.file)})
			m := newModel(t, rec.URL(), nil)
			deltas, final, err := modeltest.Collect(m.Stream(context.Background(), canonical()))
			if tc.errText != "" {
				var pe *model.ProviderError
				if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("err = %v, want a *model.ProviderError containing %q", err, tc.errText)
				}
				if final != nil {
					t.Errorf("a response came with the error: %+v", final)
				}
				if rec.Calls() != 1 {
					t.Errorf("%d requests, want 1 (no retry once the stream has started)", rec.Calls())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, final, cmpopts.IgnoreFields(model.Response{}, "Raw")); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if got := strings.Join(deltas, ""); got != tc.want.Message.Content {
				t.Errorf("deltas %q, want the text %q", got, tc.want.Message.Content)
			}
		})
	}
}

// TestErrorAsFirstEventRetried: a server that answers 200 and sends its
// error as the first event is retried like an error status when the error is
// transient.
func TestErrorAsFirstEventRetried(t *testing.T) {
	rec := providertest.NewRecorder(t,
		providertest.Answer{Body: `data: {"object":"error","message":"busy","type":"InternalServerError","param":null,"code":503}` + "\n\n"},
		providertest.Answer{Body: providertest.ReadFile(t, "stream_tool_calls.sse")},
	)
	_, final, err := modeltest.Collect(newModel(t, rec.URL(), nil).Stream(context.Background(), canonical()))
	if err != nil || final == nil {
		t.Fatalf("final = %v, err = %v", final, err)
	}
	if rec.Calls() != 2 {
		t.Errorf("%d requests, want 2", rec.Calls())
	}
}

// TestGenerateErrorBodies: a non-streaming answer of status 200 that is an
// error object, or whose choice finished with "error", is a ProviderError
// with the server's message.
func TestGenerateErrorBodies(t *testing.T) {
	for _, body := range []string{
		`{"object":"error","message":"CUDA out of memory","type":"InternalServerError","param":null,"code":500}`,
		`{"id":"x","object":"chat.completion","created":1,"model":"m","error":{"code":502,"message":"CUDA out of memory"},"choices":[{"index":0,"message":{"role":"assistant","content":"Partial ans"},"finish_reason":"error"}]}`,
	} {
		rec := providertest.NewRecorder(t, providertest.Answer{Body: body})
		_, err := newModel(t, rec.URL(), func(o *openai.Options) { o.MaxRetries = -1 }).Generate(context.Background(), canonical())
		var pe *model.ProviderError
		if !errors.As(err, &pe) || pe.Message != "CUDA out of memory" {
			t.Errorf("body %.60s: err = %v, want a ProviderError with the server's message", body, err)
		}
	}
}

// TestReplayCutOffArguments: arguments kept as a JSON string (a call cut off
// at the output limit) go back to the server as the model's own text.
func TestReplayCutOffArguments(t *testing.T) {
	rec := providertest.NewRecorder(t, providertest.Answer{Body: providertest.ReadFile(t, "response_tool_calls.json")})
	req := &model.Request{Model: "m", Messages: []model.Message{
		model.User("read"),
		model.Assistant("", model.ToolCall{ID: "call_b", Name: "read_file", Arguments: json.RawMessage(`"{\"path\":\"b.t"`)}),
		model.ToolResult("call_b", "read_file", "cut off", true),
	}}
	if _, err := newModel(t, rec.URL(), nil).Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Messages []struct {
			ToolCalls []struct {
				Function struct{ Arguments string } `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(rec.Body(0), &body); err != nil {
		t.Fatal(err)
	}
	if got := body.Messages[1].ToolCalls[0].Function.Arguments; got != `{"path":"b.t` {
		t.Errorf("arguments sent = %q, want the model's text", got)
	}
}

// TestTimeout: a server that never answers is given up on after
// Options.Timeout, on Generate and Stream, with an error that says so.
func TestTimeout(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) }) // runs first: lets the handlers return
	m := newModel(t, srv.URL, func(o *openai.Options) { o.Timeout = 50 * time.Millisecond; o.MaxRetries = -1 })
	_, err := m.Generate(context.Background(), canonical())
	_, _, err2 := modeltest.Collect(m.Stream(context.Background(), canonical()))
	for _, err := range []error{err, err2} {
		var pe *model.ProviderError
		if !errors.As(err, &pe) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timeout of 50ms") {
			t.Errorf("err = %v, want a ProviderError naming the timeout", err)
		}
	}
}

// TestKeyNeverOverPlainHTTP: a key is refused for a plain http URL to a host
// that is not loopback.
func TestKeyNeverOverPlainHTTP(t *testing.T) {
	_, err := openai.New(&openai.Options{BaseURL: "http://gpu-box.lan:8000/v1", APIKey: testKey})
	if err == nil || !strings.Contains(err.Error(), "refusing to send an API key over plain http") || strings.Contains(err.Error(), testKey) {
		t.Errorf("err = %v", err)
	}
	if _, err := openai.New(&openai.Options{BaseURL: "http://gpu-box.lan:8000/v1"}); err != nil {
		t.Errorf("no key: err = %v", err)
	}
}
