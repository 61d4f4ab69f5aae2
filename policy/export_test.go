package policy

import "github.com/tollgate-dev/tollgate/approval"

// The autonomy matrix and its axes, for the external tests.
var (
	AutonomyDecision = autonomyDecision
	Risks            = risks
	Autonomies       = []approval.Autonomy{approval.FullAuto, approval.Supervised, approval.Cautious, approval.Manual}
)
