package agent_test

import (
	"context"
	"errors"
	"iter"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/model"
)

// failingStream streams a delta, then fails, then (wrongly) goes on with a
// response when its yield has said stop.
type failingStream struct{ err error }

func (m failingStream) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	return nil, m.err
}

func (m failingStream) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		if !yield(model.Chunk{Delta: "Partial"}, nil) {
			return
		}
		yield(model.Chunk{}, m.err)
		yield(model.Chunk{Delta: " more"}, nil)
		yield(model.Chunk{Response: &model.Response{Message: model.Assistant("Partial more"), FinishReason: model.FinishStop}}, nil)
	}
}

// A streamed turn that fails ends the run with the model's error: the
// deltas before it are events, nothing the stream sends after it is.
func TestStreamTurnError(t *testing.T) {
	boom := errors.New("boom")
	a := newAgent(t, agent.Options{Model: failingStream{boom}})
	var deltas []string
	var last error
	var res *agent.Result
	for ev, err := range a.Stream(context.Background(), "hi") {
		if ev.Kind == agent.EventText {
			deltas = append(deltas, ev.Delta)
		}
		if ev.Kind == agent.EventDone {
			res, last = ev.Result, err
		}
	}
	if !errors.Is(last, boom) || res == nil || res.Status != agent.StatusError {
		t.Fatalf("done: %+v, %v; want the model's error", res, last)
	}
	if len(deltas) != 1 || deltas[0] != "Partial" {
		t.Errorf("deltas %q, want only the one before the error", deltas)
	}
}
