package hooks

import (
	"context"
)

// StageStop names the Stop hooks: they run when the model gives its final
// answer, and may continue the run instead, at most 8 times per run,
// counted across its halts and resumes; after that the final answer stands.
const StageStop Stage = "stop"

// StopEvent is passed to Stop hooks when the model answered without tool
// calls.
type StopEvent struct {
	// Text is the model's final answer.
	Text string
	// Turn is the model turn that gave it.
	Turn int
	// Continuations counts how many times Stop hooks have continued this run
	// already, resumes included (0 on the first stop; Claude Code's stop_hook_active is
	// Continuations > 0).
	Continuations int
}

// StopFunc may continue the run: a non-empty reason is sent to the model as a
// user message and the run goes on with another turn; "" lets it end.
type StopFunc func(ctx context.Context, ev *StopEvent) (reason string, err error)

// Stop appends a Stop hook and returns h for chaining.
func (h *Hooks) Stop(name string, fn StopFunc) *Hooks {
	return h.add(StageStop, name, fn)
}

// StageSubagentStop names the SubagentStop hooks: they run when a sub-agent
// (an agent run by a tool of another agent, as agent.Agent.AsTool does) gives
// its final answer, and may continue the sub-agent instead.
const StageSubagentStop Stage = "subagent_stop"

// SubagentStopEvent is passed to SubagentStop hooks. They are the hooks of
// the agent whose tool call started the sub-agent (its caller), fired on the
// sub-agent's run after the sub-agent's own Stop hooks let it end. The hook's
// context carries the sub-agent's run ([RunFrom]).
type SubagentStopEvent struct {
	// StopEvent is the sub-agent's final answer, its turn, and the times its
	// run was continued already (by its Stop hooks or these); the cap of 8
	// continuations per run counts both.
	StopEvent
	// AgentID is the sub-agent's ID; RunID is its run's ID.
	AgentID, RunID string
	// ParentAgentID and ParentRunID name the agent and the run whose tool
	// call started the sub-agent.
	ParentAgentID, ParentRunID string
}

// SubagentStopFunc may continue the sub-agent: a non-empty reason is sent to
// it as a user message and its run goes on with another turn; "" lets it end.
type SubagentStopFunc func(ctx context.Context, ev *SubagentStopEvent) (reason string, err error)

// SubagentStop appends a SubagentStop hook and returns h for chaining.
func (h *Hooks) SubagentStop(name string, fn SubagentStopFunc) *Hooks {
	return h.add(StageSubagentStop, name, fn)
}
