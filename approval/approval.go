// Package approval decides whether a tool call may run: allow, deny or ask a
// person (seed 000's "authorization check" and "approval policies"; seed 002's
// permission gate). The agent runs every [Authorizer] it is given on the final
// tool and arguments of each call (after the BeforeTool hooks) and combines
// their verdicts with the hooks' votes: deny > ask > allow ([Strongest]).
//
// An "ask" becomes a pending [tool.Request] of kind approval, bound to the call by
// its tool name, call ID and arguments [Digest]. An answer may approve, decline
// with a reason the model sees, or approve edited arguments, which are validated
// and authorized again before anything runs.
//
// The policy language that most authorizers are written in (YAML policies,
// Claude Code's permission rules, the shell analysis of bash scripts) is
// package policy, above this one: the vocabulary here pulls no parser.
//
// A decision about a path holds for the file the path led to at that
// moment. [CheckFile] judges a call again when its tool has opened the file
// (builtin.Options.CheckFile), with the path replaced by the opened file's
// real one, so that a symbolic link changed in between cannot lead the call
// elsewhere; it also refuses files with other names (hard links) where an
// authorizer judges the tool by path (an authorizer with a method
// JudgesPaths(tool string) (by tool.Principal, ok bool), as a policy has).
//
// Verdicts name their source as a [tool.Principal]: a rule by its ID, an
// autonomy level, the runtime. Durable stores for halted runs and
// approvals live in the subpackage store, which this package does not
// import.
package approval

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tollgate-dev/tollgate/tool"
)

// Effect is what an authorization source says about a call: allow, ask or
// deny. (Who decided a call's fate, and why, is recorded in gate.Decision;
// a person's answer to an approval is store.Answer.)
type Effect string

// The decisions, from weakest to strongest.
const (
	Allow Effect = "allow"
	Ask   Effect = "ask"
	Deny  Effect = "deny"
)

// Valid reports whether d is one of Allow, Ask, Deny.
func (d Effect) Valid() bool { return d == Allow || d == Ask || d == Deny }

func (d Effect) rank() int {
	switch d {
	case Deny:
		return 3
	case Ask:
		return 2
	case Allow:
		return 1
	}
	return 0
}

// stronger reports whether d takes precedence over o (deny > ask > allow).
func (d Effect) stronger(o Effect) bool { return d.rank() > o.rank() }

// Call is what an [Authorizer] judges: the final tool and arguments of one call.
type Call struct {
	// Tool is the tool's name.
	Tool string
	// CallID is the tool call ID.
	CallID string
	// Args are the arguments that will execute (a JSON object).
	Args json.RawMessage
	// Hints are the tool's hints; nil means unknown (treat as mutating).
	Hints *tool.Hints
	// RunID names the run (or the session of an agent tollgate does not
	// run).
	RunID string
	// Source is the kind of program that asks ("agent", "claude-code",
	// "codex", "mcp"; see gate.Source); empty when the caller did not say.
	Source string
	// Principal is who asks: the run's owner, an agent token's principal,
	// an MCP client's token; zero when the caller did not say.
	Principal tool.Principal
}

// Verdict is an authorization source's decision with its reason and source.
type Verdict struct {
	Decision Effect `json:"decision"`
	// Reason explains the decision; on deny, the model sees it.
	Reason string `json:"reason,omitempty"`
	// By is the source: a rule by its ID, an autonomy level, a hook by its
	// name ([tool.Principal]). An authorizer that leaves it zero is named
	// "authorizer#<n>" (kind rule) by the agent.
	By tool.Principal `json:"by"`
}

// Authorizer decides about a call. It must be safe for concurrent use. A returned
// error denies the call (fail closed) with the error's text as the reason.
type Authorizer interface {
	Authorize(ctx context.Context, c Call) (Verdict, error)
}

// AuthorizerFunc adapts a function to [Authorizer].
type AuthorizerFunc func(ctx context.Context, c Call) (Verdict, error)

