package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// DefaultMaxTurns is the number of model turns after which a run ends
// [StatusIncomplete] when Options.MaxTurns is 0.
const DefaultMaxTurns = 10

// DefaultMaxParallel bounds the concurrent tool calls of one turn when
// Options.MaxParallel is 0.
const DefaultMaxParallel = 8

// Toolset is what an agent offers the model; *toolkit.Toolkit implements it.
// Tools must return tools with unique names; the agent takes a snapshot at the
// start of every run and resume.
type Toolset interface {
	Tools() []tool.Tool
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
	// MaxTurns caps model turns per run (default [DefaultMaxTurns]).
	MaxTurns int
	// MaxParallel caps concurrent tool calls per turn (default [DefaultMaxParallel]).
	MaxParallel int
	// ToolTimeout bounds each tool call's execution (default
	// [DefaultToolTimeout]; negative: no limit); see [ToolLimits]. The run's
	// own limit is its context's deadline.
	ToolTimeout time.Duration
	// MaxResultBytes caps the output of each tool result the model sees
	// (default [DefaultMaxResultBytes]; negative: no cap); see [ToolLimits].
	MaxResultBytes int
	// ToolLimits overrides ToolTimeout and MaxResultBytes for the tools it
	// names (exact tool names).
	ToolLimits map[string]ToolLimits
	// OnRecord, if set, receives every tool call record as it is made (after the
	// AfterTool chain). It is called from the goroutine that ran the call, so
	// concurrently for the calls of one turn. A panic in it, in an authorizer
	// (which then denies) or in the tool call listener is recovered and logged.
	OnRecord func(ctx context.Context, rec ToolCallRecord)
	// Logger receives structured logs (decisions, not argument values or
	// outputs); default discards.
	Logger *slog.Logger
	// Now returns the current time (default time.Now); for tests.
	Now func() time.Time
}

// Agent runs the loop of docs/architecture.md: model turn, tool calls through the
// governed pipeline, repeat. It is safe for concurrent runs.
type Agent struct {
	opts Options
	log  *slog.Logger

	mu       sync.RWMutex
	listener hooks.ToolCallListener

	validators sync.Map // tool name -> cachedValidator
}

// ErrNoModel is returned by [New] when Options.Model is nil.
var ErrNoModel = errors.New("agent: Options.Model is required")

// New returns an agent with opts (copied), or [ErrNoModel], or an error for a
// negative MaxTurns or MaxParallel, or for Tools holding a nil pointer (a
// toolkit whose construction failed).
func New(opts Options) (*Agent, error) {
	if opts.Model == nil {
		return nil, ErrNoModel
	}
	if v := reflect.ValueOf(opts.Tools); opts.Tools != nil && v.Kind() == reflect.Pointer && v.IsNil() {
		return nil, fmt.Errorf("agent: Options.Tools is a nil %T (did constructing it fail?)", opts.Tools)
	}
	if opts.MaxTurns < 0 || opts.MaxParallel < 0 {
		return nil, fmt.Errorf("agent: MaxTurns (%d) and MaxParallel (%d) must not be negative", opts.MaxTurns, opts.MaxParallel)
	}
	if opts.ID == "" {
		opts.ID = "agent"
	}
	if opts.MaxTurns == 0 {
		opts.MaxTurns = DefaultMaxTurns
	}
	if opts.MaxParallel == 0 {
		opts.MaxParallel = DefaultMaxParallel
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Hooks == nil {
		opts.Hooks = &hooks.Hooks{}
	}
	lg := opts.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	return &Agent{opts: opts, log: lg}, nil
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

// ToolCallListener returns the current tool call listener, or nil.
func (a *Agent) ToolCallListener() hooks.ToolCallListener {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.listener
}

// Run runs the agent on prompt until the model answers without tool calls
// (StatusDone), a request is pending and no WaitFor is set (StatusPending),
// MaxTurns is reached (StatusIncomplete), or something fails. On failure it
// returns the partial result (StatusError, transcript so far) together with the
// error: a [*hooks.Error] for a hook, the model's error, or ctx.Err().
// Run consumes [Agent.Stream]: the two behave identically.
func (a *Agent) Run(ctx context.Context, prompt string) (*Result, error) {
	return collect(a.Stream(ctx, prompt))
}

// Resume continues a halted run with answers to its pending requests, in this or
// another process (the agent must offer the same tools). Each approved call runs
// exactly once, a declined one gets an error result with the reason, an
// unanswered one stays pending, and no user message is added. When no call of the
// halted turn is pending any more, the loop continues with the next model turn.
//
// An answer whose ID matches no pending request, or two answers with the same ID,
// is an error ([ErrUnknownAnswer], [ErrDuplicateAnswer]) and changes nothing: the
// model is not called and state is left as it was. state itself is never
// modified; the returned Result carries the new state when still pending.
//
// "Exactly once" holds for one Resume of one state: Resume keeps no memory
// between calls, so resuming the same state twice with the same approval runs
// the call twice. The host keeps approvals single-use, as package
// approval/store does (Consume) and `tollgate resume` relies on.
func (a *Agent) Resume(ctx context.Context, state *State, answers ...tool.Answer) (*Result, error) {
	return collect(a.ResumeStream(ctx, state, answers...))
}

func collect(seq func(func(Event, error) bool)) (*Result, error) {
	var res *Result
	var err error
	for ev, e := range seq {
		if ev.Kind == EventDone {
			res = ev.Result
		}
		if e != nil {
			err = e
		}
	}
	if res == nil && err == nil {
		err = errors.New("agent: stream ended without a result")
	}
	return res, err
}

func newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// ToolList is a fixed [Toolset]: the tools in the given order.
type ToolList []tool.Tool

// Tools implements [Toolset].
func (l ToolList) Tools() []tool.Tool { return l }
