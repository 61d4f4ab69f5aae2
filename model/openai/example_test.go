package openai_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/model/openai"
)

// A model on an OpenAI-compatible server (here a local stand-in) asks for a
// tool call.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4.1-mini",
			"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,
			"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}}],
			"usage":{"prompt_tokens":20,"completion_tokens":8,"total_tokens":28}}`)
	}))
	defer srv.Close()

	// For OpenAI itself: BaseURL empty, APIKey from openai.KeyFromEnv("").
	m, err := openai.New(&openai.Options{BaseURL: srv.URL + "/v1", APIKey: "sk-example", Model: "gpt-4.1-mini"})
	if err != nil {
		panic(err)
	}
	resp, err := m.Generate(context.Background(), &model.Request{
		Messages: []model.Message{model.User("Weather in Paris?")},
		Tools:    []model.ToolDef{{Name: "get_weather", InputSchema: []byte(`{"type":"object","properties":{"city":{"type":"string"}}}`)}},
	})
	if err != nil {
		panic(err)
	}
	call := resp.Message.ToolCalls[0]
	fmt.Println(resp.FinishReason, call.ID, call.Name, string(call.Arguments))
	fmt.Println(resp.Usage.InputTokens, resp.Usage.OutputTokens, resp.Usage.TotalTokens)
	// Output:
	// tool_calls call_1 get_weather {"city":"Paris"}
	// 20 8 28
}
