package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// replies is a model that answers turn n (the number of assistant messages
// in the request) with its n-th response, finish reason included.
type replies []model.Response

func (r replies) Generate(_ context.Context, req *model.Request) (*model.Response, error) {
	n := 0
	for _, m := range req.Messages {
		if m.Role == model.RoleAssistant {
			n++
		}
	}
	resp := r[min(n, len(r)-1)]
	return &resp, nil
}

func readCall(id, args string) model.ToolCall {
	return model.ToolCall{ID: id, Name: "read_file", Arguments: json.RawMessage(args)}
}

// One complete call and one cut off mid-arguments at the output limit: the
// complete one runs, the cut one never does and its result names the limit;
// a text answer cut off the same way ends incomplete with finish reason
// length and the text that arrived.
func TestOutputLimit(t *testing.T) {
	m := replies{
		{Message: model.Assistant("", readCall("call_a", `{"path":"a.txt"}`), readCall("call_b", `"{\"path\":\"b.t"`)), FinishReason: model.FinishLength},
		{Message: model.Assistant("The files s"), FinishReason: model.FinishLength},
	}
	check := func(t *testing.T, res *agent.Result, read *testkit.Counter) {
		t.Helper()
		if res.Status != agent.StatusIncomplete || res.FinishReason != model.FinishLength || res.Text != "The files s" || !strings.Contains(res.Reason, "output limit") {
			t.Errorf("status %s, finish %q, text %q, reason %q; want incomplete, length, the partial text and a reason", res.Status, res.FinishReason, res.Text, res.Reason)
		}
		if read.Count() != 1 {
			t.Errorf("read_file ran %d times, want 1 (the complete call only)", read.Count())
		}
		if len(res.ToolCalls) != 2 {
			t.Fatalf("%d records, want 2", len(res.ToolCalls))
		}
		cut := res.ToolCalls[1]
		if cut.ID != "call_b" || cut.Ran || !cut.IsError || cut.Decision.Outcome != gate.OutcomeInvalid ||
			!strings.Contains(cut.Output, "cut off at the model's output limit") || strings.Contains(cut.Output, "must be a JSON object") {
			t.Errorf("cut-off call record = %+v", cut)
		}
		if string(cut.RequestedArgs) != `"{\"path\":\"b.t"` {
			t.Errorf("requested args %s, want the model's text kept", cut.RequestedArgs)
		}
	}
	t.Run("Run", func(t *testing.T) {
		read := &testkit.Counter{Name: "read_file"}
		res, err := newAgent(t, agent.Options{Model: m, Tools: agent.ToolList{read}}).Run(context.Background(), "read both")
		if err != nil {
			t.Fatal(err)
		}
		check(t, res, read)
	})
	t.Run("Stream", func(t *testing.T) {
		read := &testkit.Counter{Name: "read_file"}
		var last *agent.Result
		for ev, err := range newAgent(t, agent.Options{Model: m, Tools: agent.ToolList{read}}).Stream(context.Background(), "read both") {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Kind == agent.EventDone {
				last = ev.Result
			}
		}
		check(t, last, read)
	})
	t.Run("Resume", func(t *testing.T) {
		// The first turn's complete call waits for an approval; the cut
		// one is settled at once and never asked about.
		read := &testkit.Counter{Name: "read_file"}
		var mu sync.Mutex
		var asked []string
		h := (&hooks.Hooks{}).BeforeTool("ask", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
			if ev.Answer != nil {
				return nil, nil
			}
			mu.Lock()
			asked = append(asked, ev.ID)
			mu.Unlock()
			return hooks.Ask(tool.Request{Kind: tool.KindApproval, Prompt: "read?"}), nil
		})
		a := newAgent(t, agent.Options{Model: m, Tools: agent.ToolList{read}, Hooks: h})
		res, err := a.Run(context.Background(), "read both")
		if err != nil || res.Status != agent.StatusPending || len(res.Pending) != 1 {
			t.Fatalf("status %s, pending %v, err %v", res.Status, res.Pending, err)
		}
		if len(asked) != 1 || asked[0] != "call_a" {
			t.Errorf("asked about %v, want only call_a", asked)
		}
		res, err = a.Resume(context.Background(), res.State, tool.Answer{ID: res.Pending[0].ID, OK: true})
		if err != nil {
			t.Fatal(err)
		}
		check(t, res, read)
	})
}

// A call cut off at the output limit never runs, also when the run is
// recovered from the checkpoint taken after the turn (the process died
// before the calls ran): whether a call was cut off is part of the state.
func TestOutputLimitCutOffCallNotRunOnRecovery(t *testing.T) {
	m := replies{
		{Message: model.Assistant("", readCall("call_a", `{"path":"a.txt"}`), readCall("call_b", `{"path":"b.t"}`)), FinishReason: model.FinishLength},
		{Message: model.Assistant("done"), FinishReason: model.FinishStop},
	}
	crash := errors.New("crash")
	var saved *agent.State
	read := &testkit.Counter{Name: "read_file"}
	a := newAgent(t, agent.Options{Model: m, Tools: agent.ToolList{read}, Checkpoint: func(_ context.Context, cp agent.Checkpoint) error {
		if cp.Kind == "turn" && saved == nil {
			saved = cp.State
			return crash
		}
		return nil
	}})
	if _, err := a.Run(context.Background(), "read both"); !errors.Is(err, crash) || saved == nil {
		t.Fatalf("run: %v, state %v", err, saved != nil)
	}
	read2 := &testkit.Counter{Name: "read_file"}
	b := newAgent(t, agent.Options{Model: m, Tools: agent.ToolList{read2}})
	res, err := b.Resume(context.Background(), saved)
	if err != nil {
		t.Fatal(err)
	}
	if read2.Count() != 1 {
		t.Errorf("read_file ran %d times on recovery, want 1 (the complete call only)", read2.Count())
	}
	for _, r := range res.ToolCalls {
		if r.ID == "call_b" && r.Ran {
			t.Errorf("the cut-off call ran on recovery: %+v", r)
		}
	}
}
