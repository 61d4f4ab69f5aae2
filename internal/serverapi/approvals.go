package serverapi

import (
	"encoding/json"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/builtin"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// ApprovalPage is GET /v1/approvals.
type ApprovalPage struct {
	Approvals []ApprovalView `json:"approvals"`
	Next      string         `json:"next,omitempty"`
}

// ApprovalView is an approval as the API shows it: what a person needs to
// decide, and how it was decided.
type ApprovalView struct {
	ID     string       `json:"id"`
	RunID  string       `json:"runId"`
	Agent  string       `json:"agent,omitempty"`
	Status store.Status `json:"status"`
	Kind   tool.Kind    `json:"kind"`
	// Tool and CallID name the tool call.
	Tool   string `json:"tool"`
	CallID string `json:"callId"`
	// Prompt is the request's question, as the agent wrote it.
	Prompt string `json:"prompt"`
	// Arguments are the call's arguments; ArgumentsPretty the same,
	// indented for display.
	Arguments       json.RawMessage `json:"arguments,omitempty"`
	ArgumentsPretty string          `json:"argumentsPretty,omitempty"`
	// ArgsDigest is the digest a decision must send back: the approval
	// covers these arguments only.
	ArgsDigest string      `json:"argsDigest"`
	Hints      *tool.Hints `json:"hints,omitempty"`
	// Risk is the call's risk: as the run's policy file judges it (its
	// risk declarations, then the hints; RiskFrom says which: "hints" or
	// "declared:GLOB"), else from the hints alone (approval.RiskOf).
	Risk     approval.Risk `json:"risk,omitempty"`
	RiskFrom string        `json:"riskFrom,omitempty"`
	// RuleAt is where the rule that asked is written in the run's policy
	// file ("policy.yaml:12:5"), when it is one.
	RuleAt string `json:"ruleAt,omitempty"`
	// RulePolicy, with RuleAt, is the agent whose policy file GET
	// /v1/agents/{name}/policy shows, RuleAt's file as it is now; empty
	// when the server's configuration no longer names that file.
	RulePolicy string `json:"rulePolicy,omitempty"`
	// AskedBy is the rule, hook or autonomy level that asked
	// ("rule:review-notes"), and Reason why.
	AskedBy string `json:"askedBy,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// RunOwner is the principal who started the run.
	RunOwner  string     `json:"runOwner,omitempty"`
	CreatedAt time.Time  `json:"createdAt"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	// SecondsLeft is the time left to decide, in whole seconds, when the
	// request expires and is still pending.
	SecondsLeft *int64 `json:"secondsLeft,omitempty"`
	// InputSchema is the tool's JSON Schema, to edit the arguments against.
	InputSchema *jsonschema.Schema `json:"inputSchema,omitempty"`
	// DecidedBy, Actor, DecisionReason, DecidedAt and EditedArguments record
	// the decision. DecidedBy is who decided ({"kind": "person", "name":
	// "alice"}); Actor, present only when someone acted on DecidedBy's
	// behalf (an administrator at the command line), is who did.
	DecidedBy       tool.Principal  `json:"decidedBy,omitzero"`
	Actor           tool.Principal  `json:"actor,omitzero"`
	DecisionReason  string          `json:"decisionReason,omitempty"`
	DecidedAt       *time.Time      `json:"decidedAt,omitempty"`
	EditedArguments json.RawMessage `json:"editedArguments,omitempty"`
	// Questions, on a request of kind question, are the questions the model
	// asks (each with its options and whether it takes several answers):
	// what a person answers with a decision's answer.
	Questions []builtin.Question `json:"questions,omitempty"`
	// Context is what the run says around the call: its source, prompt,
	// workspace, the model's stated intent and the earlier decisions on the
	// same tool; absent when the run cannot be read.
	Context *RunContext `json:"context,omitempty"`
}

// DecisionRequest is the body of POST /v1/approvals/{id}/decision. Who
// decides is the authenticated principal, never a field.
type DecisionRequest struct {
	// Decision is "approve" or "deny".
	Decision string `json:"decision"`
	// Reason explains the decision; on deny, the model sees it.
	Reason string `json:"reason,omitempty"`
	// EditedArgs, on approve, replace the call's arguments (a JSON object,
	// validated against the tool's input schema here and authorized again
	// when the run goes on).
	EditedArgs json.RawMessage `json:"editedArgs,omitempty"`
	// ArgsDigest must be the argsDigest the person was shown: what they saw
	// is what runs (412 otherwise). Required to approve.
	ArgsDigest string `json:"argsDigest"`
	// Answer, on approve, answers a request of kind question (required
	// there): {"answers": [["choice"], ...]} with one list per question, or
	// a shorter form builtin.ParseQuestionAnswer reads (["a", "b"], or "a"
	// for one question). An option's label or the person's own words; 422
	// when it does not fit the questions. On an input request, the value.
	Answer json.RawMessage `json:"answer,omitempty"`
}
