package declarative

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os/exec"
	"slices"

	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/glob"
)

// Logger names: the value of the "logger" attribute on every record the
// package writes, so that a handler can route or filter them.
const (
	// registryLoggerName marks load diagnostics and failures of custom executors.
	registryLoggerName = "tollgate/hooks/declarative.Registry"
	// executorLoggerName marks what the standard executor writes: log actions
	// and command results (seed 000: the DeclarativeHookExecutor logger).
	executorLoggerName = "tollgate/hooks/declarative.Executor"
)

// Options configures a [Registry]; nil means all defaults. The registry keeps
// its own copy.
type Options struct {
	// Logger receives load diagnostics, the log actions and command failures;
	// default discards. Records carry a "logger" attribute set
	// to "tollgate/hooks/declarative.Registry" (load diagnostics, custom
	// executors' panics) or "tollgate/hooks/declarative.Executor" (log
	// actions, command results).
	Logger *slog.Logger
	// Executor, if set, replaces the standard executor (log and command
	// actions, see "Actions" in the package doc): it receives each matching action and its
	// context (seed 000, "Custom executor").
	Executor Executor
	// File names the document in diagnostics and hook sources of
	// [FromYAML]; [Load] sets it to the path. Empty means "hooks".
	File string
	// AllowUnsafeCommands makes [FromYAML] keep, with a warning, command
	// actions that let the model or an error choose code: ${tool}, ${args},
	// ${callId} or ${error} in a shell command, as argv[0], or after an
	// interpreter in argv ([Diagnostic].Unsafe). That is seed 000's literal
	// behaviour ("values are not quoted"); without it such entries are
	// skipped. Set it only for documents whose hooks never see a model's
	// calls, or whose commands quote what they paste.
	AllowUnsafeCommands bool
	// PassEnv names variables of the process's environment (exact names, or
	// prefixes ending in '*') that the standard executor passes to command
	// actions on top of the allowlist (PATH, HOME, LANG, LC_*, TERM, TMPDIR,
	// ...; internal/proc.DefaultEnvAllow). Provider keys and other TOLLGATE_*
	// variables reach a command only when named here.
	PassEnv []string
	// Sandbox, if set, is called by the standard executor with every command
	// action it is about to start, and may rewrite it to run confined
	// (sandbox.Sandbox.Wrap bound to a policy). It reports whether killing the
	// started process kills every process the command starts (a PID
	// namespace). When it fails the command is not started and a warning is
	// logged. Nil runs commands unconfined.
	Sandbox func(cmd *exec.Cmd) (wholeTree bool, err error)
	// SandboxNote is added to the warning about a command that failed in
	// the sandbox when its output shows a refusal (permission denied,
	// operation not permitted, read-only file system): which sandbox it
	// likely was and the setting that changes it.
	SandboxNote string
	// Dir, if set, is the working directory of the standard executor's
	// command actions (an absolute path); empty means the process working
	// directory (seed 000). A host that resumes runs sets it to the run's
	// recorded workspace, so that a command hook runs in the same place
	// whichever directory the run is resumed from.
	Dir string
}

// Executor runs the action of each matching hook (seed 000 HookExecutor). It
// is called synchronously, on the goroutine that fired the event (for tool
// events, the goroutine that runs the tool), once per matching hook, in
// registration order, and may be called from several goroutines at once. It
// returns nothing: an action cannot veto or change the tool call. A panic is
// recovered and logged at WARN; the other hooks still run.
//
// hctx is the event context (see the package documentation for its keys); a
// custom executor gets its own copy and may keep or change it.
type Executor interface {
	Execute(ctx context.Context, action Action, hctx map[string]any)
}

// ExecutorFunc adapts a function to [Executor].
type ExecutorFunc func(ctx context.Context, action Action, hctx map[string]any)

// Execute implements [Executor].
func (f ExecutorFunc) Execute(ctx context.Context, action Action, hctx map[string]any) {
	f(ctx, action, hctx)
}

// Config is one hook: an event, an optional matcher and an action (seed 000
// HookConfig).
type Config struct {
	// Event is when the hook runs.
	Event Event
	// Matcher selects tools by name for PreToolUse and PostToolUse; empty means
	// every tool. It is ignored for OnStart, OnStop and OnError.
	Matcher Matcher
	// Action is what the hook does.
	Action Action
	// Source says where the hook was defined: "FILE:LINE:COL" of its entry for
	// hooks loaded from YAML, "" for hooks built in code. It names the hook in
	// log records.
	Source string
}

