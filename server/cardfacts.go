package server

import (
	"encoding/json"
	"strings"

	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/internal/statecalls"
	"github.com/tollgate-dev/tollgate/model"
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

// runState is the part of a stored agent state a card reads.
type runState struct {
	Messages  []model.Message             `json:"messages"`
	ToolCalls []cardCall                  `json:"toolCalls"`
	Batch     []statecalls.Call[cardCall] `json:"batch"`
}

// cardCall is the part of a tool call's record a card reads.
type cardCall struct {
	Name     string          `json:"name"`
	Args     json.RawMessage `json:"args"`
	Decision struct {
		Outcome string         `json:"outcome"`
		By      tool.Principal `json:"by"`
		Reason  string         `json:"reason"`
	} `json:"decision"`
}

// runContext returns what a card shows of run for the request a; nil when
// run is nil.
func runContext(a store.Approval, run *store.Run) *serverapi.RunContext {
	if run == nil {
		return nil
	}
	c := &serverapi.RunContext{Source: serverapi.SourceCommandLine}
	if cfg, err := runcore.LoadConfig(*run); err == nil {
		c.Workspace = cfg.Workdir
		c.Source = sourceOf(cfg.Agent, "")
	}
	if mcpSession(*run) {
		c.Source = serverapi.SourceMCP
	}
	var st runState
	if len(run.State) == 0 || json.Unmarshal(run.State, &st) != nil {
		return c
	}
	st.ToolCalls = statecalls.Append(st.ToolCalls, st.Batch)
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
			c.Earlier = append(c.Earlier, serverapi.EarlierDecision{Outcome: r.Decision.Outcome, By: r.Decision.By.String(), Reason: r.Decision.Reason, Args: r.Args})
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
	case source == serverapi.SourceClaudeCode || source == serverapi.SourceCodex || source == serverapi.SourceMCP:
		return source
	case agent != "":
		return serverapi.SourceAgent
	}
	return serverapi.SourceCommandLine
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
	return cutAt(s, maxCardText) + "…"
}
