package serverapi

// PolicyFileView is GET /v1/agents/{name}/policy: the policy file the
// server's configuration names for an agent (agents.NAME.policy, or
// claudeCode.policy and codex.policy for the agents claude-code and
// codex), as text, so that a rule's FILE:LINE can be read where it is.
type PolicyFileView struct {
	// Agent is the agent whose calls the file decides.
	Agent string `json:"agent"`
	// File is the file's base name, as [ApprovalView.RuleAt] names it.
	File string `json:"file"`
	// Text is the file as it is on disk now (at most 4 MiB, a policy
	// file's limit), lines separated by "\n".
	Text string `json:"text"`
}
