package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/tollgate-dev/tollgate/tool"
)

// Defaults of the per-call limits, used when the corresponding [Options] field is 0.
const (
	// DefaultToolTimeout bounds one tool call's execution (10 minutes).
	DefaultToolTimeout = 10 * time.Minute
	// DefaultMaxResultBytes caps the output of one tool result that the
	// model, the transcript, the record and the events see (256 KiB).
	DefaultMaxResultBytes = 256 << 10
	// AbandonAfter is how long a tool call may go on after its context was
	// cancelled (its timeout, or the run's) before the pipeline stops waiting
	// for it and gives the model an error result: a tool that ignores its
	// context (a blocking read, a stuck library) cannot hang the run.
	AbandonAfter = 5 * time.Second
)

// ToolLimits bounds the calls of one tool. A zero field means the agent-wide
// value ([Options].ToolTimeout, [Options].MaxResultBytes); a negative one
// means no limit.
type ToolLimits struct {
	// Timeout bounds a call's execution (step 6 of the pipeline): its
	// context is cancelled after this long and, if the tool does not return
	// within [AbandonAfter] more, the model gets an error result saying so.
	Timeout time.Duration
	// MaxResultBytes caps the bytes of a result's Output, after the
	// AfterTool chain; the rest is cut at a character boundary and a marker
	// saying how many bytes were cut is appended.
	MaxResultBytes int
}

// limits returns the limits of the tool name: per tool, else agent-wide,
// else the defaults; 0 in the result means no limit.
func (a *Agent) limits(name string) ToolLimits {
	l := a.opts.ToolLimits[name]
	pick := func(v, agentWide, def int64) int64 {
		for _, x := range []int64{v, agentWide} {
			switch {
			case x < 0:
				return 0
			case x > 0:
				return x
			}
		}
		return def
	}
	return ToolLimits{
		Timeout:        time.Duration(pick(int64(l.Timeout), int64(a.opts.ToolTimeout), int64(DefaultToolTimeout))),
		MaxResultBytes: int(pick(int64(l.MaxResultBytes), int64(a.opts.MaxResultBytes), DefaultMaxResultBytes)),
	}
}

// executeBounded runs execute under the call's timeout and returns when the
// tool does, or [AbandonAfter] after ctx (or the timeout) ended if the tool
// ignores its context; the abandoned call's result is dropped.
func executeBounded(ctx context.Context, t tool.Tool, inv *tool.Invocation, args json.RawMessage, timeout time.Duration) tool.Result {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, fmt.Errorf("the tool call took longer than its timeout of %s", timeout))
		defer cancel()
	}
	done := make(chan tool.Result, 1)
	go func() { done <- execute(ctx, t, inv, args) }()
	select {
	case res := <-done:
		return withCause(ctx, res)
	case <-ctx.Done():
	}
	timer := time.NewTimer(AbandonAfter)
	defer timer.Stop()
	select {
	case res := <-done:
		return withCause(ctx, res)
	case <-timer.C:
		return tool.Errorf("%s did not return within %s after it was stopped (%v); the call was abandoned", t.Spec().Name, AbandonAfter, context.Cause(ctx))
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

// capResult cuts res.Output to max bytes (0: no cap) at a character
// boundary and appends a marker saying how much was cut.
func capResult(res tool.Result, max int) tool.Result {
	if max <= 0 || len(res.Output) <= max {
		return res
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(res.Output[cut]) {
		cut--
	}
	total := len(res.Output)
	res.Output = res.Output[:cut] + fmt.Sprintf("\n[tool result truncated: %d of %d bytes cut (limit %d bytes)]", total-cut, total, max)
	return res
}