// String describes the hook in one line, e.g.
// `hooks.yaml:2:5 PRE_TOOL_USE file_* log "${tool} starting"`.
func (c Config) String() string {
	s := c.Event.String()
	if c.Source != "" {
		s = c.Source + " " + s
	}
	if c.Matcher != "" {
		s += " " + string(c.Matcher)
	}
	return s + " " + c.Action.describe()
}

// validate reports whether the hook can be registered: a known event and a
// valid action ([Action.validate]).
func (c Config) validate() error {
	if !c.Event.valid() {
		return fmt.Errorf("%w: unknown event %d", errInvalidAction, c.Event)
	}
	return c.Action.validate()
}

// Registry holds declarative hooks and fires them: its [Registry.Listener]
// is an agent's [hooks.ToolCallListener] once applied ([Registry.ApplyTo]),
// and it fires events by hand ([Registry.FireEvent], [Registry.FireToolEvent]). It is immutable
// once built and safe for concurrent use; one registry can serve several
// agents. A nil *Registry behaves as an empty one.
type Registry struct {
	hooks   []Config
	byEvent [numEvents][]hook
	filters [numEvents][]glob.Filter // filters[e][i] is byEvent[e][i].glob.Filter()
	exec    Executor
	std     *executor // exec when it is the standard executor, else nil
	log     *slog.Logger
	diags   []Diagnostic
}

var _ hooks.ToolCallListener = listener{}

// hook is a compiled Config.
type hook struct {
	glob   glob.Pattern
	action Action
	source string
}

// Of builds a registry from hooks made in code (seed 000 of(hooks) and
// of(hooks, executor): the executor is Options.Executor). It never fails: a
// hook that does not pass [Config.validate] is skipped with a WARN log and a
// [Diagnostic] that names it by index ("config[2]"). A matcher that can never
// match a tool name ("edit|write", "mcp__.*": only * is special) is kept, as
// seed 000 keeps it, with a WARN diagnostic.
func Of(configs []Config, opts *Options) *Registry {
	var cfgs []Config
	var diags []Diagnostic
	for i, c := range configs {
		if err := c.validate(); err != nil {
			diags = append(diags, diag("", 0, 0, slog.LevelWarn, true, fmt.Sprintf("skipped config[%d] (%s): %v", i, c.Event, err)))
			continue
		}
		if msg := glob.ToolNameProblem(string(c.Matcher)); msg != "" && c.Event.usesMatcher() {
			diags = append(diags, diag("", 0, 0, slog.LevelWarn, false, fmt.Sprintf("config[%d] (%s): %s; the hook never runs", i, c.Event, msg)))
		}
		cfgs = append(cfgs, c)
	}
	r := newRegistry(cfgs, opts)
	r.report(diags)
	return r
}

// Join returns one registry with every hook of regs, in order, and all their
// diagnostics, using opts for the logger and executor. Use it to apply several
// files to one agent, since an agent has one listener and each
// [Registry.ApplyTo] replaces the last. Diagnostics are not logged again.
func Join(opts *Options, regs ...*Registry) *Registry {
	var cfgs []Config
	var diags []Diagnostic
	for _, r := range regs {
		if r == nil {
			continue
		}
		cfgs = append(cfgs, r.hooks...)
		diags = append(diags, r.diags...)
	}
	r := newRegistry(cfgs, opts)
	r.diags = diags
	return r
}

// newRegistry builds a registry from valid configs.
func newRegistry(cfgs []Config, opts *Options) *Registry {
	var o Options
	if opts != nil {
		o = *opts
	}
	base := o.Logger
	if base == nil {
		base = slog.New(slog.DiscardHandler)
	}
	r := &Registry{hooks: cfgs, log: base.With("logger", registryLoggerName)}
	if o.Executor != nil {
		r.exec = o.Executor
	} else {
		r.std = newExecutor(base)
		r.std.passEnv = slices.Clone(o.PassEnv)
		r.std.sandbox = o.Sandbox
		r.std.sandboxNote = o.SandboxNote
		r.std.dir = o.Dir
		r.exec = r.std
	}
	for _, c := range cfgs {
		g := MatchAll.compile()
		if c.Event.usesMatcher() {
			g = c.Matcher.compile()
		}
		r.byEvent[c.Event] = append(r.byEvent[c.Event], hook{glob: g, action: c.Action, source: c.Source})
		r.filters[c.Event] = append(r.filters[c.Event], g.Filter())
	}
	return r
}

