package hooks

import (
	"context"
	"errors"

	"github.com/tollgate-dev/tollgate/tool"
)

// StagePending names the Pending hooks: they run when a request goes pending
// (a person is about to be asked).
const StagePending Stage = "pending"

// PendingEvent is passed to Pending hooks.
type PendingEvent struct {
	// Name and ID are the tool call's name and ID.
	Name string
	ID   string
	Turn int
	// Request is the pending request (a copy).
	Request tool.Request
}

// PendingFunc observes a pending request (to notify someone). Its error is
// logged; it never changes the call.
type PendingFunc func(ctx context.Context, ev *PendingEvent) error

// Pending appends a Pending hook and returns h for chaining.
func (h *Hooks) Pending(name string, fn PendingFunc) *Hooks {
	h.pending = append(h.pending, named[PendingFunc]{defName(StagePending, name, len(h.pending)+1), fn})
	return h
}

// RunPending runs every Pending hook in order and returns their errors joined
// (each an [*Error]).
func (h *Hooks) RunPending(ctx context.Context, ev PendingEvent) error {
	if h == nil {
		return nil
	}
	var errs []error
	for _, hk := range h.pending {
		e := ev
		if _, err := call(StagePending, hk.name, func() (struct{}, error) { return struct{}{}, hk.fn(ctx, &e) }); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
