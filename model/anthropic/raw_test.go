package anthropic_test

import (
	"context"
	"encoding/json"
	"testing"

	anth "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/tollgate-dev/tollgate/internal/providertest"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/model/modeltest"
)

// Seed 002: AfterLlmEvent carries "the decoded provider payload". Response.Raw
// is the provider's message on both paths: as sent without streaming, and
// assembled from the events when streaming, in the same shape. The official
// SDK decodes both (it is the oracle here).
func TestRawOnBothPaths(t *testing.T) {
	rec := providertest.NewRecorder(t,
		providertest.Answer{Body: providertest.ReadFile(t, "response_tool_use.json")},
		providertest.Answer{Body: providertest.ReadFile(t, "stream_tool_use.sse")},
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
		name, id string
		resp     *model.Response
	}{
		{"generate", "msg_01XFDUDYJgAACzvnptvVoYEL", gen},
		{"stream", "msg_014p7gG3wDgGV9EUtLvnow3U", streamed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var msg anth.Message
			if err := json.Unmarshal(tc.resp.Raw, &msg); err != nil {
				t.Fatalf("Raw %q does not decode as a message: %v", tc.resp.Raw, err)
			}
			if msg.ID != tc.id || msg.Model != "claude-sonnet-4-5-20250929" || msg.StopReason != anth.StopReasonToolUse || len(msg.Content) != 3 {
				t.Fatalf("id %q model %q stop %q blocks %d", msg.ID, msg.Model, msg.StopReason, len(msg.Content))
			}
			last := msg.Content[len(msg.Content)-1]
			var input map[string]string
			if err := json.Unmarshal(last.Input, &input); err != nil || last.Name != "get_time" || input["format"] != "24h" {
				t.Errorf("last block %s %s (%v)", last.Name, last.Input, err)
			}
			if u := msg.Usage; u.InputTokens != 472 || u.OutputTokens != 89 || u.CacheReadInputTokens != 100 {
				t.Errorf("usage %+v, want the provider's usage", u)
			}
			if msg.Content[0].Text != "I'll check both." {
				t.Errorf("text %q, want the whole text", msg.Content[0].Text)
			}
		})
	}
}
