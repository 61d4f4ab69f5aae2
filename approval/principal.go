package approval

import (
	"fmt"
	"strings"
)

// PrincipalKind says what kind of source decided or voted on a tool call.
type PrincipalKind string

// Principal kinds. A decision's text form is "kind:name" ("rule:no-rm",
// "person:alice"); runtime decisions have no name.
const (
	// PrincipalHook: a BeforeTool hook (seed 002), by its registered name.
	PrincipalHook PrincipalKind = "hook"
	// PrincipalRule: a policy rule, by its ID.
	PrincipalRule PrincipalKind = "rule"
	// PrincipalAutonomy: a policy's autonomy level, by the level.
	PrincipalAutonomy PrincipalKind = "autonomy"
	// PrincipalPerson: a person who answered a request, by the name the host
	// authenticated (an OS user, a token's principal).
	PrincipalPerson PrincipalKind = "person"
	// PrincipalRuntime: the runtime itself (unknown tool, invalid arguments, an
	// expiry).
	PrincipalRuntime PrincipalKind = "runtime"
	// PrincipalFlag: a command-line flag that answers for everyone
	// ("--approve=yes", "--deny").
	PrincipalFlag PrincipalKind = "flag"
)

// Valid reports whether k is one of the kinds above.
func (k PrincipalKind) Valid() bool {
	switch k {
	case PrincipalHook, PrincipalRule, PrincipalAutonomy, PrincipalPerson, PrincipalRuntime, PrincipalFlag:
		return true
	}
	return false
}

// Principal names who decided: a kind and a name. Its text form, used in
// records, events and [Verdict.By], is derived ([Principal.String]).
type Principal struct {
	Kind PrincipalKind `json:"kind"`
	Name string        `json:"name,omitempty"`
}

// String returns "kind:name", or "kind" when the name is empty.
func (p Principal) String() string {
	if p.Name == "" {
		return string(p.Kind)
	}
	return string(p.Kind) + ":" + p.Name
}

// ParsePrincipal reads the text form of a principal. Errors name the kinds
// accepted.
func ParsePrincipal(s string) (Principal, error) {
	kind, name, _ := strings.Cut(s, ":")
	p := Principal{Kind: PrincipalKind(kind), Name: name}
	if !p.Kind.Valid() {
		return Principal{}, fmt.Errorf("approval: principal %q: want kind:name with kind hook, rule, autonomy, person, runtime or flag", s)
	}
	return p, nil
}
