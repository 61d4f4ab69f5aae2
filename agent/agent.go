package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/ids"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// defaultMaxTurns is the number of model turns after which a run ends
// [StatusIncomplete] when Options.MaxTurns is 0.
const defaultMaxTurns = 10

// defaultMaxToolCalls is the most tool calls one model turn may ask for
// when Options.MaxToolCalls is 0.
const defaultMaxToolCalls = 128

// defaultMaxParallel bounds the concurrent tool calls of one turn when
// Options.MaxParallel is 0.
const defaultMaxParallel = 8

// Toolset is what an agent offers the model; *toolkit.Toolkit implements it.
// Tools must return tools with unique names ([New] refuses others with
// [ErrDuplicateTool]); the agent takes a snapshot at the
// start of every run and resume (and, for a [RefreshingToolset], again
// between turns when it changed). A fixed list of tools is a [ToolList]
// (agent.ToolList{readTool, writeTool}); toolkit.New adds the builtins.
type Toolset interface {
	Tools() []tool.Tool
}

// RefreshingToolset is a [Toolset] whose tools can change during a run, as
// an MCP server's do when it announces that its tool list changed
// (*mcptool.Set implements it). Before every model turn the agent calls
// Refresh on the driving goroutine (no call of the run is
// running then); when it reports a change, the agent takes a new snapshot of
// Tools, which that turn is offered and whose calls are resolved against: a
// new tool is offered, and a call to a tool that vanished gets an "unknown
// tool" error result. An error is logged and leaves the snapshot as it was
// (with changed also true, the snapshot is taken anyway).
type RefreshingToolset interface {
	Toolset
	Refresh(ctx context.Context) (changed bool, err error)
}

// JoinToolsets returns a [RefreshingToolset] of the tools of every set, in
// order. Tools with one name are an error: [New] refuses them
// ([ErrDuplicateTool], naming both); when a set's refresh brings a tool whose
// name is taken, Refresh returns that error (the agent logs it) and the
// later tool is not listed, so that the model is never offered two tools it
// cannot tell apart. Refresh refreshes every set that is a
// RefreshingToolset and reports whether any changed, with their errors
// joined.
func JoinToolsets(sets ...Toolset) RefreshingToolset { return joined(slices.Clone(sets)) }

type joined []Toolset

// all lists the tools of every set, duplicates included.
func (j joined) all() []tool.Tool {
	var out []tool.Tool
	for _, s := range j {
		if s != nil {
			out = append(out, s.Tools()...)
		}
	}
	return out
}

func (j joined) Tools() []tool.Tool {
	out := j.all()
	if duplicateTool(out) == nil {
		return out
	}
	// A clash that a refresh brought: list the first of each name only
	// (Refresh reports it).
	seen := make(map[string]bool, len(out))
	kept := out[:0:0]
	for _, t := range out {
		if t == nil {
			kept = append(kept, t)
			continue
		}
		if name := t.Spec().Name; !seen[name] {
			seen[name] = true
			kept = append(kept, t)
		}
	}
	return kept
}

func (j joined) Refresh(ctx context.Context) (bool, error) {
	var changed bool
	var errs []error
	for _, s := range j {
		if rs, ok := s.(RefreshingToolset); ok {
			c, err := rs.Refresh(ctx)
			changed = changed || c
			errs = append(errs, err)
		}
	}
	if err := duplicateTool(j.all()); err != nil {
		errs = append(errs, err)
	}
	return changed, errors.Join(errs...)
}

