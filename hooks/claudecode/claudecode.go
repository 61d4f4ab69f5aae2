package claudecode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/claudenames"
	"github.com/tollgate-dev/tollgate/internal/proc"
	"github.com/tollgate-dev/tollgate/tool"
)

// FailMode says what a handler that fails (times out, cannot be started,
// crashes, is killed by a signal, prints JSON that fails the schema) does to
// the call: "closed" denies the call (PreToolUse, PermissionRequest),
// withholds the result (PostToolUse), blocks the prompt (UserPromptSubmit)
// or continues the run (Stop), and the log and the reason say "hook
// failed", never "hook denied"; "open" logs the failure and ignores it, as
// Claude Code does.
type FailMode string

// parseFailMode reads "open" or "closed".
func parseFailMode(s string) (FailMode, error) {
	switch FailMode(s) {
	case claudenames.FailClosed, claudenames.FailOpen:
		return FailMode(s), nil
	}
	return "", fmt.Errorf("fail mode %q: want open or closed", s)
}

// Options configures [New]. ProjectDir is required.
type Options struct {
	// ProjectDir is the workspace root: the hooks' working directory, cwd on
	// their stdin, CLAUDE_PROJECT_DIR, and the base of absolute file_path
	// values. Made absolute by New.
	ProjectDir string
	// FailModes sets the fail mode per event. An event not listed fails
	// closed when it is PreToolUse or PermissionRequest, and open otherwise;
	// a mode other than "open" and "closed" makes New fail.
	FailModes map[Event]FailMode
	// DefaultTimeout is a handler's timeout when it gives none; zero means
	// 60 s (Claude Code's). A handler may give up to one hour.
	DefaultTimeout time.Duration
	// Env is the environment of command handlers, "NAME=value", taken as it
	// is. Nil means the process environment scrubbed to an allowlist (PATH,
	// HOME, LANG, LC_*, TERM, TMPDIR, ...; internal/proc.Env) plus the
	// variables PassEnv names, the same rule as bash and YAML command hooks:
	// provider keys, database URLs and other secrets reach a hook only when
	// named. CLAUDE_PROJECT_DIR is always added.
	Env []string
	// PassEnv names variables (exact names, or prefixes ending in '*') passed
	// to command handlers on top of the allowlist when Env is nil.
	PassEnv []string
	// Sandbox, if set, is called with every command handler about to start
	// and may rewrite it to run confined (sandbox.Sandbox.Wrap bound to a
	// policy); it reports whether killing the started process kills everything
	// it starts. When it fails the handler is not started, which counts as a
	// hook failure (a deny where the event fails closed). Nil runs handlers
	// unconfined.
	Sandbox func(cmd *exec.Cmd) (wholeTree bool, err error)
	// SandboxNote is said after the failure or block of a handler that ran
	// in the sandbox when its stderr shows a refusal (permission denied,
	// operation not permitted, read-only file system): which sandbox it
	// likely was and the setting that changes it.
	SandboxNote string
	// HTTPClient sends http handlers' requests (default: a client without
	// redirects to other hosts' credentials, i.e. http.DefaultClient's
	// transport; the handler's timeout bounds each request).
	HTTPClient *http.Client
	// PermissionMode is permission_mode on stdin (default "default").
	PermissionMode string
	// Logger receives "hook failed" warnings, systemMessage texts and block
	// decisions; default discards.
	Logger *slog.Logger
}

// Hooks runs the handlers of loaded settings at tollgate's hook points. Build
// it with [New] and add it to an agent's hooks with [Hooks.Register]. It is
// safe for concurrent use by several runs.
type Hooks struct {
	rt *runtime
}

// runtime holds what every handler run needs.
type runtime struct {
	s    *Settings
	opts Options
	env  []string
	log  *slog.Logger
}

