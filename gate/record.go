package gate

import (
	"encoding/json"
	"time"

	"github.com/tollgate-dev/tollgate/tool"
)

// Outcome classifies what happened to one tool call.
type Outcome string

// Tool call outcomes, in pipeline order (docs/architecture.md).
const (
	// OutcomeUnknownTool: no tool has the name the model used (step 1).
	OutcomeUnknownTool Outcome = "unknown_tool"
	// OutcomeInvalid: the arguments failed the tool's input schema (step 2, and
	// again after a rewrite or an edit).
	OutcomeInvalid Outcome = "invalid"
	// OutcomeShortCircuit: a BeforeTool hook supplied the result (step 3).
	OutcomeShortCircuit Outcome = "short_circuit"
	// OutcomeDenied: a hook result that is an error, or the authorization step, denied it.
	OutcomeDenied Outcome = "denied"
	// OutcomeDeclined: a person (or an answerer) declined a pending request.
	OutcomeDeclined Outcome = "declined"
	// OutcomeExpired: the pending request expired before it was answered.
	OutcomeExpired Outcome = "expired"
	// OutcomePending: the call waits for an answer (not a result).
	OutcomePending Outcome = "pending"
	// OutcomeAllowed: the tool ran, allowed without asking anyone.
	OutcomeAllowed Outcome = "allowed"
	// OutcomeApproved: the tool ran after an answer approved it.
	OutcomeApproved Outcome = "approved"
)

// Decision records who decided a call's fate and why (step 9 of the pipeline).
type Decision struct {
	Outcome Outcome `json:"outcome"`
	// By is who decided: a hook by name, a policy rule by ID, an autonomy
	// level, a person who answered, a flag that answers for everyone, or
	// the runtime ([approval.Runtime] for an unknown tool or invalid
	// arguments, [approval.Default] when nothing objected). In JSON an object
	// {"kind": "rule", "name": "no-rm"}; its text form is By.String().
	// States and records written before it was typed hold the text form,
	// which is still read ([tool.Principal.UnmarshalJSON]).
	By tool.Principal `json:"by"`
	// Actor, when not zero, is who decided on By's behalf: an administrator
	// who answered for the person named in By (the "act" claim of RFC 8693,
	// section 4.1; see [tool.Answer.Actor]). An audit sees both.
	Actor tool.Principal `json:"actor,omitzero"`
	// Reason is the deciding source's reason.
	Reason string `json:"reason,omitempty"`
	// Votes lists every source that had a say, in the order they were heard.
	// On a call taken up again after an answer, every source is heard again
	// and the answer's vote follows the vote of the source that asked (the
	// hook, or the last authorizer for an authorization's or a tool's request).
	Votes []tool.Vote `json:"votes,omitempty"`
	// Shadow lists what the policies' shadow rules would have voted
	// (an authorizer with a method AuthorizeShadow, as a policy has):
	// beside the decision, never part of it.
	Shadow []tool.Vote `json:"shadow,omitempty"`
}

