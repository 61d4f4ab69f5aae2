package claudegate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"
	"unicode/utf8"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/claudenames"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/tool"
)

// Asker asks a person about a call the policies ask about, and waits.
type Asker interface {
	// Ask shows p's request about call c (of the session of in) to a person
	// and waits for the answer until ctx ends. A nil answer and a nil error
	// mean that no answer came in time.
	Ask(ctx context.Context, in *Input, c gate.Call, p *gate.Pending) (*tool.Answer, error)
}

// Options configures a [Bridge]. StateDir is required.
type Options struct {
	// Policies judge every call, each with the session's cwd as its
	// working directory (policy.Policy.WithWorkdir), combined
	// deny > ask > allow.
	Policies []*policy.Policy
	// Authorizers are heard after the policies: a server's view of what
	// the hook's own policy said, say.
	Authorizers []approval.Authorizer
	// Hooks are seed 002's lifecycle hooks, heard as for any call:
	// BeforeTool and Permission at PreToolUse, AfterTool at PostToolUse,
	// where a replaced result reaches Claude Code as updatedToolOutput (the
	// model sees the replacement, a redaction say); nil means none.
	Hooks *hooks.Hooks
	// Listener, if set, hears the calls that run (seed 000's hooks):
	// PRE_TOOL_USE when PreToolUse allows a call, POST_TOOL_USE and
	// ON_ERROR when PostToolUse or PostToolUseFailure reports its result.
	Listener hooks.ToolCallListener
	// OnRecord, if set, receives the record of every call: at PreToolUse
	// for a call that does not run, at PostToolUse for one that ran.
	OnRecord func(ctx context.Context, rec gate.Record)
	// StateDir holds what a session's events pass on to the next (the
	// calls allowed or asked at PreToolUse, completed at PostToolUse).
	StateDir string
	// Asker, if set, asks a person about a call that the policies ask
	// about, and waits (the approvals server); nil leaves the question to
	// Claude Code's own permission prompt.
	Asker Asker
	// Principal is who asks (the token's principal on a server); it is
	// the call's.
	Principal tool.Principal
	// Prompter names the person who answers Claude Code's own prompt
	// (the operating system's user): an ask approved there is recorded
	// as approved by this person.
	Prompter string
	// ReadTranscript lets the bridge read the transcript file an event
	// names (transcript_path), for the last prompt and stated intent shown
	// with a request; only where that file is the agent's user's own (the
	// command hook), never on a server, where the path would name the
	// server's files.
	ReadTranscript bool
	// ApprovalTTL, if positive, bounds how long an approval request waits.
	ApprovalTTL time.Duration
	// Source is the agent whose hooks the bridge answers, the calls'
	// source: gate.SourceClaudeCode (the default) or gate.SourceCodex.
	// Codex's PreToolUse cannot ask, so for Codex an ask without an Asker
	// is a deny, recorded as declined by runtime:codex, whose reason says
	// that a person must approve the call ([CodexAnswer] gives Codex's
	// dialect of the answers).
	Source gate.Source
	// Logger receives decisions and failures (never argument values);
	// default discards.
	Logger *slog.Logger
}

// Bridge answers Claude Code's hook events with tollgate's decisions. It
// is safe for concurrent use; its state lives in files, so that every
// event may come to a new process.
type Bridge struct {
	opts Options
	log  *slog.Logger
}

// New returns a bridge with opts; the error is for a missing StateDir.
func New(opts *Options) (*Bridge, error) {
	if opts == nil || opts.StateDir == "" {
		return nil, errors.New("claudegate: Options.StateDir is required")
	}
	o := *opts
	if o.Source == "" {
		o.Source = gate.SourceClaudeCode
	}
	lg := o.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	return &Bridge{opts: o, log: lg}, nil
}

