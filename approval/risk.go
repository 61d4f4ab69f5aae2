package approval

import (
	"fmt"

	"github.com/tollgate-dev/tollgate/tool"
)

// Risk is how much harm a call can do, the first layer of a policy (package policy). It comes
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

// risks lists every risk level, from least to most dangerous.
var risks = []Risk{RiskReadOnly, RiskWrite, RiskNetwork, RiskDestructive, RiskUnknown, RiskEscalation}

// Valid reports whether r is one of the risk levels.
func (r Risk) Valid() bool {
	for _, x := range risks {
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
// layer of a policy (package policy, whose doc has the matrix of risk
// against autonomy).
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

// autonomies lists every autonomy level, from most to least autonomous.
var autonomies = []Autonomy{FullAuto, Supervised, Cautious, Manual}

// ParseAutonomy returns the level named s, or an error listing the levels.
func ParseAutonomy(s string) (Autonomy, error) {
	for _, a := range autonomies {
		if string(a) == s {
			return a, nil
		}
	}
	return "", fmt.Errorf("unknown autonomy level %q (want one of full_auto, supervised, cautious, manual)", s)
}
