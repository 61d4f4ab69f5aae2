package claudegate

import (
	"github.com/tollgate-dev/tollgate/hooks/claudecode"
	"github.com/tollgate-dev/tollgate/internal/claudenames"
)

// CodexAnswer returns a answered to event ev in Codex's dialect (Codex
// CLI's hooks, as of 0.169.0). Codex reads the same hook JSON, but its
// PreToolUse has no ask and it fails open: a hook that asks, exits 1,
// prints what it cannot read or times out lets the command run. So:
//
//   - every deny of PreToolUse or PermissionRequest is the JSON deny and
//     exit code 2 with the reason on stderr, each of which Codex reads as
//     a block (the model sees "Command blocked by PreToolUse hook:
//     <reason>");
//   - an ask (which the bridge gives only for Claude Code) is a deny that
//     says a person must approve the call;
//   - an allow is no objection; an allow with updatedInput (arguments a
//     person edited) is a deny that names the edit, since Codex would run
//     the command it proposed;
//   - PostToolUse's updatedToolOutput is dropped: Codex does not replace
//     a result.
//
// Other answers are unchanged.
func CodexAnswer(ev claudecode.Event, a Answer) Answer {
	if a.Output == nil {
		return a
	}
	sp := a.Output.Specific
	switch {
	case sp != nil && sp.PermissionDecision == "ask":
		return codexDeny(ev, "a person must approve this call, and Codex cannot ask: "+sp.PermissionDecisionReason)
	case sp != nil && sp.PermissionDecision == "deny":
		return codexDeny(ev, sp.PermissionDecisionReason)
	case sp != nil && sp.PermissionDecision == "allow" && len(sp.UpdatedInput) > 0:
		return codexDeny(ev, "a person approved this call with edited arguments, which Codex cannot run in its place: "+string(sp.UpdatedInput))
	case sp != nil && sp.PermissionDecision == "allow":
		return Answer{}
	case sp != nil && sp.Decision != nil && sp.Decision.Behavior == "deny":
		return codexDeny(ev, sp.Decision.Message)
	case sp != nil && len(sp.UpdatedToolOutput) > 0:
		// The bridge's PostToolUse answer holds nothing else.
		return Answer{Exit: a.Exit, Stderr: a.Stderr}
	}
	return a
}

// codexDeny is Codex's deny of ev's call: the JSON and exit code 2 with
// the reason on stderr. Events other than PreToolUse and
// PermissionRequest keep deny's answer (a block, or a message).
func codexDeny(ev claudecode.Event, reason string) Answer {
	if ev == "" {
		ev = claudenames.PreToolUse
	}
	a := deny(ev, reason)
	if ev == claudenames.PreToolUse || ev == claudenames.PermissionRequest {
		a.Exit, a.Stderr = 2, reason
	}
	return a
}
