package hooks

import (
	"context"
	"errors"
)

// The stages of the run's start and end hooks.
const (
	// StageStart names the Start hooks: they run when a run or a resume
	// starts, before any model call.
	StageStart Stage = "start"
	// StageEnd names the End hooks: they run when a run or a resume ends.
	StageEnd Stage = "end"
)

// ErrBlocked is wrapped by the error a run fails with when a Start hook
// blocks it: test with errors.Is.
var ErrBlocked = errors.New("blocked by a start hook")

// StartEvent is passed to Start hooks. The run's ID is on the context
// ([RunFrom]).
type StartEvent struct {
	// Prompt is the user's prompt (as replaced by earlier Start hooks); empty
	// on a resume.
	Prompt string
	// Resumed is true when a halted run is resumed.
	Resumed bool
}

// StartOverride is returned by a Start hook; nil changes nothing.
type StartOverride struct {
	// Prompt, when non-empty, replaces the prompt (ignored on a resume).
	Prompt string
	// Block, when non-empty, ends the run before any model call: it fails
	// with an [*Error] wrapping [ErrBlocked] and this reason.
	Block string
}

// StartFunc may replace the prompt or block the run.
type StartFunc func(ctx context.Context, ev *StartEvent) (*StartOverride, error)

// EndEvent is passed to End hooks when a run or a resume ends (done, pending,
// incomplete or failed). The run's ID is on the context ([RunFrom]).
type EndEvent struct {
	// Status is the run's status: "done", "pending", "incomplete" or "error".
	Status string
	// Reason says why a run is incomplete or failed.
	Reason string
}

// EndFunc observes the end of a run. Its error is logged; it never changes
// the run's result.
type EndFunc func(ctx context.Context, ev *EndEvent) error

// Start appends a Start hook and returns h for chaining.
func (h *Hooks) Start(name string, fn StartFunc) *Hooks {
	return h.add(StageStart, name, fn)
}

// End appends an End hook and returns h for chaining.
func (h *Hooks) End(name string, fn EndFunc) *Hooks {
	return h.add(StageEnd, name, fn)
}
