package serverapi

// AutonomyRequest is the body of PUT /v1/autonomy: seed 000's set_autonomy.
type AutonomyRequest struct {
	// Level is full_auto, supervised, cautious or manual; empty removes the
	// override.
	Level string `json:"level"`
	// Run, when set, changes one run's level (approver role); otherwise the
	// tenant's (admin role).
	Run string `json:"run,omitempty"`
}
