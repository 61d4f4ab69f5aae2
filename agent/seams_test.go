package agent_test

import (
	"context"
	"sync"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
)

// Every hook of a run finds the run's ID on its context (hooks.RunFrom), and
// a resumed run carries the same ID.
func TestHooksSeeRunID(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	h := (&hooks.Hooks{}).BeforeTool("who", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		info, ok := hooks.RunFrom(ctx)
		if !ok {
			t.Error("no run info on the hook's context")
		}
		mu.Lock()
		seen = append(seen, info.RunID+"/"+info.AgentID)
		mu.Unlock()
		return nil, nil
	})
	a := newAgent(t, agent.Options{
		ID:    "a1",
		Model: testkit.Script([]model.FuncCall{testkit.Call("c1", "t", nil)}),
		Tools: agent.ToolList{&testkit.Counter{Name: "t"}}, Hooks: h,
	})
	res, err := a.Run(t.Context(), "go")
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0] != res.RunID+"/a1" {
		t.Fatalf("hook saw %q, want [%s/a1]", seen, res.RunID)
	}
	if _, ok := hooks.RunFrom(context.Background()); ok {
		t.Fatal("RunFrom found run info on a bare context")
	}
}
