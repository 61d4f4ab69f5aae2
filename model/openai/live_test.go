//go:build live

// Run against the real service with: go test -tags live -run Live ./model/openai
// It needs the key in the environment and makes a few small calls (costs
// apply). The model defaults to gpt-4.1-mini; set TOLLGATE_LIVE_OPENAI_MODEL to change it.
package openai_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/model/modeltest"
	"github.com/tollgate-dev/tollgate/model/openai"
)

func TestLive(t *testing.T) {
	key, _ := openai.KeyFromEnv(os.Getenv("TOLLGATE_LIVE_OPENAI_BASE_URL"))
	if key == "" {
		t.Skip("no API key in the environment")
	}
	m, err := openai.New(&openai.Options{APIKey: key, BaseURL: os.Getenv("TOLLGATE_LIVE_OPENAI_BASE_URL")})
	if err != nil {
		t.Fatal(err)
	}
	id := os.Getenv("TOLLGATE_LIVE_OPENAI_MODEL")
	if id == "" {
		id = "gpt-4.1-mini"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req := &model.Request{
		Model:     id,
		MaxTokens: 200,
		Messages:  []model.Message{model.System("Use the tool when asked about weather."), model.User("What is the weather in Paris?")},
		Tools: []model.ToolDef{{Name: "get_weather", Description: "Current weather of a city.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}},
	}
	resp, err := m.Generate(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Message.ToolCalls) == 0 || resp.FinishReason != model.FinishToolCalls || resp.Usage.TotalTokens == 0 {
		t.Fatalf("want a tool call with usage, got %+v", resp)
	}
	call := resp.Message.ToolCalls[0]
	req.Messages = append(req.Messages, resp.Message, model.ToolResult(call.ID, call.Name, `{"sky":"clear","celsius":21}`, false))
	deltas, final, err := modeltest.Collect(m.Stream(ctx, req))
	if err != nil {
		t.Fatal(err)
	}
	if final == nil || final.Message.Content == "" || len(deltas) == 0 {
		t.Fatalf("want a streamed text answer, got %+v", final)
	}
	t.Logf("answer: %s (%+v)", final.Message.Content, final.Usage)
}
