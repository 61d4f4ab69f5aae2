package serverapi

import (
	"encoding/json"
	"time"

	"github.com/tollgate-dev/tollgate/store"
)

// RunPage is GET /v1/runs.
type RunPage struct {
	Runs []RunSummary `json:"runs"`
	// Next is the cursor of the next page (?cursor=), empty at the end.
	Next string `json:"next,omitempty"`
}

// RunSummary is a run in a listing.
type RunSummary struct {
	// ID is the run's ID ("run_" and 16 hex digits unless its starter chose one).
	ID string `json:"id"`
	// Agent is the name of the agent in the server's configuration.
	Agent string `json:"agent"`
	// Source is what started the run: "agent", "claude-code", "codex",
	// "command-line" or "mcp" (an MCP client's session; [RunContext.Source]).
	Source string `json:"source"`
	// Owner is the principal who started the run, as text ("person:alice").
	Owner string `json:"owner"`
	// Status is the run's status (running, pending, done, failed, ...).
	Status store.RunStatus `json:"status"`
	// CreatedAt is when the run was stored; UpdatedAt when it last changed
	// (RFC 3339).
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// RunView is GET /v1/runs/{id}: the run with its transcript (the agent's
// messages), the record of every finished tool call with its decision and
// votes, and its pending approvals.
type RunView struct {
	RunSummary
	// Autonomy is the autonomy level the run's next part is built with
	// (its own override, else its tenant's, else the agent's).
	Autonomy string `json:"autonomy,omitempty"`
	// Text is the final answer of a done run; Reason why a run failed or
	// stopped.
	Text   string `json:"text,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Transcript is the agent's messages ([model.Message] as JSON).
	Transcript json.RawMessage `json:"transcript"`
	// ToolCalls are the agent's tool call records ([gate.Record]).
	ToolCalls json.RawMessage `json:"toolCalls"`
	// Pending are the approvals that wait for an answer.
	Pending []ApprovalView `json:"pending"`
}

// StartRunRequest is the body of POST /v1/runs.
type StartRunRequest struct {
	// Agent names one of the server's agents.
	Agent string `json:"agent"`
	// Prompt is the user's message; not empty.
	Prompt string `json:"prompt"`
}
