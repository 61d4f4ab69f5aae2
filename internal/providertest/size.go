package providertest

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
)

// Sizes describes one provider for [TestAnswerSizeLimit], the test of the
// cap every HTTP provider puts on the bytes of one answer.
type Sizes struct {
	// Streams maps the name of a kind of stream ("text", "tool input") to
	// the events of a stream of that kind in the provider's wire format.
	Streams map[string]SizeStream
	// Answer returns a whole JSON answer (not a stream) whose text is text.
	Answer func(text string) string
	// New opens the provider, with fast retries, on baseURL (a local
	// server's URL) with Options.MaxResponseBytes set to maxResponseBytes.
	// The model must be a [model.Streamer]. New fails t if the provider
	// cannot be opened.
	New func(t *testing.T, baseURL string, maxResponseBytes int64) model.Model
}

// SizeStream is one stream of [Sizes]: Head, then Delta(i, piece) for i
// from 0 up, then Tail, each the complete text of zero or more
// server-sent events (with their "data: " lines and blank-line ends).
type SizeStream struct {
	// Head is sent first: the events that open the answer and its content.
	Head string
	// Delta returns the ith event (0 first) adding piece, 200 bytes of
	// text or tool input, to the content.
	Delta func(i int, piece string) string
	// Tail is sent last: the events that close the content and the answer.
	Tail string
}

// TestAnswerSizeLimit checks that a stream of many small events (of each
// kind of d.Streams), each far below the limit of one event, ends once the
// stream's bytes pass Options.MaxResponseBytes (64 KiB here), with a final
// error that states the limit, no response, no more text than the limit and
// no retry; a JSON answer past it fails the same way.
func TestAnswerSizeLimit(t *testing.T, d Sizes) {
	const limit = 64 << 10
	piece := strings.Repeat("a", 200)
	for name, k := range d.Streams {
		t.Run("stream "+name, func(t *testing.T) {
			var asked atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				asked.Add(1)
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, k.Head)
				for i := range 20 * limit / len(piece) { // 20 times the limit
					fmt.Fprint(w, k.Delta(i, piece))
				}
				fmt.Fprint(w, k.Tail)
			}))
			defer srv.Close()
			m := d.New(t, srv.URL, limit)
			s, ok := m.(model.Streamer)
			if !ok {
				t.Fatalf("%T is not a model.Streamer", m)
			}
			var text int
			var err error
			for c, e := range s.Stream(context.Background(), &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}, Model: "m"}) {
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
			fmt.Fprint(w, d.Answer(strings.Repeat("a", 2*limit)))
		}))
		defer srv.Close()
		m := d.New(t, srv.URL, limit)
		_, err := m.Generate(context.Background(), &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}, Model: "m"})
		checkTooLarge(t, err, limit)
	})
}

// checkTooLarge fails t unless err is a final *model.ProviderError that
// states the size limit of limit bytes.
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
