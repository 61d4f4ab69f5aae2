package hooks

import (
	"context"
	"strings"
)

// StageStop names the Stop hooks: they run when the model gives its final
// answer, and may continue the run instead.
const StageStop Stage = "stop"

// MaxStopContinuations caps how many times Stop hooks may continue one run,
// counted across its halts and resumes (the count is in the run's state);
// after that the final answer stands.
const MaxStopContinuations = 8

// StopEvent is passed to Stop hooks when the model answered without tool
// calls.
type StopEvent struct {
	// Text is the model's final answer.
	Text string
	// Turn is the model turn that gave it.
	Turn int
	// Continuations counts how many times Stop hooks have continued this run
	// already, resumes included (0 on the first stop; Claude Code's stop_hook_active is
	// Continuations > 0).
	Continuations int
}

// StopFunc may continue the run: a non-empty reason is sent to the model as a
// user message and the run goes on with another turn; "" lets it end.
type StopFunc func(ctx context.Context, ev *StopEvent) (reason string, err error)

// Stop appends a Stop hook and returns h for chaining.
func (h *Hooks) Stop(name string, fn StopFunc) *Hooks {
	h.stop = append(h.stop, named[StopFunc]{defName(StageStop, name, len(h.stop)+1), fn})
	return h
}

// RunStop runs every Stop hook in order and joins the reasons of those that
// continue the run with blank lines; "" means the run ends. The first error
// stops the chain and is returned as an [*Error].
func (h *Hooks) RunStop(ctx context.Context, ev StopEvent) (string, error) {
	if h == nil {
		return "", nil
	}
	var reasons []string
	for _, hk := range h.stop {
		e := ev
		reason, err := call(StageStop, hk.name, func() (string, error) { return hk.fn(ctx, &e) })
		if err != nil {
			return "", err
		}
		if strings.TrimSpace(reason) != "" {
			reasons = append(reasons, reason)
		}
	}
	return strings.Join(reasons, "\n\n"), nil
}