// New returns the hooks of s with opts. The error is for a missing
// ProjectDir or a fail mode other than open and closed.
func New(s *Settings, opts *Options) (*Hooks, error) {
	if opts == nil || opts.ProjectDir == "" {
		return nil, errors.New("claudecode: Options.ProjectDir is required")
	}
	o := *opts
	abs, err := filepath.Abs(o.ProjectDir)
	if err != nil {
		return nil, fmt.Errorf("claudecode: %w", err)
	}
	o.ProjectDir = abs
	for ev, m := range o.FailModes {
		if _, err := parseFailMode(string(m)); err != nil {
			return nil, fmt.Errorf("claudecode: %s: %w", ev, err)
		}
	}
	if o.DefaultTimeout <= 0 {
		o.DefaultTimeout = defaultHandlerTimeout
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	if o.PermissionMode == "" {
		o.PermissionMode = "default"
	}
	lg := o.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	env := o.Env
	if env == nil {
		env = proc.Env(os.Environ(), o.PassEnv)
	}
	if s == nil {
		s = &Settings{}
	}
	return &Hooks{rt: &runtime{s: s, opts: o, env: env, log: lg}}, nil
}

// Register adds the handlers to h and returns h: PreToolUse as a BeforeTool
// hook, PostToolUse and PostToolUseFailure as an AfterTool hook,
// PermissionRequest as a Permission hook, Stop as a Stop hook, SubagentStop
// as a SubagentStop hook,
// UserPromptSubmit and SessionStart as a Start hook, SessionEnd as an End
// hook, Notification as a Pending hook. Only events with handlers are
// registered. Each is named "claude:<Event>" in decision records.
func (c *Hooks) Register(h *hooks.Hooks) *hooks.Hooks {
	x := c.rt
	if x.has(claudenames.PreToolUse) {
		h.BeforeTool("claude:PreToolUse", x.preToolUse)
	}
	if x.has(claudenames.PermissionRequest) {
		h.Permission("claude:PermissionRequest", x.permissionRequest)
	}
	if x.has(claudenames.PostToolUse) || x.has(claudenames.PostToolUseFailure) {
		h.AfterTool("claude:PostToolUse", x.postToolUse)
	}
	if x.has(claudenames.SessionStart) || x.has(claudenames.UserPromptSubmit) {
		h.Start("claude:UserPromptSubmit", x.start)
	}
	if x.has(claudenames.Stop) {
		h.Stop("claude:Stop", x.stop)
	}
	if x.has(claudenames.SubagentStop) {
		h.SubagentStop("claude:SubagentStop", x.subagentStop)
	}
	if x.has(claudenames.SessionEnd) {
		h.End("claude:SessionEnd", x.sessionEnd)
	}
	if x.has(claudenames.Notification) {
		h.Pending("claude:Notification", x.notification)
	}
	return h
}

func (x *runtime) has(ev Event) bool {
	for _, g := range x.s.groups {
		if g.Event == ev {
			return true
		}
	}
	return false
}

func (x *runtime) failMode(ev Event) FailMode {
	if m, ok := x.opts.FailModes[ev]; ok {
		return m
	}
	if ev == claudenames.PreToolUse || ev == claudenames.PermissionRequest {
		return claudenames.FailClosed
	}
	return claudenames.FailOpen
}

// handlers returns the handlers of ev whose group matches value and whose if
// condition holds, identical ones once, in configuration order.
func (x *runtime) handlers(ev Event, value, claudeTool string, input json.RawMessage) []*hookHandler {
	var out []*hookHandler
	seen := map[string]bool{}
	for gi := range x.s.groups {
		g := &x.s.groups[gi]
		if g.Event != ev || !g.m.Match(value) {
			continue
		}
		for hi := range g.Handlers {
			h := &g.Handlers[hi]
			if h.If != "" {
				c, err := parseIf(h.If)
				if err != nil || claudeTool == "" || !c.match(claudeTool, mainArg(claudeTool, input)) {
					continue
				}
			}
			if k := h.key(); !seen[k] {
				seen[k] = true
				out = append(out, h)
			}
		}
	}
	return out
}

// stdin builds a handler's input: the common fields, then the event's.
func (x *runtime) stdin(ctx context.Context, ev Event, fields map[string]any) []byte {
	info, _ := hooks.RunFrom(ctx)
	m := map[string]any{
		"session_id":      info.RunID,
		"transcript_path": "",
		"cwd":             x.opts.ProjectDir,
		"permission_mode": x.opts.PermissionMode,
		"hook_event_name": string(ev),
		"tollgate_run_id": info.RunID,
		"tollgate_agent":  info.AgentID,
	}
	for k, v := range fields {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"session_id": info.RunID, "hook_event_name": string(ev)})
	}
	return b
}

