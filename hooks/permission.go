package hooks

import (
	"context"
	"encoding/json"

	"github.com/tollgate-dev/tollgate/tool"
)

// StagePermission names the Permission hooks: they may answer an approval
// request that authorization raised, before a person is asked.
const StagePermission Stage = "permission"

// PermissionEvent is passed to Permission hooks when authorization (step 4 of
// the pipeline) decided "ask" and the approval request is about to go to a
// person.
type PermissionEvent struct {
	// Name is the tool's name.
	Name string
	// Args are the arguments the request is about (a copy).
	Args json.RawMessage
	// ID is the tool call ID.
	ID   string
	Turn int
	// Hints are the tool's hints, nil when unknown.
	Hints *tool.Hints
	// Request is the approval request a person would be asked (a copy).
	Request tool.Request
}

// PermissionFunc may answer an approval request in a person's place. A nil
// answer is no opinion: the next Permission hook is asked, then a person. An
// answer with OK approves the call (with Data, a JSON object, it replaces the
// arguments, which are then validated and authorized again); without OK it
// declines the call with Reason. The answer's ID and who answered are set by
// the chain (Principal {hook, <name>}, By and Actor cleared): the decision
// record names "hook:<name>" as the one who answered.
type PermissionFunc func(ctx context.Context, ev *PermissionEvent) (*tool.Answer, error)

// Permission appends a Permission hook and returns h for chaining.
func (h *Hooks) Permission(name string, fn PermissionFunc) *Hooks {
	return h.add(StagePermission, name, fn)
}
