package tool

import (
	"encoding/json"
	"fmt"
	"strings"
)

// PrincipalKind says what kind of source decided, voted on or answered for a
// tool call.
type PrincipalKind string

// Principal kinds. A principal's text form is "kind:name" ("rule:no-rm",
// "person:alice"); runtime decisions may have no name.
const (
	// PrincipalHook: a BeforeTool or Permission hook (seed 002), by its
	// registered name.
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

// Principal names who decided, voted or answered: a kind and a name. Package
// approval calls it Principal (an alias); it is defined here, at the
// bottom of the architecture, so that an [Answer], a hook's vote and a store
// record carry it typed. Its text form, for people and logs, is derived
// ([Principal.String]); in JSON it is an object {"kind": "rule", "name":
// "no-rm"}.
type Principal struct {
	Kind PrincipalKind `json:"kind"`
	Name string        `json:"name,omitempty"`
}

// String returns "kind:name", "kind" when the name is empty, and "" for the
// zero Principal.
func (p Principal) String() string {
	if p.Name == "" {
		return string(p.Kind)
	}
	return string(p.Kind) + ":" + p.Name
}

// IsZero reports whether p is the zero Principal (no one). encoding/json's
// omitzero leaves such a field out.
func (p Principal) IsZero() bool { return p == Principal{} }

// ParsePrincipal reads the text form of a principal strictly: "kind:name" or
// "kind" with one of the kinds above. Errors name the kinds accepted.
func ParsePrincipal(s string) (Principal, error) {
	kind, name, _ := strings.Cut(s, ":")
	p := Principal{Kind: PrincipalKind(kind), Name: name}
	if !p.Kind.Valid() {
		return Principal{}, fmt.Errorf("principal %q: want kind:name with kind hook, rule, autonomy, person, runtime or flag", s)
	}
	return p, nil
}

// PrincipalOf reads the text form of a principal leniently, for text that a
// host or an older version wrote: "kind:name" or "kind" with a known kind is
// that principal; "" is an unnamed person; "default" is the runtime's
// default ("runtime:default"); any other text (a bare user name) names a
// person. Use [ParsePrincipal] to reject text that is not "kind:name".
func PrincipalOf(s string) Principal {
	switch s {
	case "":
		return Principal{Kind: PrincipalPerson}
	case "default":
		return Principal{Kind: PrincipalRuntime, Name: "default"}
	}
	if kind, name, ok := strings.Cut(s, ":"); ok && PrincipalKind(kind).Valid() {
		return Principal{Kind: PrincipalKind(kind), Name: name}
	}
	if PrincipalKind(s).Valid() {
		return Principal{Kind: PrincipalKind(s)}
	}
	return Principal{Kind: PrincipalPerson, Name: s}
}

// maxPrincipalJSON bounds the encoded size of one principal read from JSON.
const maxPrincipalJSON = 4 << 10

// UnmarshalJSON reads a principal as written by this version, an object
// {"kind": "rule", "name": "no-rm"}, or as written before principals were
// typed, its text form "rule:no-rm" (see [PrincipalOf]; the empty string is
// the zero Principal). It fails on input over 4 KiB or an object whose kind
// is not one of the kinds above.
func (p *Principal) UnmarshalJSON(b []byte) error {
	if len(b) > maxPrincipalJSON {
		return fmt.Errorf("principal: %d bytes, more than %d", len(b), maxPrincipalJSON)
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		if s == "" {
			*p = Principal{}
		} else {
			*p = PrincipalOf(s)
		}
		return nil
	}
	var o struct {
		Kind PrincipalKind `json:"kind"`
		Name string        `json:"name"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return fmt.Errorf("principal: want {\"kind\": ..., \"name\": ...} or \"kind:name\": %w", err)
	}
	if o.Kind != "" && !o.Kind.Valid() {
		return fmt.Errorf("principal: kind %q is not hook, rule, autonomy, person, runtime or flag", o.Kind)
	}
	*p = Principal{Kind: o.Kind, Name: o.Name}
	return nil
}

// VoteDecision is what one source said about a tool call.
type VoteDecision string

// Vote decisions: the three effects of authorization (allow, ask, deny) and
// the two things a BeforeTool hook can do besides (seed 002: rewrite the
// arguments, or supply the result).
const (
	VoteAllow   VoteDecision = "allow"
	VoteAsk     VoteDecision = "ask"
	VoteDeny    VoteDecision = "deny"
	VoteRewrite VoteDecision = "rewrite"
	VoteResult  VoteDecision = "result"
)

// Valid reports whether d is one of the decisions above.
func (d VoteDecision) Valid() bool {
	switch d {
	case VoteAllow, VoteAsk, VoteDeny, VoteRewrite, VoteResult:
		return true
	}
	return false
}

// Vote is one source's say on a tool call: a hook's, a policy rule's, an
// autonomy level's, a person's answer. It is the one vote type: the gate
// keeps the votes of a call in its decision record (gate.Decision), in
// the order they were heard.
//
// In JSON: {"source": {"kind": "hook", "name": "audit"}, "decision": "allow",
// "reason": "...", "actor": {...}}; records written before principals were
// typed hold the source's text form ("hook:audit"), which is still read.
type Vote struct {
	// Source is who voted.
	Source Principal `json:"source"`
	// Actor, when not zero, is who gave the vote on the source's behalf: an
	// administrator who answered for the person named in Source (the "act"
	// claim of RFC 8693, section 4.1). Zero when the source acted itself.
	Actor Principal `json:"actor,omitzero"`
	// Decision is what the source said.
	Decision VoteDecision `json:"decision"`
	Reason   string       `json:"reason,omitempty"`
}
