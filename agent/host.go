package agent

import (
	"context"

	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// RunOption sets a per-run option of [Agent.Run] and [Agent.Stream].
type RunOption func(*runOptions)

type runOptions struct {
	runID   string
	history []model.Message
}

// WithRunID makes id the run's ID (the default is Options.NewID("run_")). A
// host that stores runs chooses the ID before the run starts, so that what it
// stores and what the events carry agree from the first event on.
func WithRunID(id string) RunOption { return func(o *runOptions) { o.runID = id } }

// WithHistory starts the run from an earlier conversation: msgs come before the
// prompt (after the system prompt, unless msgs begins with a system message of
// its own, which then replaces it). Tool calls in msgs are history: they are
// not run again. The messages are copied.
func WithHistory(msgs ...model.Message) RunOption {
	return func(o *runOptions) { o.history = append([]model.Message(nil), msgs...) }
}

// Checkpoint kinds ([Checkpoint].Kind), in the order a turn passes them.
const (
	// CheckpointTurn: after a model turn; the state holds the assistant
	// message and its calls, none of them run yet.
	CheckpointTurn = "turn"
	// CheckpointCall: after one tool call finished (its record is in the
	// state's turn in progress).
	CheckpointCall = "call"
	// CheckpointResults: after the turn's tool results entered the
	// transcript; the next step is a model turn. Each of the turn's calls
	// was checkpointed as it finished, and a run resumed from the last of
	// those puts the same results in its transcript: a host may store this
	// one with its next write.
	CheckpointResults = "results"
)

// Checkpoint is a copy of a run's state at a point from which it can be
// recovered with [Agent.Resume] (no answers needed): calls that finished are
// kept, calls that had not finished run again, pending ones stay pending.
type Checkpoint struct {
	// Kind says at which point of the loop it was taken, in the order a
	// turn passes them: "turn" (after a model turn; the state holds the
	// assistant message and its calls, none of them run yet), "call" (after
	// one tool call finished; its record is in the state), "results" (after
	// the turn's tool results entered the transcript; the next step is a
	// model turn).
	Kind  string
	RunID string
	// Seq is the sequence number of the last event emitted before it.
	Seq  int64
	Turn int
	// State is the host's own copy.
	State *State
}

// RunInfo describes the run a [RunHandler] drives.
type RunInfo struct {
	RunID   string
	AgentID string
	Model   string
	// Resume is true for [Agent.Resume] and [Agent.ResumeStream].
	Resume bool
}

// RunHandler drives a whole run (or resume) and returns its result.
type RunHandler func(ctx context.Context, info *RunInfo) (*Result, error)

// TurnInfo describes one model turn to a [TurnHandler].
type TurnInfo struct {
	RunID   string
	AgentID string
	// Turn is the 1-based model turn.
	Turn int
	// Model is the configured model name (Options.ModelName); BeforeLLM hooks
	// may change the one actually sent.
	Model string
}

// TurnHandler runs one model turn: the BeforeLLM hooks, the model (or a
// hook's canned response), the AfterLLM hooks. It returns the response.
type TurnHandler func(ctx context.Context, t *TurnInfo) (*model.Response, error)

// CallInfo describes one tool call to a [CallHandler].
type CallInfo struct {
	RunID   string
	AgentID string
	Turn    int
	// Call is the call as the model wrote it.
	Call model.ToolCall
	// Answer is set when the call is taken up again with an answer to its
	// pending request.
	Answer *tool.Answer
}

// CallHandler runs one tool call through the governed pipeline (docs/
// architecture.md), including the wait for an answer when Options.WaitFor is
// set. It returns where the call ended, as a [gate.Ruling] whose Allowed is
// always nil: a finished Record, a Pending call (waiting for an answer), or
// an Err that fails the run (a hook error, cancellation). A Record may come
// with an Err (the tool ran, an AfterTool hook failed).
type CallHandler func(ctx context.Context, c *CallInfo) gate.Ruling

// Middleware wraps the agent's work at four depths, in the manner of
// net/http middleware: each non-nil field receives the next handler and
// returns one that calls it (or not, to replace it). Run wraps a whole run or
// resume; Turn wraps each model turn; Call wraps each tool call's pipeline and
// is called from the call's goroutine (concurrently for the calls of a turn);
// Wait wraps a call's wait for an answer.
// Tracing, metrics and durable engines hang here instead of forking the loop;
// a handler must return what next returned unless it means to change the run.
type Middleware struct {
	Run  func(next RunHandler) RunHandler
	Turn func(next TurnHandler) TurnHandler
	Call func(next CallHandler) CallHandler
	// Wait wraps each wait for the answer to a pending request through
	// Options.WaitFor (or a caller's, for a sub-agent); it is called with the
	// call's context (inside the Call middleware) from the call's goroutine.
	// It is not called when the run halts instead of waiting. [PendingCallFrom]
	// on its context gives the pending call the request is from, which a
	// halted run would have returned: a tracer sees the pending step alike
	// on both paths.
	Wait func(next tool.WaitFunc) tool.WaitFunc
}

// turn runs one model turn through the Turn middleware.
func (r *runner) turn(ctx context.Context) (*model.Response, error) {
	mw := r.a.opts.Middleware
	if len(mw) == 0 {
		return r.modelTurn(ctx)
	}
	h := TurnHandler(func(ctx context.Context, _ *TurnInfo) (*model.Response, error) { return r.modelTurn(ctx) })
	for i := len(mw) - 1; i >= 0; i-- {
		if m := mw[i].Turn; m != nil {
			h = m(h)
		}
	}
	return h(ctx, &TurnInfo{RunID: r.st.RunID, AgentID: r.a.opts.ID, Turn: r.st.Turn, Model: r.st.Model})
}

// call runs one tool call through the Call middleware.
func (r *runner) call(ctx context.Context, call model.ToolCall, prior *gate.Pending, ans *tool.Answer, emit func(Event)) gate.Ruling {
	mw := r.a.opts.Middleware
	if len(mw) == 0 {
		return r.processCall(ctx, call, prior, ans, emit)
	}
	h := CallHandler(func(ctx context.Context, c *CallInfo) gate.Ruling {
		return r.processCall(ctx, c.Call, prior, c.Answer, emit)
	})
	for i := len(mw) - 1; i >= 0; i-- {
		if m := mw[i].Call; m != nil {
			h = m(h)
		}
	}
	return h(ctx, &CallInfo{RunID: r.st.RunID, AgentID: r.a.opts.ID, Turn: r.st.Turn, Call: call, Answer: ans})
}
