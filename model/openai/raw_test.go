package openai_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	oai "github.com/openai/openai-go/v3"

	"github.com/tollgate-dev/tollgate/internal/providertest"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/model/modeltest"
)

// Seed 002: AfterLlmEvent carries "the decoded provider payload". Response.Raw
// is the provider's chat.completion on both paths: as sent without streaming,
// and assembled from the chunks when streaming, in the same shape. The
// official SDK decodes both (it is the oracle here).
func TestRawOnBothPaths(t *testing.T) {
	rec := providertest.NewRecorder(t,
		providertest.Answer{Body: providertest.ReadFile(t, "response_tool_calls.json")},
		providertest.Answer{Body: providertest.ReadFile(t, "stream_tool_calls.sse")},
	)
	m := newModel(t, rec.URL(), nil)
	gen, err := m.Generate(context.Background(), canonical())
	if err != nil {
		t.Fatal(err)
	}
	_, streamed, err := modeltest.Collect(m.Stream(context.Background(), canonical()))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, id, content string
		resp              *model.Response
	}{
		{"generate", "chatcmpl-BZx81qk5Yp1r3Tq2", "", gen},
		{"stream", "chatcmpl-BZx9", "Let me check.", streamed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c oai.ChatCompletion
			if err := json.Unmarshal(tc.resp.Raw, &c); err != nil {
				t.Fatalf("Raw %q does not decode as a chat completion: %v", tc.resp.Raw, err)
			}
			if c.ID != tc.id || c.Model != "gpt-4.1-mini-2025-04-14" || c.SystemFingerprint != "fp_6f2eabb9a5" || len(c.Choices) != 1 {
				t.Fatalf("id %q model %q fingerprint %q choices %d", c.ID, c.Model, c.SystemFingerprint, len(c.Choices))
			}
			ch := c.Choices[0]
			if ch.FinishReason != "tool_calls" || ch.Message.Content != tc.content || len(ch.Message.ToolCalls) != 2 {
				t.Fatalf("choice %+v", ch)
			}
			if tcall := ch.Message.ToolCalls[1]; tcall.ID != "call_Mx3Vb7LpQ" || tcall.Function.Name != "get_time" || tcall.Function.Arguments != `{"city":"Paris","format":"24h"}` {
				t.Errorf("tool call %+v", tcall)
			}
			u := c.Usage
			if u.PromptTokens != 82 || u.CompletionTokens != 51 || u.TotalTokens != 133 || !strings.Contains(u.RawJSON(), "prompt_tokens_details") {
				t.Errorf("usage %+v (raw %s), want the provider's usage with its details", u, u.RawJSON())
			}
		})
	}
}

// A streamed answer with text only: content is the text, there are no tool
// calls, and a stream without usage has none in Raw.
func TestRawStreamTextOnly(t *testing.T) {
	sse := `data: {"id":"chatcmpl-T","object":"chat.completion.chunk","created":1,"model":"m-1","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}

data: {"id":"chatcmpl-T","object":"chat.completion.chunk","created":1,"model":"m-1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}

data: [DONE]

`
	rec := providertest.NewRecorder(t, providertest.Answer{Body: sse})
	_, resp, err := modeltest.Collect(newModel(t, rec.URL(), nil).Stream(context.Background(), canonical()))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(resp.Raw, &raw); err != nil {
		t.Fatal(err)
	}
	choice := raw["choices"].([]any)[0].(map[string]any)
	msg := choice["message"].(map[string]any)
	if raw["id"] != "chatcmpl-T" || raw["object"] != "chat.completion" || msg["content"] != "Hi" || msg["tool_calls"] != nil || choice["finish_reason"] != "stop" {
		t.Errorf("Raw = %s", resp.Raw)
	}
	if _, ok := raw["usage"]; ok {
		t.Errorf("Raw has a usage the provider never sent: %s", resp.Raw)
	}
}
