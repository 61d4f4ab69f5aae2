package agent_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/providertest"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/model/anthropic"
	"github.com/tollgate-dev/tollgate/model/openai"
	"github.com/tollgate-dev/tollgate/tool"
)

// Seed 002: AfterLlmEvent carries "the decoded provider payload". Every Run
// streams from the providers; AfterLLM hooks still see the provider's
// response (its id, model, finish reason and usage) in Response.Raw.
func TestAfterLLMSeesProviderResponseWhenStreaming(t *testing.T) {
	turns := []providertest.Turn{
		{Text: "Looking.", Calls: []providertest.Call{{ID: "call_1", Name: "lookup", Args: `{}`}}},
		{Text: "Done."},
	}
	// The provider's own fields, as each one names them.
	type payload struct {
		ID    string `json:"id"`
		Model string `json:"model"`
		// OpenAI
		Choices []struct {
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		// Anthropic
		StopReason string         `json:"stop_reason"`
		Usage      map[string]int `json:"usage"`
	}
	for _, tc := range []struct {
		name, id     string
		finish       []string
		usageKey     string
		usage        int
		newModel     func(url string) (model.Model, error)
		finishReason func(p payload) string
	}{
		{"openai", "chatcmpl-fake", []string{"tool_calls", "stop"}, "completion_tokens", 7,
			func(url string) (model.Model, error) {
				return openai.New(&openai.Options{BaseURL: url + "/v1", APIKey: "sk-test", Model: "gpt-raw", MaxRetries: -1})
			},
			func(p payload) string {
				if len(p.Choices) != 1 {
					return ""
				}
				return p.Choices[0].FinishReason
			}},
		{"anthropic", "msg_fake", []string{"tool_use", "end_turn"}, "output_tokens", 7,
			func(url string) (model.Model, error) {
				return anthropic.New(&anthropic.Options{BaseURL: url, APIKey: "sk-ant-test", Model: "claude-raw", MaxRetries: -1})
			},
			func(p payload) string { return p.StopReason }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := providertest.NewLLMServer(t, turns...)
			m, err := tc.newModel(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := m.(model.Streamer); !ok {
				t.Fatal("the provider does not stream; this test is about the streaming path")
			}
			var mu sync.Mutex
			var seen []payload
			h := (&hooks.Hooks{}).AfterLLM("audit", func(ctx context.Context, ev *hooks.AfterLLMEvent) error {
				var p payload
				if err := json.Unmarshal(ev.Response.Raw, &p); err != nil {
					t.Errorf("turn %d: Raw %q: %v", ev.Turn, ev.Response.Raw, err)
				}
				mu.Lock()
				seen = append(seen, p)
				mu.Unlock()
				return nil
			})
			lookup := tool.Must("lookup", "look something up", func(ctx context.Context, _ struct{}) (string, error) { return "found", nil }, nil)
			a := newAgent(t, agent.Options{Model: m, Tools: agent.ToolList{lookup}, Hooks: h})
			res, err := a.Run(context.Background(), "look it up")
			if err != nil || res.Status != agent.StatusDone {
				t.Fatalf("err %v status %s", err, res.Status)
			}
			if len(seen) != 2 {
				t.Fatalf("AfterLLM saw %d responses, want 2", len(seen))
			}
			for i, p := range seen {
				if p.ID != tc.id || p.Model == "" || tc.finishReason(p) != tc.finish[i] || p.Usage[tc.usageKey] != tc.usage {
					t.Errorf("turn %d: provider response %+v", i+1, p)
				}
			}
		})
	}
}