// runAll runs hs concurrently with the same stdin; results are in hs's order.
func (x *runtime) runAll(ctx context.Context, ev Event, hs []*hookHandler, stdin []byte) []*result {
	out := make([]*result, len(hs))
	var wg sync.WaitGroup
	for i, h := range hs {
		wg.Go(func() { out[i] = x.run(ctx, h, ev, stdin) })
	}
	wg.Wait()
	for _, r := range out {
		x.report(ctx, ev, r)
	}
	return out
}

// report logs a failure and a systemMessage.
func (x *runtime) report(ctx context.Context, ev Event, r *result) {
	if r.failed != "" {
		x.log.LogAttrs(ctx, slog.LevelWarn, "hook failed", slog.String("event", string(ev)), slog.String("hook", r.h.String()),
			slog.String("failure", r.failed), slog.String("fail_mode", string(x.failMode(ev))))
		return
	}
	if r.out != nil && r.out.SystemMessage != "" {
		x.log.LogAttrs(ctx, slog.LevelWarn, "hook message", slog.String("event", string(ev)), slog.String("hook", r.h.String()), slog.String("message", r.out.SystemMessage))
	}
}

// StoppedError is the error a run fails with when a handler answers
// "continue": false (Claude Code stops processing). Test with errors.As.
type StoppedError struct {
	// Hook names the handler (FILE:LINE:COL and what it runs).
	Hook string
	// Reason is its stopReason.
	Reason string
}

