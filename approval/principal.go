package approval

import "github.com/tollgate-dev/tollgate/tool"

// Principal names who decided, voted or answered: a kind and a name
// ({"kind": "rule", "name": "no-rm"} in JSON, "rule:no-rm" as text). It is
// [tool.Principal], defined at the bottom of the architecture so that
// answers, hooks' votes and store records carry it typed.
type Principal = tool.Principal

// PrincipalKind says what kind of source decided or voted on a tool call; see
// [tool.PrincipalKind].
type PrincipalKind = tool.PrincipalKind

// Principal kinds (see the constants of package tool).
const (
	// PrincipalHook: a BeforeTool or Permission hook (seed 002), by its
	// registered name.
	PrincipalHook = tool.PrincipalHook
	// PrincipalRule: a policy rule, by its ID.
	PrincipalRule = tool.PrincipalRule
	// PrincipalAutonomy: a policy's autonomy level, by the level.
	PrincipalAutonomy = tool.PrincipalAutonomy
	// PrincipalPerson: a person who answered a request, by the name the host
	// authenticated.
	PrincipalPerson = tool.PrincipalPerson
	// PrincipalRuntime: the runtime itself.
	PrincipalRuntime = tool.PrincipalRuntime
	// PrincipalFlag: a command-line flag that answers for everyone.
	PrincipalFlag = tool.PrincipalFlag
)

// Vote is one source's say on a tool call, kept in the agent's decision
// record; see [tool.Vote].
type Vote = tool.Vote

// VoteDecision is what one source said: allow, ask, deny, rewrite or result;
// see [tool.VoteDecision].
type VoteDecision = tool.VoteDecision

// Vote decisions (see the constants of package tool).
const (
	VoteAllow   = tool.VoteAllow
	VoteAsk     = tool.VoteAsk
	VoteDeny    = tool.VoteDeny
	VoteRewrite = tool.VoteRewrite
	VoteResult  = tool.VoteResult
)

// ParsePrincipal reads the text form of a principal strictly; see
// [tool.ParsePrincipal].
func ParsePrincipal(s string) (Principal, error) { return tool.ParsePrincipal(s) }

// PrincipalOf reads the text form of a principal leniently ("" is an unnamed
// person, "default" is [Default], a bare name is a person's); see
// [tool.PrincipalOf].
func PrincipalOf(s string) Principal { return tool.PrincipalOf(s) }

// Principals the runtime itself decides as.
var (
	// Runtime is the runtime deciding on its own (an unknown tool, invalid
	// arguments, an expiry, a used approval).
	Runtime = Principal{Kind: PrincipalRuntime}
	// Default is who allows a call when no source objected ("runtime:default").
	Default = Principal{Kind: PrincipalRuntime, Name: "default"}
)
