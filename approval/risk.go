package approval

import (
	"fmt"

	"github.com/tollgate-dev/tollgate/tool"
)

// Risk is how much harm a call can do, the first layer of a [Policy]. It comes
// from the tool's [tool.Hints] ([RiskOf]) unless the policy declares it for the
// tool by name.
type Risk string

// The risk levels.
const (
	// RiskReadOnly: the tool only reads local state (ReadOnly, not OpenWorld).
	RiskReadOnly Risk = "read_only"
	// RiskWrite: the tool modifies local state without being destructive.
	RiskWrite Risk = "write"
	// RiskNetwork: the tool reaches outside the local system (OpenWorld) and is
	// not destructive.
	RiskNetwork Risk = "network"
	// RiskDestructive: the tool may delete or overwrite data (Destructive and
	// not ReadOnly).
	RiskDestructive Risk = "destructive"
	// RiskUnknown: the tool has no hints (nil) and the policy declares nothing.
	RiskUnknown Risk = "unknown"
	// RiskEscalation: the tool widens what the agent may do (sudo, changing its
	// own policy or autonomy). Never derived from hints; only declared. Every
	// autonomy level denies it.
	RiskEscalation Risk = "escalation"
)

// Risks lists every risk level, from least to most dangerous.
var Risks = []Risk{RiskReadOnly, RiskWrite, RiskNetwork, RiskDestructive, RiskUnknown, RiskEscalation}

// Valid reports whether r is one of the risk levels.
func (r Risk) Valid() bool {
	for _, x := range Risks {
		if r == x {
			return true
		}
	}
	return false
}

// RiskOf derives a call's risk from its tool's hints:
//
//	nil hints                    -> unknown
//	ReadOnly, not OpenWorld      -> read_only
//	ReadOnly, OpenWorld          -> network
//	Destructive (not ReadOnly)   -> destructive
//	OpenWorld (not ReadOnly)     -> network
//	otherwise                    -> write
//
// ReadOnly wins over Destructive, as in the MCP specification, where
// destructiveHint is meaningful only when readOnlyHint is false.
func RiskOf(h *tool.Hints) Risk {
	switch {
	case h == nil:
		return RiskUnknown
	case h.ReadOnly && h.OpenWorld:
		return RiskNetwork
	case h.ReadOnly:
		return RiskReadOnly
	case h.Destructive:
		return RiskDestructive
	case h.OpenWorld:
		return RiskNetwork
	}
	return RiskWrite
}

// Autonomy is how much an agent may do without asking a person, the second
// layer of a [Policy]. See [AutonomyDecision] for the matrix.
type Autonomy string

// The autonomy levels, from most to least autonomous.
const (
	// FullAuto allows every risk but escalation.
	FullAuto Autonomy = "full_auto"
	// Supervised allows reading and local writes and asks for the rest.
	Supervised Autonomy = "supervised"
	// Cautious allows reading and asks for everything else.
	Cautious Autonomy = "cautious"
	// Manual asks for every call.
	Manual Autonomy = "manual"
)

// Autonomies lists every autonomy level, from most to least autonomous.
var Autonomies = []Autonomy{FullAuto, Supervised, Cautious, Manual}

// ParseAutonomy returns the level named s, or an error listing the levels.
func ParseAutonomy(s string) (Autonomy, error) {
	for _, a := range Autonomies {
		if string(a) == s {
			return a, nil
		}
	}
	return "", fmt.Errorf("unknown autonomy level %q (want one of full_auto, supervised, cautious, manual)", s)
}

// Valid reports whether a is one of the autonomy levels.
func (a Autonomy) Valid() bool {
	_, err := ParseAutonomy(string(a))
	return err == nil
}

// AutonomyDecision is the matrix of risk against autonomy:
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
func AutonomyDecision(a Autonomy, r Risk) Effect {
	if !a.Valid() || !r.Valid() || r == RiskEscalation {
		return Deny
	}
	switch a {
	case FullAuto:
		return Allow
	case Supervised:
		if r == RiskReadOnly || r == RiskWrite {
			return Allow
		}
	case Cautious:
		if r == RiskReadOnly {
			return Allow
		}
	}
	return Ask
}