// Handle answers one event. It never returns an error: whatever keeps it
// from a decision (a bad state file, a policy that fails, a panic) is
// answered with [Failed], a deny. Events other than those the package
// documents get no opinion.
func (b *Bridge) Handle(ctx context.Context, in *Input) (a Answer) {
	defer func() {
		if p := recover(); p != nil {
			b.log.Error("claude-code hook panicked", "event", in.HookEventName, "panic", p)
			a = Failed(in.HookEventName, fmt.Sprintf("tollgate's hook failed (%v); the call was not allowed", p))
		}
	}()
	switch in.HookEventName {
	case claudenames.PreToolUse:
		return b.preToolUse(ctx, in)
	case claudenames.PermissionRequest:
		return b.permissionRequest(ctx, in)
	case claudenames.PostToolUse, claudenames.PostToolUseFailure:
		return b.postToolUse(ctx, in)
	case claudenames.UserPromptSubmit:
		return b.remember(in, func(n *notes) { n.Prompt = in.Prompt })
	case claudenames.Stop:
		return b.remember(in, func(n *notes) { n.Intent = in.LastAssistantMessage })
	case claudenames.SessionEnd:
		b.sweep(ctx, in)
		if err := b.session(in.SessionID).remove(); err != nil {
			b.log.Warn("claude-code session state not removed", "error", err)
		}
	}
	return none()
}

// claudeCodeRuntime is who ended a call that Claude Code never ran.
var claudeCodeRuntime = tool.Principal{Kind: tool.PrincipalRuntime, Name: "claude-code"}

// sweep records, at SessionEnd, the calls of the session that never came
// to PostToolUse: an ask Claude Code's prompt did not approve (declined;
// in -p mode nobody is asked), or a call tollgate allowed that Claude Code
// did not run (its own rules, an interrupt). Each call is recorded once.
func (b *Bridge) sweep(ctx context.Context, in *Input) {
	s := b.session(in.SessionID)
	names, _ := filepath.Glob(filepath.Join(s.dir, "call-*.json"))
	if len(names) == 0 {
		return
	}
	g, err := b.gate(in.Cwd, nil, true)
	if err != nil {
		return
	}
	for _, name := range names {
		var sv saved
		if found, err := s.take(name, &sv); err != nil || !found {
			continue
		}
		env := &gate.Env{Tools: oneTool{toolOf(sv.ClaudeName)}}
		switch {
		case sv.Pending != nil:
			reason := "asked at Claude Code's permission prompt, and not approved there: the call did not run"
			g.End(ctx, env, sv.Call, tool.Errorf("%s", reason), gate.Decision{Outcome: gate.OutcomeDeclined, By: claudeCodeRuntime, Reason: reason, Votes: sv.Pending.Votes})
		case sv.Allowed != nil:
			d := sv.Allowed.Record.Decision
			d.Reason = "Claude Code did not run the call (no PostToolUse came); tollgate had " + string(d.Outcome) + " it"
			g.End(ctx, env, sv.Call, tool.Errorf("%s", d.Reason), d)
		}
	}
}

// notes are what a session's events say about it: the last user prompt
// and the model's last stated intent, shown with an approval request.
type notes struct {
	Prompt string `json:"prompt,omitempty"`
	Intent string `json:"intent,omitempty"`
}

// maxNoteBytes bounds a saved prompt or intent.
const maxNoteBytes = 4 << 10

func (b *Bridge) remember(in *Input, set func(*notes)) Answer {
	s := b.session(in.SessionID)
	name := filepath.Join(s.dir, "notes.json")
	var n notes
	if _, err := s.read(name, &n); err != nil {
		b.log.Warn("claude-code session notes unreadable", "error", err)
	}
	set(&n)
	n.Prompt, n.Intent = cut(n.Prompt, maxNoteBytes), cut(n.Intent, maxNoteBytes)
	if err := s.save(name, n); err != nil {
		b.log.Warn("claude-code session notes not saved", "error", err)
	}
	return none()
}

// Notes returns the session's last user prompt and the model's last
// stated intent, as UserPromptSubmit and Stop left them (empty when none).
func (b *Bridge) Notes(sessionID string) (prompt, intent string) {
	s := b.session(sessionID)
	var n notes
	_, _ = s.read(filepath.Join(s.dir, "notes.json"), &n)
	return n.Prompt, n.Intent
}

// Context returns what a person asked about one of in's calls is shown of
// the session: the last user prompt and the model's last stated intent,
// from the transcript (Options.ReadTranscript), else from what the event
// carries (TollgatePrompt, TollgateIntent), else from the session's notes.
func (b *Bridge) Context(in *Input) (prompt, intent string) {
	if b.opts.ReadTranscript {
		prompt, intent = TranscriptNotes(in.TranscriptPath)
	}
	if prompt == "" && intent == "" {
		prompt, intent = cut(in.TollgatePrompt, maxNoteBytes), cut(in.TollgateIntent, maxNoteBytes)
	}
	if prompt == "" && intent == "" {
		prompt, intent = b.Notes(in.SessionID)
	}
	return prompt, intent
}

