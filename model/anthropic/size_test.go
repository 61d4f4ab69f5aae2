package anthropic_test

import (
	"testing"

	"github.com/tollgate-dev/tollgate/internal/providertest"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/model/anthropic"
)

// sizeStream returns a stream of one content block opened by start, grown
// by delta events and closed by end (content_block_delta data each).
func sizeStream(start string, delta func(piece string) string, end string) providertest.SizeStream {
	return providertest.SizeStream{
		Head: "event: message_start\ndata: " + `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"usage":{"input_tokens":1,"output_tokens":1}}}` + "\n\n" +
			"event: content_block_start\ndata: " + start + "\n\n",
		Delta: func(_ int, piece string) string { return "event: content_block_delta\ndata: " + delta(piece) + "\n\n" },
		Tail: "event: content_block_delta\ndata: " + end + "\n\n" +
			"event: content_block_stop\ndata: " + `{"type":"content_block_stop","index":0}` + "\n\n" +
			"event: message_delta\ndata: " + `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}` + "\n\n" +
			"event: message_stop\ndata: " + `{"type":"message_stop"}` + "\n\n",
	}
}

// sizes describes this provider to the shared test of the answer size cap.
var sizes = providertest.Sizes{
	Streams: map[string]providertest.SizeStream{
		"text": sizeStream(
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			func(piece string) string {
				return `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + piece + `"}}`
			},
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}}`,
		),
		"tool input": sizeStream(
			`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}`+"\n\nevent: content_block_delta\ndata: "+
				`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":\""}}`,
			func(piece string) string {
				return `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"` + piece + `"}}`
			},
			`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\"}"}}`,
		),
	},
	Answer: func(text string) string {
		return `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"` + text + `"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`
	},
	New: func(t *testing.T, baseURL string, maxResponseBytes int64) model.Model {
		return newModel(t, baseURL, func(o *anthropic.Options) { o.MaxResponseBytes = maxResponseBytes })
	},
}

// TestAnswerSizeLimit: a stream of many small events (text deltas, or
// tool input deltas), each far below the limit of one event, ends once the
// stream's bytes pass Options.MaxResponseBytes, with a final error that
// states the limit; a JSON answer past it fails the same way.
func TestAnswerSizeLimit(t *testing.T) { providertest.TestAnswerSizeLimit(t, sizes) }
