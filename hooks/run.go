package hooks

import "context"

// RunInfo identifies the run a hook is called for. The agent puts it on the
// context of every hook, authorizer, tool and listener call of a run (see
// [RunFrom]), so that a hook can name the run without a field on each event.
type RunInfo struct {
	// RunID names the run ("run_" and 16 hex digits for package agent).
	RunID string
	// AgentID names the agent running it.
	AgentID string
}

type runKey struct{}

// WithRun returns ctx carrying info; package agent calls it once per run and
// per resume.
func WithRun(ctx context.Context, info RunInfo) context.Context {
	return &runContext{Context: ctx, info: info}
}

// runContext is a context carrying a RunInfo, as context.WithValue would,
// in one allocation with it.
type runContext struct {
	context.Context
	info RunInfo
}

// Value returns the run info (as a *RunInfo) for runKey{}, and ctx's value
// for any other key.
func (c *runContext) Value(key any) any {
	if key == (runKey{}) {
		return &c.info
	}
	return c.Context.Value(key)
}

func (c *runContext) String() string { return "hooks.WithRun(" + c.info.RunID + ")" }

// RunFrom returns the run info on ctx, and false when ctx carries none (a hook
// called outside a run, e.g. from a test).
func RunFrom(ctx context.Context) (RunInfo, bool) {
	if v, ok := ctx.Value(runKey{}).(*RunInfo); ok {
		return *v, true
	}
	return RunInfo{}, false
}