// Authorize implements [Authorizer].
func (f AuthorizerFunc) Authorize(ctx context.Context, c Call) (Verdict, error) { return f(ctx, c) }

// Strongest returns the verdict that wins among vs under deny > ask > allow; among
// equals, the first. With no verdicts it returns an Allow by [Default].
func Strongest(vs ...Verdict) Verdict {
	best := Verdict{Decision: Allow, By: Default}
	found := false
	for _, v := range vs {
		if !found || v.Decision.stronger(best.Decision) {
			best, found = v, true
		}
	}
	return best
}

// Digest returns "sha256:" and the hex SHA-256 of the canonical form of the JSON
// value args (object keys sorted, no insignificant space, numbers as written),
// so that two encodings of the same arguments have the same digest. Input that is not valid JSON is
// hashed as is.
func Digest(args json.RawMessage) string {
	b := []byte(args)
	if len(args) > 0 && canonical(args) {
		// Already in canonical form (as models write small arguments):
		// decoding and encoding again would give the same bytes.
		return digestOf(b)
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(args))
	d.UseNumber() // numbers keep every digit: 12345678901234567890 and ...891 differ
	if err := d.Decode(&v); err == nil && !d.More() {
		if c, err := json.Marshal(v); err == nil {
			b = c
		}
	}
	if len(args) == 0 {
		b = []byte("{}")
	}
	return digestOf(b)
}

// digestOf is "sha256:" and the hex SHA-256 of b, built in one allocation.
func digestOf(b []byte) string {
	const prefix = "sha256:"
	sum := sha256.Sum256(b)
	var out [len(prefix) + 2*sha256.Size]byte
	copy(out[:], prefix)
	hex.Encode(out[len(prefix):], sum[:])
	return string(out[:])
}

// RequestData is the Data of an approval [tool.Request] made by the agent: what
// the person is asked to approve.
type RequestData struct {
	// Tool is the name of the tool the call is for.
	Tool string `json:"tool"`
	// CallID is the tool call's ID.
	CallID string `json:"callId"`
	// Args are the call's arguments as they will run (a JSON object).
	Args json.RawMessage `json:"args"`
	// Digest is [Digest] of Args ("sha256:" and 64 hex digits): an answer
	// is bound to it. In JSON "argsDigest", the name the HTTP API and the
	// command line give it; data written under the older name "digest" is
	// read too (see [RequestData.UnmarshalJSON]).
	Digest string `json:"argsDigest"`
	// Reason and By say which source asked and why (By: an object, or in
	// data written before principals were typed, its text form).
	Reason string         `json:"reason,omitempty"`
	By     tool.Principal `json:"by"`
	// Hints are the tool's hints the gates used (read-only, destructive,
	// idempotent, open world); nil when the tool declares none.
	Hints *tool.Hints `json:"hints,omitempty"`
	// Schema is the tool's input schema (JSON Schema, as the tool declares
	// it), so that whoever answers can show it and check edited arguments
	// against it before approving: the agent validates them again anyway,
	// but an edit that fails then has used the approval up. Nil when the
	// tool declares none.
	Schema *jsonschema.Schema `json:"schema,omitempty"`
}

// UnmarshalJSON decodes d from JSON. The digest is "argsDigest", or in data
// stored before it had that name "digest"; when both are present,
// "argsDigest" wins.
func (d *RequestData) UnmarshalJSON(b []byte) error {
	type plain RequestData // without this method
	var v struct {
		plain
		Old string `json:"digest"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*d = RequestData(v.plain)
	if d.Digest == "" {
		d.Digest = v.Old
	}
	return nil
}

// ParseRequestData decodes the Data of an approval request.
func ParseRequestData(r tool.Request) (RequestData, error) {
	var d RequestData
	if len(r.Data) == 0 {
		return d, fmt.Errorf("request %s has no data", r.ID)
	}
	if err := json.Unmarshal(r.Data, &d); err != nil {
		return d, fmt.Errorf("request %s: data: %w", r.ID, err)
	}
	return d, nil
}
