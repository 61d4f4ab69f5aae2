package agent

import (
	"context"
	"fmt"

	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/hookrun"
	"github.com/tollgate-dev/tollgate/model"
)

// transcriptRoom is the room a run's transcript has after its prompt when
// it starts, so that a short run (a turn of tool calls, their results and
// the answer) never grows it. The model and the hooks see it capped at its
// length (see modelTurn).
const transcriptRoom = 6

// modelTurn runs one model turn: the BeforeLLM hooks (which may answer in
// the model's place), the model (streamed when someone reads the events and
// the model can stream), the AfterLLM hooks, and the usage event.
func (r *runner) modelTurn(ctx context.Context) (*model.Response, error) {
	turn := r.st.Turn
	h := r.a.opts.Hooks
	// Each hook gets copies of its own (RunBeforeLLM); the model gets the
	// run's slices capped at their length, so that a model that appends to
	// its request cannot write into the transcript's spare capacity.
	msgs, defs := r.st.Messages[:len(r.st.Messages):len(r.st.Messages)], r.defs[:len(r.defs):len(r.defs)]
	out, err := hookrun.BeforeLLM(ctx, h, hooks.BeforeLLMEvent{Messages: msgs, Tools: defs, Model: r.st.Model, Turn: turn})
	if err != nil {
		return nil, err
	}
	var resp *model.Response
	if out.Response != nil {
		c := *out.Response
		resp = &c
		if resp.Message.Content != "" {
			r.emit(Event{Kind: EventText, Turn: turn, Delta: resp.Message.Content})
		}
	} else {
		req := &model.Request{Model: out.Model, Messages: out.Messages, Tools: out.Tools}
		if s, ok := r.a.opts.Model.(model.Streamer); ok && !r.generate {
			if resp, err = r.streamTurn(ctx, s, req, turn); err != nil {
				return nil, err
			}
		} else {
			resp, err = r.a.opts.Model.Generate(ctx, req)
			if err != nil {
				return nil, fmt.Errorf("agent: model turn %d: %w", turn, err)
			}
			if resp != nil && resp.Message.Content != "" {
				r.emit(Event{Kind: EventText, Turn: turn, Delta: resp.Message.Content})
			}
		}
		if resp == nil {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("agent: model turn %d: the model returned no response", turn)
		}
	}
	if err := hookrun.AfterLLM(ctx, h, hooks.AfterLLMEvent{Response: resp, Model: out.Model, Turn: turn}); err != nil {
		return nil, err
	}
	r.st.Usage = r.st.Usage.Add(resp.Usage)
	r.emit(Event{Kind: EventUsage, Turn: turn, Usage: &resp.Usage})
	return resp, nil
}

// streamTurn asks s for turn's response as a stream, emitting its text
// deltas. The chunks go to the runner's chunk sink through a function made
// once per run, so that a streamed turn moves nothing to the heap.
func (r *runner) streamTurn(ctx context.Context, s model.Streamer, req *model.Request, turn int) (*model.Response, error) {
	k := &r.chunks
	*k = chunkSink{r: r, turn: turn}
	if r.onChunk == nil {
		r.onChunk = k.take
	}
	s.Stream(ctx, req)(r.onChunk)
	resp, err := k.resp, k.err
	*k = chunkSink{}
	if err != nil {
		return nil, fmt.Errorf("agent: model turn %d: %w", turn, err)
	}
	return resp, nil
}

// chunkSink takes the chunks of a streamed turn (see streamTurn): it emits
// their text deltas and keeps the response, or the error that ends the
// stream.
type chunkSink struct {
	r    *runner
	turn int
	resp *model.Response
	err  error
	done bool // an error came: the stream must stop
}

// take is the stream's yield function: it returns false once an error has
// come, as a range loop that returns on the error would stop.
func (k *chunkSink) take(ch model.Chunk, err error) bool {
	if k.done {
		return false
	}
	if err != nil {
		k.err, k.done = err, true
		return false
	}
	if ch.Delta != "" {
		k.r.emit(Event{Kind: EventText, Turn: k.turn, Delta: ch.Delta})
	}
	if ch.Response != nil {
		k.resp = ch.Response
	}
	return true
}
