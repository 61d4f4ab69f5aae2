package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Kind says what a [Request] asks for.
type Kind string

// The kinds of pending request. Hosts route them (an approval to an approver, a
// question to the user); the runtime treats all kinds alike.
const (
	// KindApproval asks a person to approve (or deny, or edit) a tool call.
	KindApproval Kind = "approval"
	// KindInput asks for a value the tool needs (a password, a choice).
	KindInput Kind = "input"
	// KindAuthorization asks the user to authorize access, usually at URL (OAuth).
	KindAuthorization Kind = "authorization"
	// KindQuestion asks the user a free-form question.
	KindQuestion Kind = "question"
)

// Request is a pending, out-of-band request made by a tool call (seed 002's
// pending). It is plain, serializable data; its JSON keys are exactly id, kind,
// prompt, url, data and expiresAt.
type Request struct {
	// ID is unique among the pending requests of a run; answers are routed by it.
	ID string `json:"id"`
	// Kind says what is asked.
	Kind Kind `json:"kind"`
	// Prompt is the human-readable question.
	Prompt string `json:"prompt"`
	// URL, if set, is where the person answers (an authorization page, say).
	URL string `json:"url,omitempty"`
	// Data carries structured details (for approvals: tool, call id, arguments, digest).
	Data json.RawMessage `json:"data,omitempty"`
	// ExpiresAt, if set, is when the request stops accepting answers.
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

// Expired reports whether the request has an expiry at or before now.
func (r Request) Expired(now time.Time) bool {
	return r.ExpiresAt != nil && !now.Before(*r.ExpiresAt)
}

// Answer answers a [Request]; its JSON keys are id, ok, data and reason, and
// by, principal and actor (who answered, kept in the decision record).
//
// Who answered is [Answer.Who]: Principal when it is set, else the person
// named By. A host answering for a person may write either
// Answer{By: "alice"} or Answer{Principal: tool.Principal{Kind:
// tool.PrincipalPerson, Name: "alice"}}; an answer that is not a person's
// (a flag, a Permission hook, the runtime) sets Principal. When both are set,
// By must equal Principal.Name: the agent refuses an answer where they
// differ ([Answer.Check]) before anything runs.
type Answer struct {
	// ID is the ID of the request answered.
	ID string `json:"id"`
	// OK approves (or, for input, supplies) when true; declines when false.
	OK bool `json:"ok"`
	// Data carries the answer's value (a code, a choice) for the tool or hook
	// that asked, which reads it from its [Invocation] or the hook event's Answer.
	// For an approval request the agent itself made (a policy's ask), Data may
	// instead hold replacement arguments for the call: Data is then itself the
	// new arguments object ({"path": "b.txt"}, not wrapped in another key), and
	// the call runs with them after they are validated and authorized again.
	Data json.RawMessage `json:"data,omitempty"`
	// Reason explains a decline; the model sees it.
	Reason string `json:"reason,omitempty"`
	// By is the name of the person who answered (the name the host
	// authenticated: an OS user, a token's subject). It is a name only and
	// is never parsed: By "flag:x" is a person so named. Empty when
	// Principal says who answered, or when no one is named.
	By string `json:"by,omitempty"`
	// Principal, when not zero, is who answered, typed: a Permission hook
	// ({hook, <name>}), a flag, the runtime, or a person when the host has
	// the full principal. It takes precedence over By, which must then be
	// empty or equal to Principal.Name. In JSON an object
	// {"kind": "flag", "name": "approve"}.
	Principal Principal `json:"principal,omitzero"`
	// Actor, when not zero, is who gave the answer on the answerer's behalf:
	// an administrator answering for the person named in By (the "act" claim
	// of RFC 8693, section 4.1). The agent keeps both in the decision record.
	Actor Principal `json:"actor,omitzero"`
}

// Who returns who answered: Principal when it is not zero, else a person
// named By ({person, By}) when By is not empty, else the zero Principal (no
// one named). Every reader of an answer's answerer goes through Who.
func (a Answer) Who() Principal {
	if !a.Principal.IsZero() {
		return a.Principal
	}
	if a.By != "" {
		return Principal{Kind: PrincipalPerson, Name: a.By}
	}
	return Principal{}
}

// Check reports whether the answer names its answerer consistently: when
// both Principal and By are set, By must equal Principal.Name. The error
// quotes both. The agent checks every answer it is given before it runs
// anything.
func (a Answer) Check() error {
	if a.By != "" && !a.Principal.IsZero() && a.By != a.Principal.Name {
		return fmt.Errorf("answer %q: both by %q and principal %q were given and differ; give one, or by equal to the principal's name", a.ID, a.By, a.Principal.String())
	}
	return nil
}

// maxAnswerJSON bounds the encoded size of one answer read from JSON; the
// answer's data (replacement arguments, a value) is the bulk of it.
const maxAnswerJSON = 8 << 20

// answerJSON is the wire form of an Answer; By is read raw so that the forms
// written before (see [Answer.UnmarshalJSON]) still read.
type answerJSON struct {
	ID        string          `json:"id"`
	OK        bool            `json:"ok"`
	Data      json.RawMessage `json:"data,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	By        json.RawMessage `json:"by,omitempty"`
	Principal Principal       `json:"principal,omitzero"`
	Actor     Principal       `json:"actor,omitzero"`
}

// MarshalJSON writes the answer with its keys id, ok, data, reason, by,
// principal and actor; by and principal are left out when empty. A person's
// name in By that the legacy reading (see [Answer.UnmarshalJSON]) would take
// for a principal ("flag:x", "runtime") is written with "principal": {"kind":
// "person", "name": By} as well, so that it reads back as the same person.
func (a Answer) MarshalJSON() ([]byte, error) {
	w := answerJSON{ID: a.ID, OK: a.OK, Data: a.Data, Reason: a.Reason, Principal: a.Principal, Actor: a.Actor}
	if a.By != "" {
		b, err := json.Marshal(a.By)
		if err != nil {
			return nil, err
		}
		w.By = b
		if a.Principal.IsZero() {
			if _, legacy := legacyPrincipal(a.By); legacy {
				w.Principal = Principal{Kind: PrincipalPerson, Name: a.By}
			}
		}
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads an answer as written by this version and the forms
// written before:
//
//   - "by" an object ({"kind": "hook", "name": "gate"}), the form in which
//     By was itself a principal, reads into Principal (By stays empty);
//   - the legacy reading: "by" a string that starts with a known kind
//     ("runtime", "flag:...", "hook:...", "rule:...", "autonomy:...",
//     "person:...") and no "principal" reads as that principal, the text
//     form written when answerers were text;
//   - any other string in "by" is a person's name (By); so is every string
//     when "principal" is present.
//
// It fails on input over 8 MiB, a "by" that is neither a string nor an
// object, or a principal whose kind is unknown.
func (a *Answer) UnmarshalJSON(b []byte) error {
	if len(b) > maxAnswerJSON {
		return fmt.Errorf("answer: %d bytes, more than %d", len(b), maxAnswerJSON)
	}
	var w answerJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("answer: %w", err)
	}
	out := Answer{ID: w.ID, OK: w.OK, Data: w.Data, Reason: w.Reason, Principal: w.Principal, Actor: w.Actor}
	by := bytes.TrimSpace(w.By)
	switch {
	case len(by) == 0 || string(by) == "null":
	case by[0] == '"':
		var s string
		if err := json.Unmarshal(by, &s); err != nil {
			return fmt.Errorf("answer: by: %w", err)
		}
		if p, legacy := legacyPrincipal(s); legacy && out.Principal.IsZero() {
			out.Principal = p
		} else {
			out.By = s
		}
	case by[0] == '{':
		var p Principal
		if err := json.Unmarshal(by, &p); err != nil {
			return fmt.Errorf("answer: by: %w", err)
		}
		if !out.Principal.IsZero() && !p.IsZero() && p != out.Principal {
			return fmt.Errorf("answer: by %s and principal %s were both given and differ", p, out.Principal)
		}
		if out.Principal.IsZero() {
			out.Principal = p
		}
	default:
		return fmt.Errorf("answer: by: want a person's name (a string) or a principal object, got %.40s", by)
	}
	*a = out
	return nil
}

// legacyPrincipal reads s as the text form of a principal if it starts with
// a known kind: "kind" alone or "kind:name".
func legacyPrincipal(s string) (Principal, bool) {
	kind, name, _ := strings.Cut(s, ":")
	if !PrincipalKind(kind).Valid() {
		return Principal{}, false
	}
	return Principal{Kind: PrincipalKind(kind), Name: name}, true
}

// WaitFunc blocks until req is answered or ctx ends (seed 002's wait_for /
// wait_for_ctx). It must honour ctx's deadline and return ctx.Err() then.
type WaitFunc func(ctx context.Context, req Request) (Answer, error)
