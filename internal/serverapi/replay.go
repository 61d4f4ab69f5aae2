package serverapi

import "github.com/tollgate-dev/tollgate/internal/replay"

// ReplayRequest is the body of POST /v1/policy/replay.
type ReplayRequest struct {
	// Policy is the candidate policy, as a policy file holds it (YAML).
	Policy string `json:"policy"`
	// Since, when set, replays only the calls decided in this last while
	// ("24h").
	Since string `json:"since,omitempty"`
}

// ReplayResult is the answer of POST /v1/policy/replay.
type ReplayResult struct {
	// Report is what the candidate changes (package approval/replay).
	Report replay.Report `json:"report"`
	// Text is the report as `tollgate policy replay` prints it.
	Text string `json:"text"`
}
