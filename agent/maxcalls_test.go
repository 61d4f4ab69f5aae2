package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
)

// A model that asked for 100,000 tool calls in one answer had them all
// checkpointed one by one and the run effectively hung. A turn over
// MaxToolCalls now runs none of its calls and ends the run with a typed error;
// a turn at the limit runs them all.
func TestToolCallsPerTurnAreCapped(t *testing.T) {
	calls := func(n int) []model.FuncCall {
		out := make([]model.FuncCall, n)
		for i := range out {
			out[i] = testkit.Call(fmt.Sprintf("c%d", i), "echo", nil)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		limit int // Options.MaxToolCalls
		calls int
		ran   int
	}{
		{"default, over", 0, 128 + 1, 0},
		{"default, at", 0, 128, 128},
		{"set, over", 3, 4, 0},
		{"set, at", 3, 3, 3},
		{"many", 0, 100_000, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			echo := &testkit.Counter{Name: "echo"}
			cps := 0
			a := newAgent(t, agent.Options{
				Model: testkit.Script(calls(tc.calls)), Tools: agent.ToolList{echo}, MaxToolCalls: tc.limit,
				Checkpoint: func(context.Context, agent.Checkpoint) error { cps++; return nil },
			})
			res, err := a.Run(context.Background(), "x")
			if got := int(echo.Count()); got != tc.ran {
				t.Errorf("%d calls ran, want %d", got, tc.ran)
			}
			if tc.ran > 0 {
				if err != nil || res.Status != agent.StatusDone {
					t.Fatalf("run at the limit: %v, %v", res.Status, err)
				}
				return
			}
			var tm *agent.TooManyToolCallsError
			if !errors.As(err, &tm) {
				t.Fatalf("err = %v, want a *TooManyToolCallsError", err)
			}
			limit := tc.limit
			if limit == 0 {
				limit = 128
			}
			if tm.Calls != tc.calls || tm.Limit != limit || tm.Turn != 1 {
				t.Errorf("error fields %+v, want calls %d limit %d turn 1", *tm, tc.calls, limit)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("limit of %d", limit)) || !strings.Contains(err.Error(), "MaxToolCalls") {
				t.Errorf("error does not name the limit: %v", err)
			}
			if res == nil || res.Status != agent.StatusError || len(res.ToolCalls) != 0 {
				t.Fatalf("result %+v, want StatusError with no records", res)
			}
			for _, m := range res.Transcript {
				if len(m.ToolCalls) > 0 {
					t.Errorf("the over-long assistant message entered the transcript")
				}
			}
			if cps != 0 {
				t.Errorf("%d checkpoints of a turn that ran nothing", cps)
			}
		})
	}
	if _, err := agent.New(&agent.Options{Model: testkit.Script(), MaxToolCalls: -1}); err == nil || !strings.Contains(err.Error(), "MaxToolCalls (-1)") {
		t.Errorf("negative MaxToolCalls: %v", err)
	}
}
