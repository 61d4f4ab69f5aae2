package openai_test

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
	"github.com/tollgate-dev/tollgate/model/openai"
)

// TestAnswerSizeLimit: a stream of many small events (text deltas, or
// tool-call argument deltas), each far below the limit of one event, ends
// once the stream's bytes pass Options.MaxResponseBytes, with a final
// error that states the limit; a JSON answer past it fails the same way.
func TestAnswerSizeLimit(t *testing.T) {
	const limit = 64 << 10
	piece := strings.Repeat("a", 200)
	streams := map[string]func(i int) string{
		"text": func(i int) string {
			if i < 0 {
				return `{"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":""},"finish_reason":null}]}`
			}
			return `{"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"` + piece + `"},"finish_reason":null}]}`
		},
		"arguments": func(i int) string {
			call := `"function":{"arguments":"` + piece
			switch i {
			case 0:
				call = `"id":"call_0","type":"function","function":{"name":"f","arguments":"{\"a\":\"` + piece
			case -1:
				call = `"function":{"arguments":"\"}`
			}
			return `{"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,` + call + `"}}]},"finish_reason":null}]}`
		},
	}
	for name, event := range streams {
		t.Run("stream "+name, func(t *testing.T) {
			var asked atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				asked.Add(1)
				w.Header().Set("Content-Type", "text/event-stream")
				for i := range 20 * limit / len(piece) { // 20 times the limit
					fmt.Fprintf(w, "data: %s\n\n", event(i))
				}
				fmt.Fprintf(w, "data: %s\n\n", event(-1)) // the end of the tool call's arguments
				fmt.Fprint(w, `data: {"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
			}))
			defer srv.Close()
			m := newModel(t, srv.URL, func(o *openai.Options) { o.MaxResponseBytes = limit })
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
			fmt.Fprintf(w, `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"%s"},"finish_reason":"stop"}]}`, strings.Repeat("a", 2*limit))
		}))
		defer srv.Close()
		m := newModel(t, srv.URL, func(o *openai.Options) { o.MaxResponseBytes = limit })
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
