package agent

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/jsonenc"
	"github.com/tollgate-dev/tollgate/internal/statecalls"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// Status is how a run ended.
type Status string

// Run statuses.
const (
	// StatusDone: the model gave a final answer.
	StatusDone Status = "done"
	// StatusPending: the run halted on pending requests; see Result.State.
	StatusPending Status = "pending"
	// StatusIncomplete: the run stopped before a complete final answer: at
	// MaxTurns, or because the model's answer was cut off at its output limit
	// (then Result.FinishReason is model.FinishLength and Text holds what
	// arrived).
	StatusIncomplete Status = "incomplete"
	// StatusError: the run failed (a hook error, a model error, cancellation);
	// the partial result is returned with the error.
	StatusError Status = "error"
)

// Result is the outcome of [Agent.Run] or [Agent.Resume].
type Result struct {
	RunID  string `json:"runId"`
	Status Status `json:"status"`
	// Text is the model's final answer (StatusDone).
	Text string `json:"text,omitempty"`
	// Reason says why a run is incomplete or failed.
	Reason string `json:"reason,omitempty"`
	// FinishReason is why the last model turn of this call (Run, Stream,
	// Resume) stopped, as the provider reported it; empty when the call made
	// no model turn. model.FinishLength means the model hit its output limit.
	FinishReason model.FinishReason `json:"finishReason,omitempty"`
	// Transcript is every message of the run, tool calls as the model wrote them.
	Transcript []model.Message `json:"transcript"`
	// ToolCalls records every finished tool call, in the order they were asked.
	ToolCalls []gate.Record `json:"toolCalls"`
	// Turns counts model turns (BeforeLLM short-circuits included).
	Turns int         `json:"turns"`
	Usage model.Usage `json:"usage"`
	// Pending lists every pending request of the halted turn (StatusPending).
	Pending []tool.Request `json:"pending,omitempty"`
	// State is the halted run (StatusPending): serialize it, and pass it with the
	// answers to Agent.Resume, in this process or another.
	State *State `json:"state,omitempty"`
}

// batchCall is one tool call of the halted turn.
type batchCall struct {
	Call model.ToolCall `json:"call"`
	// Record is set once the call has finished (it is also in State.ToolCalls).
	Record *gate.Record `json:"record,omitempty"`
	// Pending is set while the call waits for an answer.
	Pending *gate.Pending `json:"pending,omitempty"`
	// CutOff says the model's output limit cut the call off (gate.Call's
	// CutOff): it never runs, also when a recovery takes the turn up again.
	CutOff bool `json:"cutOff,omitempty"`
}

// Finished returns b's record once the call finished, nil before
// (statecalls.Finisher: the state's calls are listed by statecalls.Append,
// as the readers of a stored state list them).
func (b batchCall) Finished() *gate.Record { return b.Record }

// StateVersion is the version of the [State] encoding written by this package.
// Version 2 added Seq; version 3 writes who decided and who voted as
// [tool.Principal] objects instead of their text form. Versions 1 and 2
// are still read (their events are numbered from 1 again when Seq is
// missing; text principals are read with [tool.PrincipalOf]).
const StateVersion = 3

// State is a halted run, or a checkpoint of a running one: what
// [Agent.Resume] needs to go on. Its content is the agent's own: a host
// stores it in its JSON encoding ([State.MarshalJSON], versioned by
// [StateVersion]), reads it back with [State.UnmarshalJSON], and looks into
// it only through its methods. The zero State is not resumable.
type State struct {
	s stateData
}

// stateData is the content of a [State], and its JSON encoding.
type stateData struct {
	Version int    `json:"version"`
	RunID   string `json:"runId"`
	AgentID string `json:"agentId"`
	Model   string `json:"model"`
	// Messages is the transcript up to and including the assistant message of
	// the halted turn.
	Messages  []model.Message `json:"messages"`
	Turn      int             `json:"turn"`
	Usage     model.Usage     `json:"usage"`
	ToolCalls []gate.Record   `json:"toolCalls"`
	// Batch holds the halted turn's tool calls in the model's order.
	Batch []batchCall `json:"batch"`
	// Requests lists every request ID issued in the run, so that a later
	// request never reuses one (answers and stores are keyed by it).
	Requests []string `json:"requests,omitempty"`
	// Seq is the sequence number of the last event of the run so far; the
	// events of a resume go on from it.
	Seq int64 `json:"seq,omitempty"`
	// StopContinuations counts the times Stop hooks (and a caller's
	// SubagentStop hooks) have continued the run so far; the cap,
	// hookrun.MaxStopContinuations, holds across halts and resumes.
	StopContinuations int `json:"stopContinuations,omitempty"`
	// ToolState is what the run's tools keep between calls ([tool.RunState],
	// by key), so that it survives a halt and a resume.
	ToolState map[string]json.RawMessage `json:"toolState,omitempty"`
}

// MarshalJSON encodes s: a JSON object with "version" ([StateVersion]) and
// the run's transcript, records, halted calls and tool state. Its other
// fields are not an interface: read them through the methods of [State].
func (s State) MarshalJSON() ([]byte, error) { return jsonenc.Marshal(&s.s) }

