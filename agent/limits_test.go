package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// A 5 MB tool result went to the model whole. It is now cut to the cap
// (default, or per tool) with a marker saying how much was cut; the record
// holds what the model saw.
func TestToolResultIsCapped(t *testing.T) {
	big := strings.Repeat("é", 5<<20/2) // 5 MiB of two-byte characters
	newBig := func(name string) *testkit.Counter {
		return &testkit.Counter{Name: name, Output: func(json.RawMessage) tool.Result { return tool.Result{Output: big} }}
	}
	for _, tc := range []struct {
		name   string
		opts   agent.Options
		max    int // 0: no cap
		marker string
	}{
		{"default", agent.Options{}, 256 << 10, "[tool result truncated: 5 MiB"},
		{"agent-wide", agent.Options{MaxResultBytes: 1000}, 1000, "bytes cut (limit 1000 bytes)]"},
		{"per tool", agent.Options{MaxResultBytes: 1000, ToolLimits: map[string]agent.ToolLimits{"big": {MaxResultBytes: 10}}}, 10, "[tool result truncated: 5242870 of 5242880 bytes cut (limit 10 bytes)]"},
		{"off", agent.Options{MaxResultBytes: -1}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.Model = testkit.Script([]model.FuncCall{testkit.Call("c1", "big", nil)})
			opts.Tools = agent.ToolList{newBig("big")}
			res, err := newAgent(t, opts).Run(context.Background(), "x")
			if err != nil {
				t.Fatal(err)
			}
			out := toolMsgs(res)[0].Content
			if tc.max == 0 {
				if out != big {
					t.Fatalf("uncapped result has %d bytes, want %d", len(out), len(big))
				}
				return
			}
			head, _, ok := strings.Cut(out, "\n[tool result truncated: ")
			if !ok || len(head) > tc.max || len(head) < tc.max-1 || !strings.HasPrefix(big, head) {
				t.Fatalf("result of %d bytes: head %d bytes (cap %d), marker found %v: %.200q", len(out), len(head), tc.max, ok, out[len(head):])
			}
			if want := strings.Replace(tc.marker, "5 MiB", "", 1); !strings.Contains(out, want) {
				t.Errorf("marker %q not in %q", want, out[len(head):])
			}
			if res.ToolCalls[0].Output != out {
				t.Errorf("the record holds %d bytes, the model saw %d", len(res.ToolCalls[0].Output), len(out))
			}
		})
	}
}

// blocking is a tool that waits for its context, or, when stubborn, for
// release only (it ignores its context, as a blocking syscall would).
type blocking struct {
	stubborn bool
	release  chan struct{}
}

func (b *blocking) Spec() tool.Spec { return tool.Spec{Name: "block"} }
func (b *blocking) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	if b.stubborn {
		<-b.release
		return tool.Result{Output: "late"}, nil
	}
	<-ctx.Done()
	return tool.Error("stopped: " + ctx.Err().Error()), nil
}

// Every tool call has a timeout: a tool that honours its context gets it
// cancelled; one that ignores it is abandoned soon after, and the run goes on.
func TestToolCallTimeout(t *testing.T) {
	for _, stubborn := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			b := &blocking{stubborn: stubborn, release: make(chan struct{})}
			defer close(b.release)
			a := newAgent(t, agent.Options{
				Model:      testkit.Script([]model.FuncCall{testkit.Call("c1", "block", nil)}),
				Tools:      agent.ToolList{b},
				ToolLimits: map[string]agent.ToolLimits{"block": {Timeout: time.Second}},
			})
			start := time.Now()
			res, err := a.Run(context.Background(), "x")
			if err != nil || res.Status != agent.StatusDone {
				t.Fatalf("%v %+v", err, res)
			}
			out := toolMsgs(res)[0]
			want, took := "took longer than its timeout of 1s", time.Since(start)
			if stubborn {
				want = "the call was abandoned"
			}
			if !out.IsError || !strings.Contains(out.Content, want) || took > time.Second+5*time.Second {
				t.Errorf("stubborn %v: after %v: %+v, want an error with %q", stubborn, took, out, want)
			}
		})
	}
}

// cancelOnPre cancels the run while its PreToolUse hook runs.
type cancelOnPre struct{ cancel context.CancelFunc }

func (c cancelOnPre) PreToolUse(ctx context.Context, u *hooks.ToolUse)  { c.cancel() }
func (c cancelOnPre) PostToolUse(ctx context.Context, u *hooks.ToolUse) {}
func (c cancelOnPre) OnError(ctx context.Context, u *hooks.ToolUse)     {}

// A run cancelled while a PreToolUse hook runs starts no tool.
func TestCancelDuringPreToolUseStartsNoTool(t *testing.T) {
	c := &testkit.Counter{Name: "t"}
	a := newAgent(t, agent.Options{Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "t", nil)}), Tools: agent.ToolList{c}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a.SetToolCallListener(cancelOnPre{cancel})
	_, err := a.Run(ctx, "x")
	if !errors.Is(err, context.Canceled) || c.Count() != 0 {
		t.Fatalf("err %v, tool ran %d times; want context.Canceled and 0", err, c.Count())
	}
}
