package hooks

import (
	"context"

	"github.com/tollgate-dev/tollgate/internal/toolctx"
)

// RunInfo identifies the run a hook is called for. The agent puts it on the
// context of every hook, authorizer, tool and listener call of a run (see
// [RunFrom]), so that a hook can name the run without a field on each event.
type RunInfo struct {
	// RunID names the run ("run_" and 16 hex digits for package agent).
	RunID string
	// AgentID names the agent running it.
	AgentID string
}

// RunFrom returns the run info on ctx, and false when ctx carries none (a hook
// called outside a run, e.g. from a test).
func RunFrom(ctx context.Context) (RunInfo, bool) {
	if v, ok := ctx.Value(toolctx.RunKey{}).(*RunInfo); ok {
		return *v, true
	}
	return RunInfo{}, false
}