// UnmarshalJSON decodes what [State.MarshalJSON] wrote, in this version's
// encoding or an earlier one (see [StateVersion]). It fails with
// [ErrStateVersion] for a version this package does not read (0, a later
// one), and when b is not such an object.
func (s *State) UnmarshalJSON(b []byte) error {
	var d stateData
	if err := json.Unmarshal(b, &d); err != nil {
		return fmt.Errorf("agent: state: %w", err)
	}
	if d.Version < 1 || d.Version > StateVersion {
		return fmt.Errorf("%w: %d (this agent reads 1 to %d)", ErrStateVersion, d.Version, StateVersion)
	}
	s.s = d
	return nil
}

// RunID names the run.
func (s *State) RunID() string { return s.s.RunID }

// Messages returns a copy of the transcript up to and including the
// assistant message of the halted turn.
func (s *State) Messages() []model.Message { return slices.Clone(s.s.Messages) }

// finishedCalls returns a copy of the records of the calls that finished,
// those of the halted turn included, in the order they were asked; never
// nil ([] rather than null in JSON).
func (s *stateData) finishedCalls() []gate.Record {
	return statecalls.Append(append([]gate.Record{}, s.ToolCalls...), s.Batch)
}

// WaitingCall is a call of the halted turn that waits for an answer.
type WaitingCall struct {
	// Call is the call as the model wrote it.
	Call model.ToolCall
	// Pending is its request, who raised it, the digest of the arguments the
	// request is about, and the votes heard before it.
	Pending gate.Pending
}

// Waiting lists the calls of the halted turn that wait for an answer, in
// the model's order (copies).
func (s *State) Waiting() []WaitingCall {
	var out []WaitingCall
	for _, b := range s.s.Batch {
		if b.Pending != nil {
			p := *b.Pending
			p.Votes = slices.Clone(p.Votes)
			out = append(out, WaitingCall{Call: b.Call, Pending: p})
		}
	}
	return out
}

// PendingRequests lists the requests still waiting in s, in call order.
func (s *State) PendingRequests() []tool.Request { return s.s.PendingRequests() }

// PendingRequests lists the requests still waiting in s, in call order.
func (s *stateData) PendingRequests() []tool.Request {
	var out []tool.Request
	for _, b := range s.Batch {
		if b.Pending != nil {
			out = append(out, b.Pending.Request)
		}
	}
	return out
}

// EventKind names an [Event].
type EventKind string

// Stream event kinds. Within a turn: text deltas, then usage, then for each
// call tool_call, decision, pending (if it suspends), while the tool runs any
// progress and notice events it reports, and tool_result. Calls run
// concurrently (Options.MaxParallel), so the events of different calls
// interleave; each event carries its CallID.
const (
	// EventText carries a piece of assistant text (Delta).
	EventText EventKind = "text"
	// EventToolCall announces a tool call as the model wrote it, before anything
	// runs (Call); a resume announces each call it takes up again.
	EventToolCall EventKind = "tool_call"
	// EventDecision says how the call was decided (CallID, Decision), before it runs.
	EventDecision EventKind = "decision"
	// EventPending carries a pending request (CallID, Request); nothing of that call has run.
	EventPending EventKind = "pending"
	// EventToolResult carries a finished call's record (Record), after the AfterTool chain.
	EventToolResult EventKind = "tool_result"
	// EventUsage carries one model turn's usage (Usage).
	EventUsage EventKind = "usage"
	// EventProgress carries a running call's progress as its tool reports
	// it (CallID, Progress; an MCP server's notifications/progress), between
	// the call's decision and its result. For people and hosts watching the
	// run; the model does not see it. A call emits at most 1,000 progress
	// and 32 notice events; later reports are dropped.
	EventProgress EventKind = "progress"
	// EventNotice carries something that happened to what a running call's
	// tool relies on (CallID, Notice), such as an MCP server that was
	// restarted during the call.
	EventNotice EventKind = "notice"
	// EventDone carries the final result (Result); always the last event.
	EventDone EventKind = "done"
)

// Event is one element of [Agent.Stream]. Every event carries its run's ID and
// a sequence number that increases by one with each event of the run, across
// halts and resumes (a resume goes on from State.Seq), so that a host can
// store events and serve them again from any point.
type Event struct {
	Kind     EventKind       `json:"kind"`
	RunID    string          `json:"runId,omitempty"`
	Seq      int64           `json:"seq,omitempty"`
	Turn     int             `json:"turn,omitempty"`
	Delta    string          `json:"delta,omitempty"`
	Call     *model.ToolCall `json:"call,omitempty"`
	CallID   string          `json:"callId,omitempty"`
	Decision *gate.Decision  `json:"decision,omitempty"`
	Request  *tool.Request   `json:"request,omitempty"`
	Record   *gate.Record    `json:"record,omitempty"`
	Usage    *model.Usage    `json:"usage,omitempty"`
	Progress *tool.Progress  `json:"progress,omitempty"`
	Notice   *tool.Notice    `json:"notice,omitempty"`
	Result   *Result         `json:"result,omitempty"`
}
