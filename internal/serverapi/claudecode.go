package serverapi

import "time"

// HeaderAsk carries the reason of an ask by the hook's own policy (the
// command hook's --policy): the server then asks a person even where its
// own policies allow. Nothing else the hook sends can lower a decision.
const HeaderAsk = "Tollgate-Ask"

// ClaudeAgent is the agent name of a Claude Code session's run.
const ClaudeAgent = "claude-code"

// CodexAgent is the agent name of a Codex session's run.
const CodexAgent = "codex"

// DefaultClaudeWait is how long POST /v1/hooks/claude-code (and
// /v1/hooks/codex) waits for a person's answer to an ask when ?wait= does
// not say: the hook command's --wait default.
const DefaultClaudeWait = 50 * time.Second