// Error says which handler stopped the run, and why.
func (e *StoppedError) Error() string {
	return fmt.Sprintf("the run was stopped by hook %s: %s", e.Hook, orDefault(e.Reason, "no reason given"))
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// stopped returns a *StoppedError for the first result that says continue:
// false, or nil.
func stopped(rs []*result) error {
	for _, r := range rs {
		if r.failed == "" && r.out != nil && r.out.Continue != nil && !*r.out.Continue {
			return &StoppedError{Hook: r.h.String(), Reason: r.out.StopReason}
		}
	}
	return nil
}

// verdict ranks PreToolUse decisions: deny > defer > ask > allow > none.
type verdict int

const (
	vNone verdict = iota
	vAllow
	vAsk
	vDefer
	vDeny
)

// preVerdict reads one PreToolUse result.
func (x *runtime) preVerdict(r *result) (verdict, string) {
	if r.failed != "" {
		if x.failMode(claudenames.PreToolUse) == claudenames.FailClosed {
			return vDeny, "hook failed: " + r.h.String() + " " + r.failed
		}
		return vNone, ""
	}
	if r.blocked() {
		return vDeny, r.blockReason()
	}
	o := r.out
	if o == nil {
		return vNone, ""
	}
	if s := o.Specific; s != nil && s.PermissionDecision != "" {
		reason := s.PermissionDecisionReason
		switch s.PermissionDecision {
		case "deny":
			return vDeny, orDefault(reason, "denied by hook "+r.h.Source)
		case "defer":
			return vDefer, orDefault(reason, "hook "+r.h.Source+" asks a person")
		case "ask":
			return vAsk, orDefault(reason, "hook "+r.h.Source+" asks a person")
		case "allow":
			return vAllow, orDefault(reason, "allowed by hook "+r.h.Source)
		}
	}
	switch o.Decision { // the older top-level form
	case "block":
		return vDeny, orDefault(o.Reason, "blocked by hook "+r.h.Source)
	case "approve":
		return vAllow, orDefault(o.Reason, "allowed by hook "+r.h.Source)
	}
	return vNone, ""
}

func updatedInput(r *result) json.RawMessage {
	if r.failed != "" || r.blocked() || r.out == nil || r.out.Specific == nil {
		return nil
	}
	return r.out.Specific.UpdatedInput
}

// preToolUse is the BeforeTool hook: every matching handler runs in
// parallel with the same stdin; their decisions combine deny > defer > ask >
// allow; then the updatedInputs apply in configuration order, a handler
// whose input changed since it ran being run again on the rewritten input.
func (x *runtime) preToolUse(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
	name := claudenames.Name(ev.Name)
	input := claudenames.ToInput(ev.Name, ev.Args, x.opts.ProjectDir)
	hs := x.handlers(claudenames.PreToolUse, name, name, input)
	if len(hs) == 0 {
		return nil, nil
	}
	mk := func(in json.RawMessage) []byte {
		return x.stdin(ctx, claudenames.PreToolUse, map[string]any{"tool_name": name, "tool_input": in, "tool_use_id": ev.ID, "tollgate_tool": ev.Name, "tollgate_turn": ev.Turn})
	}
	rs := x.runAll(ctx, claudenames.PreToolUse, hs, mk(input))
	if err := stopped(rs); err != nil {
		return nil, err
	}
	best, reasons := vNone, map[verdict][]string{}
	var notes []string // additionalContext, for the model with the call's result
	for _, r := range rs {
		v, reason := x.preVerdict(r)
		reasons[v] = append(reasons[v], reason)
		best = max(best, v)
		if r.failed == "" && r.out != nil && r.out.Specific != nil && r.out.Specific.AdditionalContext != "" {
			notes = append(notes, r.out.Specific.AdditionalContext)
		}
	}
	withNotes := func(ov *hooks.ToolOverride) *hooks.ToolOverride {
		if len(notes) > 0 {
			if ov == nil {
				ov = &hooks.ToolOverride{}
			}
			ov.Context = strings.Join(notes, "\n")
		}
		return ov
	}
	switch best {
	case vDeny:
		return withNotes(hooks.Deny(strings.Join(reasons[vDeny], "; "))), nil
	case vDefer, vAsk:
		prompt := fmt.Sprintf("Allow %s? (%s)", name, strings.Join(append(reasons[vDefer], reasons[vAsk]...), "; "))
		return withNotes(hooks.Ask(tool.Request{Kind: tool.KindApproval, Prompt: prompt})), nil
	}
	// Rewrites, in configuration order.
	cur, rewritten := input, false
	var by []string
	for i, r := range rs {
		up := updatedInput(r)
		if up == nil {
			continue
		}
		if rewritten { // it saw the input before the earlier rewrites: ask it again
			r = x.run(ctx, hs[i], claudenames.PreToolUse, mk(cur))
			x.report(ctx, claudenames.PreToolUse, r)
			if err := stopped([]*result{r}); err != nil {
				return nil, err
			}
			if v, reason := x.preVerdict(r); v >= vAsk {
				if v == vDeny {
					return withNotes(hooks.Deny(reason)), nil
				}
				return withNotes(hooks.Ask(tool.Request{Kind: tool.KindApproval, Prompt: fmt.Sprintf("Allow %s? (%s)", name, reason)})), nil
			}
			if up = updatedInput(r); up == nil {
				continue
			}
		}
		cur, rewritten = up, true
		by = append(by, r.h.Source)
	}
	ov := &hooks.ToolOverride{}
	if rewritten {
		ov.Args = claudenames.FromInput(ev.Name, cur)
		ov.Reason = "updatedInput from " + strings.Join(by, ", ")
	}
	if best == vAllow {
		ov.Allow = true
		ov.Reason = strings.Join(append(reasons[vAllow], ov.Reason), "; ")
		ov.Reason = strings.TrimSuffix(ov.Reason, "; ")
	}
	if !rewritten && !ov.Allow {
		return withNotes(nil), nil
	}
	return withNotes(ov), nil
}

// toolResponse gives a result the shape Claude Code's hooks read: Bash's
// {stdout, stderr, interrupted, isImage}; for other tools the output text.
func toolResponse(name string, res tool.Result) any {
	if name != "bash" {
		return res.Output
	}
	interrupted := false
	if t, ok := res.Metadata["timedOut"].(bool); ok && t {
		interrupted = true
	}
	if res.IsError && strings.Contains(res.Output, "[cancelled after") {
		interrupted = true
	}
	return map[string]any{"stdout": res.Output, "stderr": "", "interrupted": interrupted, "isImage": false}
}

// postToolUse is the AfterTool hook, for PostToolUse (a result that is not
// an error) and PostToolUseFailure (an error result).
func (x *runtime) postToolUse(ctx context.Context, ev *hooks.AfterToolEvent) (*hooks.ToolOverride, error) {
	event := Event(claudenames.PostToolUse)
	if ev.Result.IsError {
		event = claudenames.PostToolUseFailure
	}
	name := claudenames.Name(ev.Name)
	input := claudenames.ToInput(ev.Name, ev.Args, x.opts.ProjectDir)
	hs := x.handlers(event, name, name, input)
	if len(hs) == 0 {
		return nil, nil
	}
	fields := map[string]any{"tool_name": name, "tool_input": input, "tool_use_id": ev.ID, "tollgate_tool": ev.Name, "tollgate_turn": ev.Turn}
	if event == claudenames.PostToolUse {
		fields["tool_response"] = toolResponse(ev.Name, ev.Result)
	} else {
		fields["error"] = ev.Result.Output
	}
	rs := x.runAll(ctx, event, hs, x.stdin(ctx, event, fields))
	if err := stopped(rs); err != nil {
		return nil, err
	}
	res := ev.Result.Clone()
	changed := false
	var notes []string
	for _, r := range rs {
		switch {
		case r.failed != "":
			if x.failMode(event) == claudenames.FailClosed {
				return hooks.Replace(tool.Errorf("hook failed: %s %s; the result was withheld", r.h.String(), r.failed)), nil
			}
		case r.blocked():
			notes = append(notes, r.blockReason())
		case r.out != nil:
			if s := r.out.Specific; s != nil {
				if len(s.UpdatedToolOutput) > 0 && string(s.UpdatedToolOutput) != "null" {
					var text string
					if json.Unmarshal(s.UpdatedToolOutput, &text) != nil {
						text = string(s.UpdatedToolOutput)
					}
					res.Output, changed = text, true
				}
				if s.AdditionalContext != "" {
					notes = append(notes, s.AdditionalContext)
				}
			}
			if r.out.Decision == "block" {
				notes = append(notes, orDefault(r.out.Reason, "blocked by hook "+r.h.Source))
			}
		}
	}
	if len(notes) > 0 {
		res.Output = strings.TrimRight(res.Output, "\n") + "\n\n" + strings.Join(notes, "\n")
		changed = true
	}
	if !changed {
		return nil, nil
	}
	return hooks.Replace(res), nil
}

// permissionRequest is the Permission hook: allow or deny from any handler
// (deny wins); updatedInput becomes the edited arguments.
func (x *runtime) permissionRequest(ctx context.Context, ev *hooks.PermissionEvent) (*tool.Answer, error) {
	name := claudenames.Name(ev.Name)
	input := claudenames.ToInput(ev.Name, ev.Args, x.opts.ProjectDir)
	hs := x.handlers(claudenames.PermissionRequest, name, name, input)
	if len(hs) == 0 {
		return nil, nil
	}
	rs := x.runAll(ctx, claudenames.PermissionRequest, hs, x.stdin(ctx, claudenames.PermissionRequest, map[string]any{
		"tool_name": name, "tool_input": input, "tool_use_id": ev.ID, "permission_suggestions": []any{},
		"tollgate_tool": ev.Name, "tollgate_turn": ev.Turn, "tollgate_request_id": ev.Request.ID, "tollgate_prompt": ev.Request.Prompt,
	}))
	if err := stopped(rs); err != nil {
		return nil, err
	}
	var allow *tool.Answer
	for _, r := range rs {
		switch {
		case r.failed != "":
			if x.failMode(claudenames.PermissionRequest) == claudenames.FailClosed {
				return &tool.Answer{OK: false, Reason: "hook failed: " + r.h.String() + " " + r.failed}, nil
			}
		case r.blocked():
			return &tool.Answer{OK: false, Reason: r.blockReason()}, nil
		case r.out != nil && r.out.Specific != nil && r.out.Specific.Decision != nil:
			d := r.out.Specific.Decision
			if d.Behavior == "deny" {
				return &tool.Answer{OK: false, Reason: orDefault(d.Message, "denied by hook "+r.h.Source)}, nil
			}
			if allow == nil {
				allow = &tool.Answer{OK: true, Reason: orDefault(d.Message, "allowed by hook "+r.h.Source)}
				if len(d.UpdatedInput) > 0 {
					allow.Data = claudenames.FromInput(ev.Name, d.UpdatedInput)
				}
			}
		}
	}
	return allow, nil
}

// contextText is what a result adds to the model's context: additionalContext,
// or plain stdout on exit 0 (UserPromptSubmit and SessionStart).
func contextText(r *result) string {
	if r.failed != "" || r.exit != 0 {
		return ""
	}
	if r.out != nil {
		if r.out.Specific != nil {
			return r.out.Specific.AdditionalContext
		}
		return ""
	}
	return strings.TrimSpace(r.stdout)
}

// start is the Start hook: SessionStart (source startup or resume), then, on
// a new run, UserPromptSubmit. Context they add is appended to the prompt; a
// block ends the run before any model call.
func (x *runtime) start(ctx context.Context, ev *hooks.StartEvent) (*hooks.StartOverride, error) {
	source := "startup"
	if ev.Resumed {
		source = "resume"
	}
	var extra []string
	hs := x.handlers(claudenames.SessionStart, source, "", nil)
	if len(hs) > 0 {
		rs := x.runAll(ctx, claudenames.SessionStart, hs, x.stdin(ctx, claudenames.SessionStart, map[string]any{"source": source}))
		if err := stopped(rs); err != nil {
			return nil, err
		}
		for _, r := range rs {
			if r.failed != "" && x.failMode(claudenames.SessionStart) == claudenames.FailClosed {
				return &hooks.StartOverride{Block: "hook failed: " + r.h.String() + " " + r.failed}, nil
			}
			if t := contextText(r); t != "" {
				extra = append(extra, t)
			}
		}
	}
	if ev.Resumed {
		if len(extra) > 0 {
			x.log.LogAttrs(ctx, slog.LevelWarn, "SessionStart context on a resume is not added to the transcript", slog.Int("hooks", len(extra)))
		}
		return nil, nil
	}
	hs = x.handlers(claudenames.UserPromptSubmit, "", "", nil)
	if len(hs) > 0 {
		rs := x.runAll(ctx, claudenames.UserPromptSubmit, hs, x.stdin(ctx, claudenames.UserPromptSubmit, map[string]any{"prompt": ev.Prompt}))
		if err := stopped(rs); err != nil {
			return nil, err
		}
		for _, r := range rs {
			switch {
			case r.failed != "":
				if x.failMode(claudenames.UserPromptSubmit) == claudenames.FailClosed {
					return &hooks.StartOverride{Block: "hook failed: " + r.h.String() + " " + r.failed}, nil
				}
			case r.blocked():
				return &hooks.StartOverride{Block: r.blockReason()}, nil
			case r.out != nil && r.out.Decision == "block":
				return &hooks.StartOverride{Block: orDefault(r.out.Reason, "blocked by hook "+r.h.Source)}, nil
			}
			if t := contextText(r); t != "" {
				extra = append(extra, t)
			}
		}
	}
	if len(extra) == 0 {
		return nil, nil
	}
	return &hooks.StartOverride{Prompt: ev.Prompt + "\n\n" + strings.Join(extra, "\n\n")}, nil
}

// stop is the Stop hook: a block (decision "block" with a reason, or exit 2
// with stderr) continues the run with the reason.
func (x *runtime) stop(ctx context.Context, ev *hooks.StopEvent) (string, error) {
	hs := x.handlers(claudenames.Stop, "", "", nil)
	if len(hs) == 0 {
		return "", nil
	}
	rs := x.runAll(ctx, claudenames.Stop, hs, x.stdin(ctx, claudenames.Stop, map[string]any{
		"stop_hook_active": ev.Continuations > 0, "last_assistant_message": ev.Text, "tollgate_turn": ev.Turn,
	}))
	return x.continueReason(claudenames.Stop, rs), nil
}

// subagentStop is the SubagentStop hook, on the final answer of a sub-agent
// that one of this agent's tools started: session_id is the calling run's ID
// (the session the sub-agent works for), agent_id the sub-agent's run ID and
// agent_type the sub-agent's ID, which matchers test. A block continues the
// sub-agent with the reason, as Stop does for the run itself.
func (x *runtime) subagentStop(ctx context.Context, ev *hooks.SubagentStopEvent) (string, error) {
	hs := x.handlers(claudenames.SubagentStop, ev.AgentID, "", nil)
	if len(hs) == 0 {
		return "", nil
	}
	rs := x.runAll(ctx, claudenames.SubagentStop, hs, x.stdin(ctx, claudenames.SubagentStop, map[string]any{
		"session_id": ev.ParentRunID, "stop_hook_active": ev.Continuations > 0,
		"agent_id": ev.RunID, "agent_type": ev.AgentID, "agent_transcript_path": "",
		"last_assistant_message": ev.Text, "tollgate_turn": ev.Turn,
		"tollgate_parent_run_id": ev.ParentRunID, "tollgate_parent_agent": ev.ParentAgentID,
	}))
	return x.continueReason(claudenames.SubagentStop, rs), nil
}

// continueReason reads the results of Stop or SubagentStop handlers: the
// reasons of those that block (or failed, where the event fails closed),
// one per line; "" when none does or one says continue: false.
func (x *runtime) continueReason(event Event, rs []*result) string {
	for _, r := range rs {
		if r.failed == "" && r.out != nil && r.out.Continue != nil && !*r.out.Continue {
			return "" // continue: false wins: the run ends
		}
	}
	var reasons []string
	for _, r := range rs {
		switch {
		case r.failed != "":
			if x.failMode(event) == claudenames.FailClosed {
				reasons = append(reasons, "hook failed: "+r.h.String()+" "+r.failed)
			}
		case r.blocked():
			reasons = append(reasons, r.blockReason())
		case r.out != nil && r.out.Decision == "block":
			reasons = append(reasons, orDefault(r.out.Reason, "a stop hook asks you to go on"))
		}
	}
	return strings.Join(reasons, "\n")
}

// sessionEnd is the End hook.
func (x *runtime) sessionEnd(ctx context.Context, ev *hooks.EndEvent) error {
	hs := x.handlers(claudenames.SessionEnd, "other", "", nil)
	if len(hs) == 0 {
		return nil
	}
	x.runAll(ctx, claudenames.SessionEnd, hs, x.stdin(ctx, claudenames.SessionEnd, map[string]any{"reason": "other", "tollgate_status": ev.Status, "tollgate_reason": ev.Reason}))
	return nil
}

// notification is the Pending hook: notification_type "permission_prompt"
// for an approval, "elicitation_dialog" for other requests.
func (x *runtime) notification(ctx context.Context, ev *hooks.PendingEvent) error {
	typ := "permission_prompt"
	if ev.Request.Kind != tool.KindApproval {
		typ = "elicitation_dialog"
	}
	hs := x.handlers(claudenames.Notification, typ, "", nil)
	if len(hs) == 0 {
		return nil
	}
	x.runAll(ctx, claudenames.Notification, hs, x.stdin(ctx, claudenames.Notification, map[string]any{
		"message": ev.Request.Prompt, "title": "tollgate", "notification_type": typ,
		"tool_use_id": ev.ID, "tool_name": claudenames.Name(ev.Name), "tollgate_request_id": ev.Request.ID,
	}))
	return nil
}
