// Package replay evaluates a candidate policy against the tool calls
// recorded in a store and says which decisions it changes: the calls a
// person was asked about that it would allow or deny (approvals saved), the
// calls it would ask about that ran without asking (approvals added), and
// examples of each change.
//
// The recorded decision of a call is the policy's part of it: the
// strongest vote of a rule or an autonomy level in its decision record
// (allow when none voted). Hooks and people are not the policy: a call a
// hook denied counts as the rules voted, and a person's answer is kept
// beside the change (an approval saved that a person had declined is
// counted apart). Calls that never reached the policy (an unknown tool,
// arguments that failed the schema, a hook's short circuit) and calls
// still pending are skipped.
//
// A replay is deterministic: calls are read in the store's order (runs as
// stored, calls as recorded) and the report's changes and examples follow
// it. The arguments are the recorded ones (what ran, after any edit); the
// tool's hints are those its record kept (what the call was decided with),
// else an approval request's of the store, else [Options.Hints]; a tool
// with none has unknown risk, as at run time.
package replay
