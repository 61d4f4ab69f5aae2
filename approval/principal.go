package approval

import (
	"encoding/json"
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

// Principals the runtime itself decides as.
var (
	// Runtime is the runtime deciding on its own (an unknown tool, invalid
	// arguments, an expiry, a used approval).
	Runtime = Principal{Kind: PrincipalRuntime}
	// Default is who allows a call when no source objected ("runtime:default").
	Default = Principal{Kind: PrincipalRuntime, Name: "default"}
	// ShellOpaque is the built-in policy rule that asks about a shell
	// command whose programs the analysis cannot see ("rule:shell-opaque").
	ShellOpaque = Principal{Kind: PrincipalRule, Name: "shell-opaque"}
)

// IsZero reports whether p is the zero Principal (no one).
func (p Principal) IsZero() bool { return p == Principal{} }

// maxPrincipalJSON bounds the encoded size of one principal read from JSON.
const maxPrincipalJSON = 4 << 10

// UnmarshalJSON reads a principal as written by this version, an object
// {"kind": "rule", "name": "no-rm"}, or as written before principals were
// typed, its text form "rule:no-rm" (see [PrincipalOf]). It fails on input
// over 4 KiB or an object whose kind is not one of the kinds above.
func (p *Principal) UnmarshalJSON(b []byte) error {
	if len(b) > maxPrincipalJSON {
		return fmt.Errorf("approval: principal: %d bytes, more than %d", len(b), maxPrincipalJSON)
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*p = PrincipalOf(s)
		return nil
	}
	var o struct {
		Kind PrincipalKind `json:"kind"`
		Name string        `json:"name"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return fmt.Errorf("approval: principal: want {\"kind\": ..., \"name\": ...} or \"kind:name\": %w", err)
	}
	if o.Kind != "" && !o.Kind.Valid() {
		return fmt.Errorf("approval: principal: kind %q is not hook, rule, autonomy, person, runtime or flag", o.Kind)
	}
	*p = Principal{Kind: o.Kind, Name: o.Name}
	return nil
}

// PrincipalOf reads the text form of a principal leniently, for text that a
// host or an older version wrote: "kind:name" with a known kind is that
// principal; "" is an unnamed person; "default" is [Default]; any other text
// (a bare user name, "alice (by root with --admin)") names a person. Use
// [ParsePrincipal] to reject text that is not "kind:name".
func PrincipalOf(s string) Principal {
	switch s {
	case "":
		return Principal{Kind: PrincipalPerson}
	case "default":
		return Default
	}
	if kind, name, ok := strings.Cut(s, ":"); ok && PrincipalKind(kind).Valid() {
		return Principal{Kind: PrincipalKind(kind), Name: name}
	}
	if PrincipalKind(s).Valid() {
		return Principal{Kind: PrincipalKind(s)}
	}
	return Principal{Kind: PrincipalPerson, Name: s}
}