// report records diagnostics and logs each at its severity.
func (r *Registry) report(diags []Diagnostic) {
	for _, d := range diags {
		r.log.Log(context.Background(), d.level(), d.Error())
	}
	r.diags = append(r.diags, diags...)
}

// Hooks returns a copy of the hooks that were loaded, in order (seed 000
// getHooks: "Check getHooks() after loading if a missing hook would matter").
func (r *Registry) Hooks() []Config {
	if r == nil {
		return nil
	}
	out := make([]Config, len(r.hooks))
	for i, c := range r.hooks {
		c.Action.Argv = slices.Clone(c.Action.Argv)
		out[i] = c
	}
	return out
}

// Diagnostics returns a copy of what loading reported: every skipped entry and
// every warning, with positions for YAML documents, in document order.
func (r *Registry) Diagnostics() []Diagnostic {
	if r == nil {
		return nil
	}
	return append([]Diagnostic(nil), r.diags...)
}

// Target is what [Registry.ApplyTo] attaches to; *agent.Agent implements it.
type Target interface {
	// SetToolCallListener replaces the target's one tool call listener.
	SetToolCallListener(l hooks.ToolCallListener)
	// ID names the target; it becomes the "agent" key of ON_START.
	ID() string
}

// ApplyTo makes r the tool call listener of t, replacing any listener already
// set (a later SetToolCallListener removes the hooks), then fires ON_START once
// with the context {"event": "ON_START", "agent": t.ID()} (seed 000,
// "Attaching to an agent"). A registry with no hooks does nothing: it sets no
// listener and fires no ON_START. Applying one registry to several agents,
// or twice to one, fires ON_START once per call; each hook still fires once per
// tool event, since an agent has one listener.
func (r *Registry) ApplyTo(ctx context.Context, t Target) {
	if r == nil || len(r.hooks) == 0 {
		return
	}
	t.SetToolCallListener(r.Listener())
	r.FireEvent(ctx, OnStart, map[string]any{"agent": t.ID()})
}

// FireEvent runs every hook of event with a copy of hctx as the context, in
// registration order, ignoring matchers (seed 000: "fireEvent(event, context)
// runs every hook for that event and passes your map as the context"). The key
// "event" (the UPPER_SNAKE name) is added unless hctx has it. This is how ON_STOP
// is fired: the registry never fires it itself. It returns when every hook has
// finished; a failing hook is logged and changes nothing else.
func (r *Registry) FireEvent(ctx context.Context, event Event, hctx map[string]any) {
	if r == nil || !event.valid() {
		return
	}
	hs := r.byEvent[event]
	if len(hs) == 0 {
		return
	}
	m := withEvent(event, hctx)
	for i := range hs {
		r.run(ctx, &hs[i], m)
	}
}

// FireToolEvent is FireEvent for one tool: for PreToolUse and PostToolUse only
// the hooks whose matcher matches toolName run, and the context is a copy of
// extra with "tool" set to toolName (and "event" added unless extra has it).
func (r *Registry) FireToolEvent(ctx context.Context, event Event, toolName string, extra map[string]any) {
	if r == nil || !event.valid() {
		return
	}
	var m map[string]any
	hs := r.byEvent[event]
	for i := range hs {
		h := &hs[i]
		if !h.glob.Match(toolName) || r.noop(ctx, h) {
			continue
		}
		if m == nil {
			m = withEvent(event, extra)
			m["tool"] = toolName
		}
		r.run(ctx, h, m)
	}
}

func withEvent(event Event, hctx map[string]any) map[string]any {
	m := make(map[string]any, len(hctx)+2)
	maps.Copy(m, hctx)
	if _, ok := m["event"]; !ok {
		m["event"] = event.String()
	}
	return m
}