func contextText(prompt, intent string) string {
	s := "\n"
	if prompt != "" {
		s += "\nLast user prompt: " + prompt
	}
	if intent != "" {
		s += "\nThe model's stated intent: " + intent
	}
	return s
}

// cut cuts s to at most n bytes, never in a UTF-8 character.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// call is the gate's call of a tool event: tollgate's name and arguments.
func (b *Bridge) call(in *Input) (gate.Call, claudeTool) {
	t := toolOf(in.ToolName)
	return gate.Call{
		ID: in.ToolUseID, Name: t.s.Name, Args: TollgateArgs(in.ToolName, in.ToolInput),
		RunID: in.SessionID, Source: b.opts.Source, Principal: b.opts.Principal, Workspace: in.Cwd,
	}, t
}

// gate returns the gate for a session working in cwd: the policies with
// cwd as their working directory.
func (b *Bridge) gate(cwd string, listener hooks.ToolCallListener, record bool) (*gate.Gate, error) {
	azs := make([]approval.Authorizer, 0, len(b.opts.Policies)+len(b.opts.Authorizers))
	real := cwd
	if filepath.IsAbs(cwd) && len(b.opts.Policies) > 0 {
		if r, err := filepath.EvalSymlinks(cwd); err == nil {
			real = r
		}
	}
	for _, p := range b.opts.Policies {
		if filepath.IsAbs(cwd) {
			wp, err := p.WithWorkdir(filepath.Clean(real), filepath.Clean(cwd))
			if err != nil {
				return nil, err
			}
			p = wp
		}
		azs = append(azs, b.patchPolicy(p))
	}
	azs = append(azs, b.patchAuthorizers(b.opts.Authorizers, cwd)...)
	opts := gate.Options{Authorizers: azs, Hooks: b.opts.Hooks, Logger: b.log, ApprovalTTL: b.opts.ApprovalTTL}
	if record {
		opts.OnRecord = b.opts.OnRecord
	}
	if listener != nil {
		opts.Listener = func() hooks.ToolCallListener { return listener }
	}
	return gate.New(&opts), nil
}

// preToolUse decides a call: deny with the reason, allow (with the edited
// input when a person edited it), or ask (Claude Code's prompt, or the
// Asker). An allowed or asked call is saved for PostToolUse.
func (b *Bridge) preToolUse(ctx context.Context, in *Input) Answer {
	c, t := b.call(in)
	g, err := b.gate(in.Cwd, nil, true)
	if err != nil {
		return Failed(in.HookEventName, "tollgate could not judge the call: "+err.Error())
	}
	env := &gate.Env{Tools: oneTool{t}}
	ru := g.Decide(ctx, env, c, nil, nil)
	if ru.Pending != nil {
		switch {
		case b.opts.Asker == nil && b.opts.Source == gate.SourceCodex:
			ru = b.cannotAsk(ctx, g, env, c, ru.Pending)
		case b.opts.Asker == nil:
			if err := b.saveCall(in, c, nil, ru.Pending); err != nil {
				return Failed(in.HookEventName, "tollgate could not keep the call's state: "+err.Error())
			}
			return ask(ru.Pending.Request.Prompt)
		default:
			ru = b.askAndWait(ctx, in, g, env, c, ru.Pending)
		}
	}
	switch {
	case ru.Err != nil:
		return Failed(in.HookEventName, "tollgate's hook failed: "+ru.Err.Error())
	case ru.Record != nil:
		return deny(in.HookEventName, ru.Record.Output)
	case ru.Allowed == nil:
		return Failed(in.HookEventName, "tollgate reached no decision")
	}
	if err := b.saveCall(in, c, ru.Allowed, nil); err != nil {
		return Failed(in.HookEventName, "tollgate could not keep the call's state: "+err.Error())
	}
	if b.opts.Listener != nil {
		l := b.opts.Listener
		use := &hooks.ToolUse{Tool: c.Name, Args: ru.Allowed.Args, CallID: c.ID, RunID: c.RunID}
		guard(b.log, func() { l.PreToolUse(ctx, use) })
	}
	d := ru.Allowed.Record.Decision
	var input json.RawMessage
	if approval.Digest(ru.Allowed.Args) != approval.Digest(c.Args) {
		input = ClaudeInput(in.ToolName, ru.Allowed.Args, in.Cwd)
	}
	if d.By == approval.Default && input == nil {
		// Nothing in tollgate's policies spoke: Claude Code's own
		// permissions decide, as if the hook were not there.
		return none()
	}
	return allow(fmt.Sprintf("%s by %s", d.Outcome, d.By), input)
}

