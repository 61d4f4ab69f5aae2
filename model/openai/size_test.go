package openai_test

import (
	"testing"

	"github.com/tollgate-dev/tollgate/internal/providertest"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/model/openai"
)

// sizeStream returns a stream whose events are the chunks event(i, piece),
// with i = -1 for the last, followed by a finishing chunk and [DONE].
func sizeStream(event func(i int, piece string) string) providertest.SizeStream {
	return providertest.SizeStream{
		Delta: func(i int, piece string) string { return "data: " + event(i, piece) + "\n\n" },
		Tail: "data: " + event(-1, "") + "\n\n" + // the end of the tool call's arguments
			`data: {"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n",
	}
}

// sizes describes this provider to the shared test of the answer size cap.
var sizes = providertest.Sizes{
	Streams: map[string]providertest.SizeStream{
		"text": sizeStream(func(i int, piece string) string {
			if i < 0 {
				return `{"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":""},"finish_reason":null}]}`
			}
			return `{"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"` + piece + `"},"finish_reason":null}]}`
		}),
		"arguments": sizeStream(func(i int, piece string) string {
			call := `"function":{"arguments":"` + piece
			switch i {
			case 0:
				call = `"id":"call_0","type":"function","function":{"name":"f","arguments":"{\"a\":\"` + piece
			case -1:
				call = `"function":{"arguments":"\"}`
			}
			return `{"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,` + call + `"}}]},"finish_reason":null}]}`
		}),
	},
	Answer: func(text string) string {
		return `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"` + text + `"},"finish_reason":"stop"}]}`
	},
	New: func(t *testing.T, baseURL string, maxResponseBytes int64) model.Model {
		return newModel(t, baseURL, func(o *openai.Options) { o.MaxResponseBytes = maxResponseBytes })
	},
}

// TestAnswerSizeLimit: a stream of many small events (text deltas, or
// tool-call argument deltas), each far below the limit of one event, ends
// once the stream's bytes pass Options.MaxResponseBytes, with a final
// error that states the limit; a JSON answer past it fails the same way.
func TestAnswerSizeLimit(t *testing.T) { providertest.TestAnswerSizeLimit(t, sizes) }