// Options configures an [Agent]. Model is required; everything else has a default.
type Options struct {
	// ID names the agent in records and listener events (default "agent").
	ID string
	// Model answers each turn. Required.
	Model model.Model
	// ModelName is the model ID put in each request (seed 002's model).
	ModelName string
	// Tools are the tools offered to the model; nil offers none.
	Tools Toolset
	// SystemPrompt, if not empty, is the first message of every run.
	SystemPrompt string
	// Hooks are the lifecycle hooks of seed 002; nil means none.
	Hooks *hooks.Hooks
	// Authorizers decide allow / deny / ask for every call that reaches step 4,
	// combined with the hooks' votes as deny > ask > allow. None means allow.
	Authorizers []approval.Authorizer
	// WaitFor, if set, is asked for the answer to each pending request and the
	// call is retried once with it; if nil, a run with a pending request halts
	// with StatusPending and can be resumed later. The calls of a turn run
	// concurrently, so WaitFor may be called from several goroutines at once.
	WaitFor tool.WaitFunc
	// ApprovalTTL, if positive, sets ExpiresAt on approval requests the agent makes.
	ApprovalTTL time.Duration
	// MaxTurns caps model turns per run (0 means 10).
	MaxTurns int
	// MaxParallel caps concurrent tool calls per turn (0 means 8).
	MaxParallel int
	// MaxToolCalls caps the tool calls of one model turn (0 means
	// 128). A turn that asks for more runs none of them:
	// the run ends with a [*TooManyToolCallsError] (StatusError), and the
	// over-long assistant message does not enter the transcript.
	MaxToolCalls int
	// ToolTimeout bounds each tool call's execution (0 means
	// 10 minutes; negative: no limit); see [ToolLimits]. The run's
	// own limit is its context's deadline.
	ToolTimeout time.Duration
	// MaxResultBytes caps the output of each tool result the model sees
	// (0 means 256 KiB; negative: no cap); see [ToolLimits].
	MaxResultBytes int
	// ToolLimits overrides ToolTimeout and MaxResultBytes for the tools it
	// names (exact tool names).
	ToolLimits map[string]ToolLimits
	// OnRecord, if set, receives every tool call record as it is made (after the
	// AfterTool chain). It is called from the goroutine that ran the call, so
	// concurrently for the calls of one turn. A panic in it, in an authorizer
	// (which then denies) or in the tool call listener is recovered and logged.
	OnRecord func(ctx context.Context, rec gate.Record)
	// Logger receives structured logs (decisions, not argument values or
	// outputs); default discards.
	Logger *slog.Logger
	// Now returns the current time (default time.Now): request expiry, record
	// start times and durations. A durable engine injects its own clock.
	Now func() time.Time
	// NewID returns a new unique ID starting with prefix ("run_", "call_",
	// "req_"), for run IDs not chosen by the caller, calls the model left
	// without an ID, and approval requests. Default: prefix and 16 random hex
	// digits. A durable engine injects a deterministic source.
	NewID func(prefix string) string
	// Checkpoint, if set, is called on the driving goroutine after every model
	// turn (the assistant message is in the state, its calls not yet run), after
	// every finished tool call, and after a turn's results enter the transcript,
	// with a copy of the run's state at that point. A host stores it so that a
	// recovered run ([Agent.Resume] on the latest checkpoint) never runs a
	// finished call again. An error ends the run with that error (StatusError):
	// a run that cannot be checkpointed does not go on. The copy is the
	// receiver's own (it shares nothing the run goes on changing, and may be
	// kept and read on any goroutine); it is a structural deep copy, so a
	// turn of n calls costs n walks of the state, not n JSON round trips
	// (BenchmarkCheckpointedBatch). A record's Metadata values of a tool's
	// own types are copied through their JSON form.
	Checkpoint func(ctx context.Context, cp Checkpoint) error
	// Middleware wraps the run, each model turn and each tool call's pipeline,
	// for tracing, metrics or a durable engine's steps; the first element is
	// the outermost. See [Middleware].
	Middleware []Middleware
	// Validators caches the tools' argument validators (their input
	// schemas, resolved). Agents made from one Options with the same
	// Validators share it, as a host that makes an agent for each run of
	// one configuration does: each schema is then resolved once, not once
	// a run. nil: the agent keeps its own.
	Validators *gate.Validators
}

