package modeltest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/model"
)

// Live checks a provider against its real service, with the model modelID:
// Generate on a question that needs a get_weather tool must answer with a tool
// call, a finish reason of tool calls and non-zero usage; Stream with the
// tool's result fed back must answer in text deltas and end with the whole
// text. It makes two small calls (costs apply), within two minutes, and is
// meant for tests behind a build tag (go test -tags live).
func Live(t *testing.T, m interface {
	model.Model
	model.Streamer
}, modelID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req := &model.Request{
		Model:     modelID,
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
	deltas, final, err := Collect(m.Stream(ctx, req))
	if err != nil {
		t.Fatal(err)
	}
	if final == nil || final.Message.Content == "" || len(deltas) == 0 {
		t.Fatalf("want a streamed text answer, got %+v", final)
	}
	t.Logf("answer: %s (%+v)", final.Message.Content, final.Usage)
}