// askAndWait asks the Asker and takes the answer up; no answer denies.
// The request shows the session's last prompt and the model's stated
// intent ([Bridge.Context]).
func (b *Bridge) askAndWait(ctx context.Context, in *Input, g *gate.Gate, env *gate.Env, c gate.Call, p *gate.Pending) gate.Ruling {
	if prompt, intent := b.Context(in); prompt != "" || intent != "" {
		p.Request.Prompt += contextText(prompt, intent)
	}
	ans, err := b.opts.Asker.Ask(ctx, in, c, p)
	if err != nil {
		rec := g.End(ctx, env, c, tool.Errorf("the approval request could not be made or answered (%v); the call was not allowed", err),
			gate.Decision{Outcome: gate.OutcomeDenied, By: approval.Runtime, Reason: "approval failed: " + err.Error(), Votes: p.Votes})
		return gate.Ruling{Record: rec}
	}
	if ans == nil {
		rec := g.End(ctx, env, c, tool.Errorf("no one answered the approval request %s in time; the call was not allowed (fail closed)", p.Request.ID),
			gate.Decision{Outcome: gate.OutcomeExpired, By: approval.Runtime, Reason: "no answer in time", Votes: p.Votes})
		return gate.Ruling{Record: rec}
	}
	return g.Decide(ctx, env, c, p, ans)
}

// cannotAsk ends a call the policies ask about where no one can be
// asked (Codex without a server): declined by the runtime, with a reason
// that says a person must approve it.
func (b *Bridge) cannotAsk(ctx context.Context, g *gate.Gate, env *gate.Env, c gate.Call, p *gate.Pending) gate.Ruling {
	reason := "a person must approve this call and " + string(b.opts.Source) + " cannot ask (run its hook with --server to ask on tollgate's approvals page): " + p.Request.Prompt
	by := tool.Principal{Kind: tool.PrincipalRuntime, Name: string(b.opts.Source)}
	rec := g.End(ctx, env, c, tool.Errorf("%s", reason), gate.Decision{Outcome: gate.OutcomeDeclined, By: by, Reason: reason, Votes: p.Votes})
	return gate.Ruling{Record: rec}
}

func (b *Bridge) saveCall(in *Input, c gate.Call, a *gate.Allowed, p *gate.Pending) error {
	if in.ToolUseID == "" {
		return nil // nothing to pair a PostToolUse with
	}
	s := b.session(in.SessionID)
	return s.save(s.callFile(in.ToolUseID), saved{ClaudeName: in.ToolName, Call: c, Allowed: a, Pending: p})
}

// permissionRequest refuses what the policies deny; anything else is left
// to Claude Code's prompt (a hook's allow never overrides its ask rules).
func (b *Bridge) permissionRequest(ctx context.Context, in *Input) Answer {
	c, t := b.call(in)
	// PreToolUse recorded this call; this second look records nothing.
	g, err := b.gate(in.Cwd, nil, false)
	if err != nil {
		return Failed(in.HookEventName, "tollgate could not judge the call: "+err.Error())
	}
	env := &gate.Env{Tools: oneTool{t}}
	ru := g.Decide(ctx, env, c, nil, nil)
	switch {
	case ru.Err != nil:
		return Failed(in.HookEventName, "tollgate's hook failed: "+ru.Err.Error())
	case ru.Record != nil:
		return deny(in.HookEventName, ru.Record.Output)
	}
	return none()
}

