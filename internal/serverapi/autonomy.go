package serverapi

import "github.com/tollgate-dev/tollgate/approval"

// AutonomyRequest is the body of PUT /v1/autonomy: seed 000's set_autonomy.
type AutonomyRequest struct {
	// Level is full_auto, supervised, cautious or manual; empty removes the
	// override.
	Level string `json:"level"`
	// Run, when set, changes one run's level (approver role); otherwise the
	// tenant's (admin role).
	Run string `json:"run,omitempty"`
}

// AutonomyChange is the Data of an [EventAutonomyChanged] event.
type AutonomyChange struct {
	// Scope is "tenant" or "run".
	Scope string `json:"scope"`
	// Run is the run's ID for a run's change.
	Run string `json:"run,omitempty"`
	// Level is the new autonomy level; empty removes the override (the
	// agent's configured level applies again).
	Level approval.Autonomy `json:"level"`
	// By is the principal who changed it.
	By string `json:"by"`
}

// EventAutonomyChanged is the store event PUT /v1/autonomy appends (seed
// 000's server broadcasts autonomy_changed after set_autonomy). Its Data is
// an [AutonomyChange]; a run's change belongs to the run, a tenant's has no
// run.
const EventAutonomyChanged = "autonomy.changed"