// Agent runs the loop of docs/architecture.md: model turn, tool calls through the
// governed pipeline, repeat. It is safe for concurrent runs.
type Agent struct {
	opts Options
	log  *slog.Logger

	mu       sync.RWMutex
	listener hooks.ToolCallListener

	// gate decides and completes every tool call of the agent's runs.
	gate *gate.Gate

	// toolLimits and agentLimits are Options.ToolLimits and the agent-wide
	// limits resolved once (the map is copied: a caller changing its own
	// map later changes nothing).
	toolLimits  map[string]*callLimits
	agentLimits callLimits

	// resumed remembers, per run ID, the highest state sequence number a
	// resume started from, so that the same state is never resumed twice.
	resumedMu sync.Mutex
	resumed   map[string]int64

	// fixed is the latest snapshot of a ToolList, shared read-only by every
	// run while its tools' specs stay the same.
	fixed atomic.Pointer[toolSnapshot]
}

// ErrDuplicateTool is returned by [New] when two tools of Options.Tools
// share a name, and by a joined toolset's Refresh ([JoinToolsets]) when a
// refreshed set brings a tool whose name another set already has; the error
// names both tools. Rename one, or drop it: the model could not tell them
// apart. Test with errors.Is.
var ErrDuplicateTool = errors.New("two tools share a name")

// duplicateTool returns an error wrapping [ErrDuplicateTool] that names the
// first two tools of ts with one name (by position, type and description),
// or nil.
func duplicateTool(ts []tool.Tool) error {
	seen := make(map[string]int, len(ts))
	for i, t := range ts {
		if t == nil {
			continue
		}
		name := t.Spec().Name
		if j, ok := seen[name]; ok {
			return fmt.Errorf("%w: %q is the name of tool %d (%s) and of tool %d (%s); rename one, or drop it", ErrDuplicateTool, name, j, describeTool(ts[j]), i, describeTool(t))
		}
		seen[name] = i
	}
	return nil
}

// describeTool says which tool t is, in a few words: its type and the start
// of its description.
func describeTool(t tool.Tool) string {
	d := strings.Join(strings.Fields(t.Spec().Description), " ")
	if r := []rune(d); len(r) > 60 {
		d = string(r[:60]) + "…"
	}
	return fmt.Sprintf("%T %q", t, d)
}

// ErrNoModel is returned by [New] when opts or Options.Model is nil.
var ErrNoModel = errors.New("agent: Options.Model is required")

