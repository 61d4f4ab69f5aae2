package policy

import (
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/tool"
)

// shellOpaque is the built-in rule that asks about a shell command whose
// programs the analysis cannot see ("rule:shell-opaque").
var shellOpaque = tool.Principal{Kind: tool.PrincipalRule, Name: "shell-opaque"}

// risks lists every risk level, from least to most dangerous.
var risks = []approval.Risk{approval.RiskReadOnly, approval.RiskWrite, approval.RiskNetwork, approval.RiskDestructive, approval.RiskUnknown, approval.RiskEscalation}

// autonomyDecision is the matrix of risk against autonomy:
//
//	risk         full_auto  supervised  cautious  manual
//	read_only    allow      allow       allow     ask
//	write        allow      allow       ask       ask
//	network      allow      ask         ask       ask
//	destructive  allow      ask         ask       ask
//	unknown      allow      ask         ask       ask
//	escalation   deny       deny        deny      deny
//
// Each level is at least as strict as the one before it for every risk.
// Unknown (a tool without hints, treated as mutating per docs/architecture.md) is
// asked about wherever destructive is. An invalid level or risk yields Deny
// (fail closed).
func autonomyDecision(a approval.Autonomy, r approval.Risk) approval.Effect {
	if _, err := approval.ParseAutonomy(string(a)); err != nil || !r.Valid() || r == approval.RiskEscalation {
		return approval.Deny
	}
	switch a {
	case approval.FullAuto:
		return approval.Allow
	case approval.Supervised:
		if r == approval.RiskReadOnly || r == approval.RiskWrite {
			return approval.Allow
		}
	case approval.Cautious:
		if r == approval.RiskReadOnly {
			return approval.Allow
		}
	}
	return approval.Ask
}
