package hooks

import (
	"context"

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
	return h.add(StagePending, name, fn)
}