// New returns an agent with opts (copied: changing them afterwards changes
// nothing), or [ErrNoModel] for nil opts or a nil Model, or an error for a
// negative MaxTurns, MaxParallel or MaxToolCalls, or for Tools holding a nil
// pointer (a toolkit whose construction failed).
func New(o *Options) (*Agent, error) {
	if o == nil || o.Model == nil {
		return nil, ErrNoModel
	}
	opts := *o
	if v := reflect.ValueOf(opts.Tools); opts.Tools != nil && v.Kind() == reflect.Pointer && v.IsNil() {
		return nil, fmt.Errorf("agent: Options.Tools is a nil %T (did constructing it fail?)", opts.Tools)
	}
	if opts.MaxTurns < 0 || opts.MaxParallel < 0 || opts.MaxToolCalls < 0 {
		return nil, fmt.Errorf("agent: MaxTurns (%d), MaxParallel (%d) and MaxToolCalls (%d) must not be negative", opts.MaxTurns, opts.MaxParallel, opts.MaxToolCalls)
	}
	if opts.Tools != nil {
		ts := opts.Tools.Tools()
		if j, ok := opts.Tools.(joined); ok {
			ts = j.all() // its Tools drops what clashes
		}
		if err := duplicateTool(ts); err != nil {
			return nil, fmt.Errorf("agent: Options.Tools: %w", err)
		}
	}
	if opts.ID == "" {
		opts.ID = "agent"
	}
	if opts.MaxTurns == 0 {
		opts.MaxTurns = defaultMaxTurns
	}
	if opts.MaxParallel == 0 {
		opts.MaxParallel = defaultMaxParallel
	}
	if opts.MaxToolCalls == 0 {
		opts.MaxToolCalls = defaultMaxToolCalls
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.NewID == nil {
		opts.NewID = ids.New
	}
	if opts.Hooks == nil {
		opts.Hooks = &hooks.Hooks{}
	}
	lg := opts.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	a := &Agent{opts: opts, log: lg, agentLimits: resolveLimits(ToolLimits{}, opts.ToolTimeout, opts.MaxResultBytes)}
	if len(opts.ToolLimits) > 0 {
		a.toolLimits = make(map[string]*callLimits, len(opts.ToolLimits))
		for name, l := range opts.ToolLimits {
			r := resolveLimits(l, opts.ToolTimeout, opts.MaxResultBytes)
			a.toolLimits[name] = &r
		}
	}
	a.gate = gate.New(&gate.Options{
		Hooks: opts.Hooks, Authorizers: opts.Authorizers, Listener: a.toolCallListener,
		ApprovalTTL: opts.ApprovalTTL, OnRecord: opts.OnRecord, Logger: lg, Now: opts.Now, NewID: opts.NewID,
		MaxResultBytes: func(name string) int { return a.limits(name).MaxResultBytes },
		Validators:     opts.Validators,
	})
	return a, nil
}

// ID returns the agent's ID.
func (a *Agent) ID() string { return a.opts.ID }

// SetToolCallListener sets the agent's one tool call listener (seed 000), replacing
// any listener already set; nil removes it.
func (a *Agent) SetToolCallListener(l hooks.ToolCallListener) {
	a.mu.Lock()
	a.listener = l
	a.mu.Unlock()
}

// toolCallListener returns the current tool call listener, or nil.
func (a *Agent) toolCallListener() hooks.ToolCallListener {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.listener
}

// Run runs the agent on prompt until the model answers without tool calls
// (StatusDone), a request is pending and no WaitFor is set (StatusPending),
// MaxTurns is reached (StatusIncomplete), or something fails. On failure it
// returns the partial result (StatusError, transcript so far) together with the
// error: a [*hooks.Error] for a hook, the model's error, or ctx.Err().
// Run is [Agent.Stream] with nobody reading the text deltas: it runs the
// same loop, but asks the model for each turn with one Generate call (a
// non-streaming request) even when the model is a [model.Streamer]. Use
// Stream to stream.
func (a *Agent) Run(ctx context.Context, prompt string, opts ...RunOption) (*Result, error) {
	return orNoResult(a.start(ctx, prompt, opts, nil))
}

// Resume continues a halted run with answers to its pending requests, in this or
// another process (the agent must offer the same tools).
//
// Exactly once holds within one Agent value only: it remembers in memory the
// states it resumed. Across agents and processes (two servers, a crash and
// a restart, the same state resumed twice from a store) nothing here stops
// a second resume; the host provides that guard. runs.Host does, with a
// lease per run and single-use approvals in its store (package runs,
// "Exactly once"); a program that stores states itself must do the same.
//
// Each approved call runs once per resume, a declined one gets an error
// result with the reason, an
// unanswered one stays pending, and no user message is added. When no call of the
// halted turn is pending any more, the loop continues with the next model turn.
//
// An answer whose ID matches no pending request, two answers with the same ID,
// or an answer that gives both By and a Principal of another name, is an error
// ([ErrUnknownAnswer], [ErrDuplicateAnswer], [ErrInvalidAnswer]) and changes
// nothing: the model is not called and state is left as it was. state itself is never
// modified; the returned Result carries the new state when still pending.
//
// A state may also be a [Checkpoint]'s: then the calls of its turn that had not
// finished run (those that had are never run again), and the loop goes on.
//
// Each state is resumed at most once: resuming a state this agent has already
// resumed (the same run and sequence number, or an earlier one) fails with
// [ErrAlreadyResumed] and runs nothing. The agent remembers this in memory;
// across processes the host keeps it, as package runs does with leases and
// single-use approvals.
//
// Like Run, Resume calls the model's Generate, never its Stream.
func (a *Agent) Resume(ctx context.Context, state *State, answers ...tool.Answer) (*Result, error) {
	return orNoResult(a.resume(ctx, state, answers, nil))
}

// orNoResult is res and err, or an error if there is neither.
func orNoResult(res *Result, err error) (*Result, error) {
	if res == nil && err == nil {
		err = errors.New("agent: stream ended without a result")
	}
	return res, err
}

// ToolList is a fixed [Toolset]: the tools in the given order.
type ToolList []tool.Tool

// Tools implements [Toolset].
func (l ToolList) Tools() []tool.Tool { return l }
