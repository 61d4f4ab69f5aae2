package serverapi

import "encoding/json"

// EarlierDecision is one finished call of the same tool in the run.
type EarlierDecision struct {
	// Outcome is the gate's outcome (allowed, approved, denied, ...).
	Outcome string `json:"outcome"`
	// By is who decided ("rule:ask-transfer", "person:alice").
	By string `json:"by,omitempty"`
	// Reason is the decision's reason.
	Reason string `json:"reason,omitempty"`
	// Args are the arguments the call ran with (or was refused with).
	Args json.RawMessage `json:"args,omitempty"`
}

// RunContext is what a person needs of the run a request belongs to, read
// from the run's stored state and configuration.
type RunContext struct {
	// Source is what started the run: [SourceAgent], [SourceClaudeCode],
	// [SourceCodex] or [SourceCommandLine].
	Source string `json:"source"`
	// Prompt is the run's first user message: what the person who started
	// it asked for (at most 4,000 bytes). For a Claude Code or Codex
	// session, the session's last user prompt.
	Prompt string `json:"prompt,omitempty"`
	// Intent is the assistant text of the turn that made the call: what the
	// model said it was doing (at most 4,000 bytes); empty when it said
	// nothing. For a session, the model's last text before the call.
	Intent string `json:"intent,omitempty"`
	// Reported is set when Prompt and Intent are a session's, as its agent
	// reported them (from its transcript, its hook's input or its earlier
	// events): tollgate did not see the conversation, so they are shown as
	// the agent's word, not verified.
	Reported bool `json:"reported,omitempty"`
	// Workspace is the run's working directory, as configured (a session's:
	// the directory its agent reported working in).
	Workspace string `json:"workspace,omitempty"`
	// Earlier are the decisions already made in this run on calls of the
	// same tool, oldest first (the latest 20).
	Earlier []EarlierDecision `json:"earlier,omitempty"`
}

// The sources of a run, as [RunContext.Source] names them.
const (
	// SourceAgent is a run of an agent of the server's configuration.
	SourceAgent = "agent"
	// SourceClaudeCode is a Claude Code session governed as a run.
	SourceClaudeCode = "claude-code"
	// SourceCodex is a Codex CLI session governed as a run.
	SourceCodex = "codex"
	// SourceCommandLine is a run stored by 'tollgate run'.
	SourceCommandLine = "command-line"
	// SourceMCP is an MCP client's session through the gateway.
	SourceMCP = "mcp"
)
