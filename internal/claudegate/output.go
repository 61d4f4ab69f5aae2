package claudegate

import (
	"encoding/json"

	"github.com/tollgate-dev/tollgate/hooks/claudecode"
	"github.com/tollgate-dev/tollgate/internal/claudenames"
)

// Output is a hook's JSON answer as Claude Code documents it: the
// universal fields, a top-level decision for the events that block with
// one (UserPromptSubmit, PostToolUse, Stop), and the event's
// hookSpecificOutput.
type Output struct {
	Continue      *bool     `json:"continue,omitempty"`
	StopReason    string    `json:"stopReason,omitempty"`
	SystemMessage string    `json:"systemMessage,omitempty"`
	Decision      string    `json:"decision,omitempty"`
	Reason        string    `json:"reason,omitempty"`
	Specific      *Specific `json:"hookSpecificOutput,omitempty"`
}

// Specific is hookSpecificOutput: for PreToolUse permissionDecision
// (allow, deny, ask), its reason and updatedInput (which replaces the
// whole input); for PermissionRequest decision; for PostToolUse
// updatedToolOutput; additionalContext for the events that take it.
type Specific struct {
	HookEventName            claudecode.Event `json:"hookEventName"`
	PermissionDecision       string           `json:"permissionDecision,omitempty"`
	PermissionDecisionReason string           `json:"permissionDecisionReason,omitempty"`
	UpdatedInput             json.RawMessage  `json:"updatedInput,omitempty"`
	AdditionalContext        string           `json:"additionalContext,omitempty"`
	UpdatedToolOutput        json.RawMessage  `json:"updatedToolOutput,omitempty"`
	Decision                 *Permission      `json:"decision,omitempty"`
}

// Permission is PermissionRequest's decision: behavior allow or deny, the
// edited input, and the message the model sees on deny.
type Permission struct {
	Behavior     string          `json:"behavior"`
	UpdatedInput json.RawMessage `json:"updatedInput,omitempty"`
	Message      string          `json:"message,omitempty"`
}

// Answer is what the hook tells Claude Code: Output as JSON on stdout (nil:
// nothing, i.e. no opinion), and the exit code, 0 or 2 (blocking, with
// Stderr as the reason when the JSON gives none). The http hook type has
// no exit code: there, Output alone carries the decision, and every
// Answer whose Exit is 2 also says deny in its Output.
type Answer struct {
	Output *Output
	Exit   int
	Stderr string
}

// none is the answer with no opinion.
func none() Answer { return Answer{} }

// deny is the answer that refuses what ev is about with reason (the model
// sees it): PreToolUse's permissionDecision deny, PermissionRequest's
// behavior deny, a block for UserPromptSubmit and PostToolUse. Stop and the
// session events are never blocked by a deny (a blocked Stop would keep
// the session going): they get no opinion, with the reason as a
// systemMessage.
func deny(ev claudecode.Event, reason string) Answer {
	switch ev {
	case claudenames.PreToolUse:
		return Answer{Output: &Output{Specific: &Specific{HookEventName: ev, PermissionDecision: "deny", PermissionDecisionReason: reason}}}
	case claudenames.PermissionRequest:
		return Answer{Output: &Output{Specific: &Specific{HookEventName: ev, Decision: &Permission{Behavior: "deny", Message: reason}}}}
	case claudenames.UserPromptSubmit, claudenames.PostToolUse, claudenames.PostToolUseFailure:
		return Answer{Output: &Output{Decision: "block", Reason: reason}}
	}
	return Answer{Output: &Output{SystemMessage: reason}}
}

// failed is the answer of a hook that could not reach a decision: a deny
// (fail closed) with exit code 2, so that Claude Code blocks the call even
// if it did not read the JSON. Events that a block would harm (Stop,
// SessionStart, SessionEnd) get exit code 1, a non-blocking error.
func failed(ev claudecode.Event, reason string) Answer {
	a := deny(ev, reason)
	a.Stderr = reason
	switch ev {
	case claudenames.Stop, claudenames.SessionStart, claudenames.SessionEnd, claudenames.PostToolUse, claudenames.PostToolUseFailure:
		a.Exit = 1
	default:
		a.Exit = 2
	}
	return a
}

// allow is PreToolUse's allow, with input when the arguments changed.
func allow(reason string, input json.RawMessage) Answer {
	return Answer{Output: &Output{Specific: &Specific{HookEventName: claudenames.PreToolUse, PermissionDecision: "allow", PermissionDecisionReason: reason, UpdatedInput: input}}}
}

// ask is PreToolUse's ask: Claude Code's own prompt, with reason.
func ask(reason string) Answer {
	return Answer{Output: &Output{Specific: &Specific{HookEventName: claudenames.PreToolUse, PermissionDecision: "ask", PermissionDecisionReason: reason}}}
}

// Failed is the answer of a hook that could not read its input or reach a
// decision for event ev (empty when unknown: then it is PreToolUse's,
// the event a failure must not let through): a deny with reason and exit
// code 2 where blocking is safe. See [Answer].
func Failed(ev claudecode.Event, reason string) Answer {
	if ev == "" {
		ev = claudenames.PreToolUse
	}
	return failed(ev, reason)
}
