package agent_test

import (
	"context"
	"iter"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// bothModel can generate and stream, and counts which of the two it was
// asked for.
type bothModel struct {
	generates, streams int
	first              *model.ToolCall // the first answer's call, if set
}

func (m *bothModel) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	m.generates++
	if c := m.first; c != nil {
		m.first = nil
		return &model.Response{Message: model.Assistant("", *c), FinishReason: model.FinishToolCalls}, nil
	}
	return &model.Response{Message: model.Assistant("whole answer"), FinishReason: model.FinishStop}, nil
}

func (m *bothModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		m.streams++
		if !yield(model.Chunk{Delta: "whole "}, nil) || !yield(model.Chunk{Delta: "answer"}, nil) {
			return
		}
		yield(model.Chunk{Response: &model.Response{Message: model.Assistant("whole answer"), FinishReason: model.FinishStop}}, nil)
	}
}

// Run and Resume read no text deltas, so they ask a model that can stream
// with Generate; Stream streams.
func TestRunGeneratesStreamStreams(t *testing.T) {
	m := &bothModel{}
	a := newAgent(t, agent.Options{Model: m})
	res, err := a.Run(context.Background(), "hi")
	if err != nil || res.Text != "whole answer" {
		t.Fatalf("Run: %+v, %v", res, err)
	}
	if m.generates != 1 || m.streams != 0 {
		t.Errorf("Run: %d Generate and %d Stream calls, want 1 and 0", m.generates, m.streams)
	}
	var deltas []string
	for ev, err := range a.Stream(context.Background(), "hi") {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == agent.EventText {
			deltas = append(deltas, ev.Delta)
		}
	}
	if m.generates != 1 || m.streams != 1 || len(deltas) != 2 {
		t.Errorf("Stream: %d Generate and %d Stream calls, deltas %q; want 1, 1 and two deltas", m.generates, m.streams, deltas)
	}

	// Resume of a halted run: the next turn is a Generate call too.
	m2 := &bothModel{first: &model.ToolCall{ID: "c1", Name: "pay", Arguments: []byte(`{}`)}}
	calls := 0
	pay := tool.Must("pay", "pay", func(ctx context.Context, _ struct{}) (string, error) { calls++; return "paid", nil }, nil)
	h := (&hooks.Hooks{}).BeforeTool("gate", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		if ev.Answer == nil {
			return hooks.Ask(tool.Request{ID: "approve", Kind: tool.KindApproval, Prompt: "Pay?"}), nil
		}
		return nil, nil
	})
	b := newAgent(t, agent.Options{Model: m2, Tools: agent.ToolList{pay}, Hooks: h})
	res, err = b.Run(context.Background(), "pay")
	if err != nil || res.Status != agent.StatusPending {
		t.Fatalf("Run: %+v, %v", res, err)
	}
	res, err = b.Resume(context.Background(), res.State, tool.Answer{ID: res.Pending[0].ID, OK: true})
	if err != nil || res.Status != agent.StatusDone || calls != 1 {
		t.Fatalf("Resume: %+v, %v, %d calls", res, err, calls)
	}
	if m2.generates != 2 || m2.streams != 0 {
		t.Errorf("Run and Resume: %d Generate and %d Stream calls, want 2 and 0", m2.generates, m2.streams)
	}
}
