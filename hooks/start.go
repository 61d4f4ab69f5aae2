package hooks

import (
	"context"
	"errors"
	"fmt"
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
	h.start = append(h.start, named[StartFunc]{defName(StageStart, name, len(h.start)+1), fn})
	return h
}

// End appends an End hook and returns h for chaining.
func (h *Hooks) End(name string, fn EndFunc) *Hooks {
	h.end = append(h.end, named[EndFunc]{defName(StageEnd, name, len(h.end)+1), fn})
	return h
}

// RunStart runs the Start hooks in order and returns the prompt as replaced
// by them. A hook that blocks ends the chain with an [*Error] wrapping
// [ErrBlocked]; a hook's error is returned as an [*Error].
func (h *Hooks) RunStart(ctx context.Context, ev StartEvent) (string, error) {
	prompt := ev.Prompt
	if h == nil {
		return prompt, nil
	}
	for _, hk := range h.start {
		e := StartEvent{Prompt: prompt, Resumed: ev.Resumed}
		ov, err := call(StageStart, hk.name, func() (*StartOverride, error) { return hk.fn(ctx, &e) })
		if err != nil {
			return prompt, err
		}
		if ov == nil {
			continue
		}
		if ov.Block != "" {
			return prompt, &Error{Stage: StageStart, Hook: hk.name, Err: fmt.Errorf("%w: %s", ErrBlocked, ov.Block)}
		}
		if ov.Prompt != "" && !ev.Resumed {
			prompt = ov.Prompt
		}
	}
	return prompt, nil
}

// RunEnd runs every End hook, in order, and returns their errors joined (each
// an [*Error]); every hook runs whatever the others did.
func (h *Hooks) RunEnd(ctx context.Context, ev EndEvent) error {
	if h == nil {
		return nil
	}
	var errs []error
	for _, hk := range h.end {
		e := ev
		if _, err := call(StageEnd, hk.name, func() (struct{}, error) { return struct{}{}, hk.fn(ctx, &e) }); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
