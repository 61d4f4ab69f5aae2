package hookrun_test

import (
	"context"
	"testing"

	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/hookrun"
)

type otherKey struct{}

// TestRunFrom checks that the run info on a context is the innermost one,
// that a context without one has none, and that a run's context keeps its
// parent's values, deadline and cancellation.
func TestRunFrom(t *testing.T) {
	if info, ok := hooks.RunFrom(context.Background()); ok {
		t.Fatalf("no run: %+v", info)
	}
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), otherKey{}, "v"))
	ctx := hookrun.WithRun(parent, hooks.RunInfo{RunID: "run_1", AgentID: "a"})
	if info, ok := hooks.RunFrom(ctx); !ok || info != (hooks.RunInfo{RunID: "run_1", AgentID: "a"}) {
		t.Fatalf("run: %+v, %v", info, ok)
	}
	inner := hookrun.WithRun(context.WithValue(ctx, otherKey{}, "w"), hooks.RunInfo{RunID: "run_2"})
	if info, _ := hooks.RunFrom(inner); info.RunID != "run_2" || info.AgentID != "" {
		t.Fatalf("inner run: %+v", info)
	}
	if ctx.Value(otherKey{}) != "v" || inner.Value(otherKey{}) != "w" {
		t.Fatalf("values: %v, %v", ctx.Value(otherKey{}), inner.Value(otherKey{}))
	}
	// A value handed out is a copy: changing it changes no context.
	info, _ := hooks.RunFrom(ctx)
	info.RunID = "changed"
	if again, _ := hooks.RunFrom(ctx); again.RunID != "run_1" {
		t.Fatalf("after a change to a copy: %+v", again)
	}
	child, stop := context.WithCancel(inner)
	defer stop()
	cancel()
	<-child.Done()
	if ctx.Err() != context.Canceled || inner.Err() != context.Canceled {
		t.Fatalf("errors: %v, %v", ctx.Err(), inner.Err())
	}
}
