package server

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// Limits of what a card shows of its run.
const (
	// maxCardText bounds the prompt and the intent shown (bytes; longer
	// text is cut at a character boundary and ends with "…").
	maxCardText = 4000
	// maxEarlier bounds the earlier decisions shown (the latest are kept).
	maxEarlier = 20
)

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

// runState is the part of a stored agent state a card reads.
type runState struct {
	Messages  []model.Message `json:"messages"`
	ToolCalls []struct {
		Name     string          `json:"name"`
		Args     json.RawMessage `json:"args"`
		Decision struct {
			Outcome string         `json:"outcome"`
			By      tool.Principal `json:"by"`
			Reason  string         `json:"reason"`
		} `json:"decision"`
	} `json:"toolCalls"`
}

// runContext returns what a card shows of run for the request a; nil when
// run is nil.
func runContext(a store.Approval, run *store.Run) *RunContext {
	if run == nil {
		return nil
	}
	c := &RunContext{Source: SourceCommandLine}
	if cfg, err := runs.LoadConfig(*run); err == nil {
		c.Workspace = cfg.Workdir
		c.Source = sourceOf(cfg.Agent, "")
	}
	if mcpSession(*run) {
		c.Source = SourceMCP
	}
	var st runState
	if len(run.State) == 0 || json.Unmarshal(run.State, &st) != nil {
		return c
	}
	for _, m := range st.Messages {
		if m.Role == model.RoleUser && c.Prompt == "" {
			c.Prompt = clip(m.Content)
		}
		if m.Role == model.RoleAssistant && asks(m, a.CallID) {
			c.Intent = clip(strings.TrimSpace(m.Content))
		}
	}
	for _, r := range st.ToolCalls {
		if r.Name == a.Tool {
			c.Earlier = append(c.Earlier, EarlierDecision{Outcome: r.Decision.Outcome, By: r.Decision.By.String(), Reason: r.Decision.Reason, Args: r.Args})
		}
	}
	if len(c.Earlier) > maxEarlier {
		c.Earlier = c.Earlier[len(c.Earlier)-maxEarlier:]
	}
	return c
}

// sourceOf is the source of a run of the agent named agent (empty for
// none), whose stored configuration says source (a session's run says
// claude-code or codex).
func sourceOf(agent, source string) string {
	switch {
	case source == SourceClaudeCode || source == SourceCodex || source == SourceMCP:
		return source
	case agent != "":
		return SourceAgent
	}
	return SourceCommandLine
}

// asks reports whether the assistant message m makes the call callID.
func asks(m model.Message, callID string) bool {
	for _, c := range m.ToolCalls {
		if c.ID == callID && callID != "" {
			return true
		}
	}
	return false
}

// clip cuts s to maxCardText bytes at a character boundary.
func clip(s string) string {
	if len(s) <= maxCardText {
		return s
	}
	cut := maxCardText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