// postToolUse completes the call saved at PreToolUse with the result
// Claude Code reports, and records it.
func (b *Bridge) postToolUse(ctx context.Context, in *Input) Answer {
	s := b.session(in.SessionID)
	var sv saved
	found, err := s.take(s.callFile(in.ToolUseID), &sv)
	if err != nil {
		b.log.Warn("claude-code call state unreadable", "error", err)
		return failed(in.HookEventName, "tollgate could not read the call's state: "+err.Error())
	}
	if !found {
		b.log.Warn("claude-code call ran without a PreToolUse decision", "session", in.SessionID, "call", in.ToolUseID, "tool", in.ToolName)
		return none()
	}
	var listener hooks.ToolCallListener
	if b.opts.Listener != nil {
		listener = afterOnly{b.opts.Listener}
	}
	g, err := b.gate(in.Cwd, listener, true)
	if err != nil {
		return failed(in.HookEventName, err.Error())
	}
	env := &gate.Env{Tools: oneTool{toolOf(sv.ClaudeName)}}
	a := sv.Allowed
	if a == nil && sv.Pending != nil {
		// Claude Code's prompt asked the person, who let it run.
		ans := &tool.Answer{ID: sv.Pending.Request.ID, OK: true, By: b.opts.Prompter, Reason: "approved at Claude Code's permission prompt"}
		ru := g.Decide(ctx, env, sv.Call, sv.Pending, ans)
		if ru.Allowed == nil {
			b.log.Warn("claude-code call ran, approved at Claude Code's prompt, that tollgate now refuses", "call", in.ToolUseID)
			return none()
		}
		a = ru.Allowed
	}
	if a == nil {
		return none()
	}
	res := resultOf(in)
	ru := g.Complete(ctx, env, a, gate.Reported(res, 0))
	if ru.Err != nil {
		return failed(in.HookEventName, "tollgate's after-tool hooks failed: "+ru.Err.Error())
	}
	if ru.Record != nil && len(ru.Record.ReplacedBy) > 0 && in.HookEventName == claudenames.PostToolUse {
		// An AfterTool hook replaced the result: the model sees the
		// replacement instead of what the tool gave.
		out, _ := json.Marshal(ru.Record.Output)
		return Answer{Output: &Output{Specific: &Specific{HookEventName: claudenames.PostToolUse, UpdatedToolOutput: out}}}
	}
	return none()
}

// resultOf is the tool's result as Claude Code reports it: tool_response
// as text (a JSON string's value, or the JSON itself), or
// PostToolUseFailure's error.
func resultOf(in *Input) tool.Result {
	if in.HookEventName == claudenames.PostToolUseFailure {
		return tool.Result{Output: in.Error, IsError: true}
	}
	var s string
	if json.Unmarshal(in.ToolResponse, &s) == nil {
		return tool.Text(s)
	}
	return tool.Text(string(in.ToolResponse))
}

// afterOnly is a listener whose PreToolUse is silent: the bridge fires
// PRE_TOOL_USE when PreToolUse allows a call, before it runs.
type afterOnly struct{ l hooks.ToolCallListener }

func (afterOnly) PreToolUse(context.Context, *hooks.ToolUse) {}
func (a afterOnly) PostToolUse(ctx context.Context, u *hooks.ToolUse) {
	a.l.PostToolUse(ctx, u)
}
func (a afterOnly) OnError(ctx context.Context, u *hooks.ToolUse) { a.l.OnError(ctx, u) }

func guard(lg *slog.Logger, fn func()) {
	defer func() {
		if p := recover(); p != nil {
			lg.Error("tool call listener panicked", "panic", p)
		}
	}()
	fn()
}

// Judge returns what the policies say about a tool event's call, without
// recording it or keeping any state: deny with the reason the model would
// read, ask with the request's prompt, or allow. A hook that forwards
// events to a server judges them with its own policy first.
func (b *Bridge) Judge(ctx context.Context, in *Input) (approval.Effect, string) {
	c, t := b.call(in)
	g, err := b.gate(in.Cwd, nil, false)
	if err != nil {
		return approval.Deny, "tollgate could not judge the call: " + err.Error()
	}
	ru := g.Decide(ctx, &gate.Env{Tools: oneTool{t}}, c, nil, nil)
	switch {
	case ru.Err != nil:
		return approval.Deny, "tollgate's hook failed: " + ru.Err.Error()
	case ru.Record != nil:
		return approval.Deny, ru.Record.Output
	case ru.Pending != nil:
		return approval.Ask, ru.Pending.Request.Prompt
	}
	return approval.Allow, ""
}