// Record is the record of one tool call: what the caller asked, what ran,
// what came back, and who decided.
type Record struct {
	// RunID names the run (or the session of an agent tollgate does not
	// run) the call belongs to.
	RunID string `json:"runId"`
	// Source and Principal are who asked for the call ([Call]): the kind of
	// program and the principal; empty for the agent's own calls made
	// before they were recorded.
	Source    Source         `json:"source,omitempty"`
	Principal tool.Principal `json:"principal,omitzero"`
	// ID is the call's ID, as the model gave it or as the agent made it
	// ("call_" and hex digits) when the model gave none.
	ID string `json:"id"`
	// Name is the tool's name as the model called it.
	Name string `json:"name"`
	// Turn is the model turn (1-based) that asked for the call.
	Turn int `json:"turn"`
	// RequestedArgs are the arguments as the model wrote them (also what the
	// transcript keeps).
	RequestedArgs json.RawMessage `json:"requestedArgs"`
	// Args are the arguments as executed, after rewrites and edits; equal to
	// RequestedArgs when nothing changed them.
	Args json.RawMessage `json:"args"`
	// RequestedDigest and ArgsDigest are approval.Digest of the two.
	RequestedDigest string `json:"requestedDigest"`
	ArgsDigest      string `json:"argsDigest"`
	// Output, IsError and Metadata are the final result, after the AfterTool chain.
	Output   string         `json:"output"`
	IsError  bool           `json:"isError,omitempty"`
	Metadata map[string]any `json:"metadata,omitempty"`
	// Hints are the tool's hints the call was decided with (the strictest
	// for an untrusted MCP server's tool); nil when the tool has none or
	// was not found. `tollgate policy replay` judges a rule on hints with
	// them.
	Hints *tool.Hints `json:"hints,omitempty"`
	// Ran reports whether the tool itself executed (here, or by the caller
	// that reported its result).
	Ran bool `json:"ran"`
	// ReplacedBy names the AfterTool hooks that replaced the result, in order.
	ReplacedBy []string `json:"replacedBy,omitempty"`
	// Decision is who decided whether the call ran, how, why, and every
	// vote that led there.
	Decision Decision `json:"decision"`
	// Started is when the pipeline began for this call; Duration is how long the
	// whole pipeline took (in JSON: nanoseconds).
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration"`
}

// Origin says which pipeline step raised a pending request.
type Origin string

// Origins of pending requests.
const (
	OriginHook          Origin = "hook"
	OriginAuthorization Origin = "authorization"
	OriginTool          Origin = "tool"
)

// Pending is a tool call suspended on a request: what [Gate.Decide] needs,
// with the answer, to take the call up again, in this process or another.
type Pending struct {
	Request tool.Request `json:"request"`
	Origin  Origin       `json:"origin"`
	// Hook names the BeforeTool hook that raised the request (OriginHook).
	// Once the request is approved, that hook's ask is satisfied on the retry
	// for the arguments of Digest.
	Hook string `json:"hook,omitempty"`
	// Digest binds the request to the arguments it was about: for a hook's
	// request, the arguments that hook was shown; otherwise the call's.
	Digest string `json:"digest,omitempty"`
	// Args are the arguments at the time of the request.
	Args json.RawMessage `json:"args,omitempty"`
	// Votes heard before the request was raised.
	Votes []tool.Vote `json:"votes,omitempty"`
	// Shadow are the shadow rules' would-be votes heard with them, kept
	// for the record of a call that ends on the answer (declined).
	Shadow []tool.Vote `json:"shadow,omitempty"`
	// Approved, on a tool's request (OriginTool), is the approval the call
	// ran with when its tool raised the request: on the retry with the
	// answer, it answers again the ask it answered, for the arguments it was
	// given for and no others, so that the person is not asked twice. A
	// host that keeps a halted call where others can write checks it
	// against its own record of the approval before it resumes (see
	// [Approval]).
	Approved *Approval `json:"approved,omitempty"`
}

// Approval is an approval a call was allowed with, carried over the request
// its tool raised while it ran (an MCP server's elicitation with nobody to
// ask, say): the approved request (its ID, origin, the hook that asked,
// the digest of the arguments it was about) and the approving answer,
// edited arguments included. It covers one more pass of the call, the one
// with the answer to the tool's request; a request the tool raises then is
// a second pending request.
type Approval struct {
	// Request is the ID of the approved request.
	Request string `json:"request"`
	// Origin is the step that asked: OriginAuthorization or OriginHook.
	Origin Origin `json:"origin"`
	// Hook names the BeforeTool hook that asked (OriginHook).
	Hook string `json:"hook,omitempty"`
	// Digest is the digest of the arguments the request was about.
	Digest string `json:"digest"`
	// Answer is the approving answer: who approved, for whom, why, and the
	// edited arguments in its Data.
	Answer tool.Answer `json:"answer"`
}

// pending is the approved request a, as the pass that takes it up sees it.
func (a *Approval) pending() *Pending {
	return &Pending{Request: tool.Request{ID: a.Request, Kind: tool.KindApproval}, Origin: a.Origin, Hook: a.Hook, Digest: a.Digest}
}
