package anthropic_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/model/anthropic"
)

// TestAnswerSizeLimit: a stream of many small events (text deltas, or
// tool input deltas), each far below the limit of one event, ends once the
// stream's bytes pass Options.MaxResponseBytes, with a final error that
// states the limit; a JSON answer past it fails the same way.
func TestAnswerSizeLimit(t *testing.T) {
	const limit = 64 << 10
	piece := strings.Repeat("a", 200)
	type kind struct{ start, delta, end string }
	streams := map[string]kind{
		"text": {
			start: `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			delta: `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + piece + `"}}`,
			end:   `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}}`,
		},
		"tool input": {
			start: `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}` + "\n\nevent: content_block_delta\ndata: " +
				`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":\""}}`,
			delta: `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"` + piece + `"}}`,
			end:   `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\"}"}}`,
		},
	}
	for name, k := range streams {
		t.Run("stream "+name, func(t *testing.T) {
			var asked atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				asked.Add(1)
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, "event: message_start\ndata: "+`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"usage":{"input_tokens":1,"output_tokens":1}}}`+"\n\n")
				fmt.Fprint(w, "event: content_block_start\ndata: "+k.start+"\n\n")
				for range 20 * limit / len(piece) { // 20 times the limit
					fmt.Fprint(w, "event: content_block_delta\ndata: "+k.delta+"\n\n")
				}
				fmt.Fprint(w, "event: content_block_delta\ndata: "+k.end+"\n\n")
				fmt.Fprint(w, "event: content_block_stop\ndata: "+`{"type":"content_block_stop","index":0}`+"\n\n")
				fmt.Fprint(w, "event: message_delta\ndata: "+`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}`+"\n\n")
				fmt.Fprint(w, "event: message_stop\ndata: "+`{"type":"message_stop"}`+"\n\n")
			}))
			defer srv.Close()
			m := newModel(t, srv.URL, func(o *anthropic.Options) { o.MaxResponseBytes = limit })
			var text int
			var err error
			for c, e := range m.Stream(context.Background(), &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}, Model: "m"}) {
				text += len(c.Delta)
				if e != nil {
					err = e
				}
				if c.Response != nil {
					t.Fatalf("the stream ended with a response (%d bytes of text), want the size error", text)
				}
			}
			checkTooLarge(t, err, limit)
			if text > limit {
				t.Errorf("%d bytes of text yielded, more than the limit of %d", text, limit)
			}
			if n := asked.Load(); n != 1 {
				t.Errorf("%d requests, want 1 (no retry)", n)
			}
		})
	}
	t.Run("generate", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"%s"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`, strings.Repeat("a", 2*limit))
		}))
		defer srv.Close()
		m := newModel(t, srv.URL, func(o *anthropic.Options) { o.MaxResponseBytes = limit })
		_, err := m.Generate(context.Background(), &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}, Model: "m"})
		checkTooLarge(t, err, limit)
	})
}

func checkTooLarge(t *testing.T, err error, limit int) {
	t.Helper()
	var pe *model.ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a *model.ProviderError", err)
	}
	if pe.Retryable || !strings.Contains(pe.Error(), "size limit") || !strings.Contains(pe.Error(), fmt.Sprint(limit)) {
		t.Errorf("err = %v (retryable %v), want a final error stating the limit of %d bytes", err, pe.Retryable, limit)
	}
}
