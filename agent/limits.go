package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tollgate-dev/tollgate/tool"
)

// Defaults of the per-call limits, used when the corresponding [Options] field is 0.
const (
	// defaultToolTimeout bounds one tool call's execution (10 minutes).
	defaultToolTimeout = 10 * time.Minute
	// defaultMaxResultBytes caps the output of one tool result that the
	// model, the transcript, the record and the events see (256 KiB).
	defaultMaxResultBytes = 256 << 10
	// abandonAfter is how long a tool call may go on after its context was
	// cancelled (its timeout, or the run's) before the pipeline stops waiting
	// for it and gives the model an error result: a tool that ignores its
	// context (a blocking read, a stuck library) cannot hang the run.
	abandonAfter = 5 * time.Second
)

// ToolLimits bounds the calls of one tool. A zero field means the agent-wide
// value ([Options].ToolTimeout, [Options].MaxResultBytes); a negative one
// means no limit.
type ToolLimits struct {
	// Timeout bounds a call's execution (step 6 of the pipeline): its
	// context is cancelled after this long and, if the tool does not return
	// within 5 seconds more, the model gets an error result saying so.
	Timeout time.Duration
	// MaxResultBytes caps the bytes of a result's Output, after the
	// AfterTool chain; the rest is cut at a character boundary and a marker
	// saying how many bytes were cut is appended.
	MaxResultBytes int
}

// callLimits are one tool's resolved limits (0: no limit) and the cause its
// calls' contexts end with at the timeout, made once so that a call does not
// format it.
type callLimits struct {
	ToolLimits
	cause error
}

// resolveLimits resolves l against the agent-wide values and the defaults.
func resolveLimits(l ToolLimits, timeout time.Duration, maxBytes int) callLimits {
	pick := func(v, agentWide, def int64) int64 {
		for _, x := range [2]int64{v, agentWide} {
			switch {
			case x < 0:
				return 0
			case x > 0:
				return x
			}
		}
		return def
	}
	r := callLimits{ToolLimits: ToolLimits{
		Timeout:        time.Duration(pick(int64(l.Timeout), int64(timeout), int64(defaultToolTimeout))),
		MaxResultBytes: int(pick(int64(l.MaxResultBytes), int64(maxBytes), defaultMaxResultBytes)),
	}}
	if r.Timeout > 0 {
		r.cause = fmt.Errorf("the tool call took longer than its timeout of %s", r.Timeout)
	}
	return r
}

// limits returns the limits of the tool name: per tool, else agent-wide,
// else the defaults, as resolved by [New].
func (a *Agent) limits(name string) *callLimits {
	if l, ok := a.toolLimits[name]; ok {
		return l
	}
	return &a.agentLimits
}

// executeBounded runs execute under the call's timeout and returns when the
// tool does, or 5 s after ctx (or the timeout) ended if the tool
// ignores its context; the abandoned call's result is dropped.
//
// The tool runs on a goroutine of its own, since only then can a tool that
// never returns be abandoned: it keeps that goroutine until it returns. The
// timer for the abandonment is made only once ctx has ended.
func executeBounded(ctx context.Context, t tool.Tool, args json.RawMessage, lim *callLimits) tool.Result {
	if lim.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, lim.Timeout, lim.cause)
		defer cancel()
	}
	done := make(chan tool.Result, 1) // an abandoned tool never blocks on it
	go func() { done <- execute(ctx, t, args) }()
	select {
	case res := <-done:
		return withCause(ctx, res)
	case <-ctx.Done():
	}
	timer := time.NewTimer(abandonAfter)
	defer timer.Stop()
	select {
	case res := <-done:
		return withCause(ctx, res)
	case <-timer.C:
		return tool.Errorf("%s did not return within %s after it was stopped (%v); the call was abandoned", t.Spec().Name, abandonAfter, context.Cause(ctx))
	}
}

// withCause adds to an error result of a call whose context ended why it
// ended (its timeout, the run's), when the cause says more than ctx.Err.
func withCause(ctx context.Context, res tool.Result) tool.Result {
	if cause := context.Cause(ctx); res.IsError && cause != nil && cause != ctx.Err() {
		res.Output += fmt.Sprintf(" [%v]", cause)
	}
	return res
}
