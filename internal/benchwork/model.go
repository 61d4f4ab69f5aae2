package benchwork

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tollgate-dev/tollgate/model"
)

// ToolDefs are the two tools of the workload as tollgate tool
// definitions, with the same schemas as [OpenAITools].
var ToolDefs = []model.ToolDef{
	{Name: "get_weather", Description: "Get the current weather for a city.", InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
	{Name: "add", Description: "Add two integers.", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`)},
}

// RunModel runs the workload of [Mock] through m alone, without the
// agent: turn 1's tool calls are answered by the same hand-written tools as
// the floor's, then turn 2's text is returned. With stream set it reads
// every chunk of m's [model.Streamer.Stream] (m must implement it); else it
// calls Generate. It measures a provider against the floor ([FloorOpenAI],
// [FloorAnthropic]) on the same requests.
func RunModel(ctx context.Context, m model.Model, stream bool) (string, error) {
	req := &model.Request{
		Messages: []model.Message{{Role: model.RoleUser, Content: Question}},
		Tools:    ToolDefs,
	}
	for range 4 {
		var resp *model.Response
		if stream {
			s, ok := m.(model.Streamer)
			if !ok {
				return "", fmt.Errorf("%T does not stream", m)
			}
			for c, err := range s.Stream(ctx, req) {
				if err != nil {
					return "", err
				}
				if c.Response != nil {
					resp = c.Response
				}
			}
			if resp == nil {
				return "", fmt.Errorf("the stream ended without a response")
			}
		} else {
			var err error
			if resp, err = m.Generate(ctx, req); err != nil {
				return "", err
			}
		}
		if len(resp.Message.ToolCalls) == 0 {
			return resp.Message.Content, nil
		}
		req.Messages = append(req.Messages, resp.Message)
		for _, c := range resp.Message.ToolCalls {
			req.Messages = append(req.Messages, model.Message{Role: model.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: floorTool(c.Name, c.Arguments)})
		}
	}
	return "", fmt.Errorf("no final answer")
}