// Listener returns r as the agent's tool call listener (what [Registry.ApplyTo]
// sets, for a caller that sets it itself, such as a caller of package gate):
// PreToolUse runs the PRE_TOOL_USE hooks whose matcher matches the tool, and
// the tool waits for them; PostToolUse the POST_TOOL_USE hooks whose matcher
// matches; OnError every ON_ERROR hook (matchers are ignored). For a tool
// that runs again with the answer to the request it made (ToolUse.Retried)
// PreToolUse runs none, since they fired when the call first started; for a
// call whose tool asked for an answer instead of returning a result
// (ToolUse.Pending) PostToolUse runs none, since the call has not run to a
// result: it fires when the call runs with the answer (see "Calls that wait
// for an answer" in the package documentation).
func (r *Registry) Listener() hooks.ToolCallListener { return listener{r} }

// listener is a [Registry] as a [hooks.ToolCallListener].
type listener struct{ r *Registry }

func (l listener) PreToolUse(ctx context.Context, u *hooks.ToolUse) {
	if u.Retried {
		return
	}
	l.r.fireTool(ctx, PreToolUse, u)
}

func (l listener) PostToolUse(ctx context.Context, u *hooks.ToolUse) {
	if u.Pending {
		return
	}
	l.r.fireTool(ctx, PostToolUse, u)
}

func (l listener) OnError(ctx context.Context, u *hooks.ToolUse) { l.r.fireTool(ctx, OnError, u) }

// fireTool runs the hooks of event for u. It allocates nothing unless a hook
// will act: the context map is built on the first one.
func (r *Registry) fireTool(ctx context.Context, event Event, u *hooks.ToolUse) {
	if r == nil {
		return
	}
	var m map[string]any
	hs, fs := r.byEvent[event], r.filters[event]
	name := glob.NewName(u.Tool)
	logsOff := -1 // unknown until a log hook matches
	for i := range fs {
		if !fs[i].Pass(&name) {
			continue
		}
		h := &hs[i]
		if !h.glob.MatchName(&name) {
			continue
		}
		if r.std != nil && h.action.Type == ActionLog {
			if logsOff < 0 {
				logsOff = 0
				if r.noop(ctx, h) {
					logsOff = 1
				}
			}
			if logsOff == 1 {
				continue
			}
		}
		if m == nil {
			m = toolContext(event, u)
		}
		r.run(ctx, h, m)
	}
}

// noop reports whether running h could have no effect: a log action of the
// standard executor whose logger discards INFO.
func (r *Registry) noop(ctx context.Context, h *hook) bool {
	return r.std != nil && h.action.Type == ActionLog && !r.std.log.Enabled(ctx, slog.LevelInfo)
}

// toolContext is the context of a tool event; the keys are listed in the
// package documentation.
func toolContext(event Event, u *hooks.ToolUse) map[string]any {
	args := json.RawMessage(u.Args)
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	m := map[string]any{
		"event":  event.String(),
		"tool":   u.Tool,
		"args":   args,
		"callId": u.CallID,
		"turn":   u.Turn,
		"agent":  u.AgentID,
		"runId":  u.RunID,
	}
	if event != PreToolUse {
		m["latencyMs"] = u.Latency.Milliseconds()
		m["success"] = u.Success
		m["error"] = u.Error
		m["outputSize"] = u.OutputSize
	}
	return m
}

type sourceKey struct{}

// hookSource returns the Source of the hook being run, for executors that
// wrap the standard one.
func hookSource(ctx context.Context) string {
	s, _ := ctx.Value(sourceKey{}).(string)
	return s
}

// run runs one hook; a panic in the executor is logged and contained.
func (r *Registry) run(ctx context.Context, h *hook, m map[string]any) {
	defer func() {
		if p := recover(); p != nil {
			r.log.WarnContext(ctx, "hook action panicked; the tool call and the other hooks go on",
				"hook", hookName(h), "action", h.action.Type.String(), "panic", fmt.Sprint(p))
		}
	}()
	if r.std != nil {
		r.std.execute(ctx, hookName(h), h.action, m)
		return
	}
	if h.source != "" {
		ctx = context.WithValue(ctx, sourceKey{}, h.source)
	}
	r.exec.Execute(ctx, h.action, maps.Clone(m))
}

func hookName(h *hook) string {
	if h.source != "" {
		return h.source
	}
	return h.action.describe()
}
