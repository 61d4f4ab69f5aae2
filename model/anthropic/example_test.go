package anthropic_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/model/anthropic"
)

// A model on the Messages API (here a local stand-in) streams its answer.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"usage":{"input_tokens":14,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":", world."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5}}

event: message_stop
data: {"type":"message_stop"}

`)
	}))
	defer srv.Close()

	// For Anthropic itself: BaseURL empty, APIKey from anthropic.KeyFromEnv().
	m, err := anthropic.New(&anthropic.Options{BaseURL: srv.URL, APIKey: "sk-ant-example", Model: "claude-sonnet-4-5"})
	if err != nil {
		panic(err)
	}
	req := &model.Request{Messages: []model.Message{model.System("Be brief."), model.User("Greet the world.")}}
	for chunk, err := range m.Stream(context.Background(), req) {
		if err != nil {
			panic(err)
		}
		if chunk.Response == nil {
			fmt.Printf("delta %q\n", chunk.Delta)
			continue
		}
		r := chunk.Response
		fmt.Println(r.Message.Content, r.FinishReason, r.Usage.InputTokens, r.Usage.OutputTokens)
	}
	// Output:
	// delta "Hello"
	// delta ", world."
	// Hello, world. stop 14 5
}
