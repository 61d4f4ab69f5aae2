// Package hookrun runs the chains of a [hooks.Hooks] for the agent and the
// gate: each stage's hooks in order, each on its own copy of the event, an
// error or a panic turned into a [*hooks.Error]. Package hooks holds the
// chains; what runs them is not part of its API.
package hookrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/toolctx"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// call runs fn, turning an error or a panic into *Error.
func call[T any](stage hooks.Stage, name string, fn func() (T, error)) (out T, err error) {
	defer func() {
		if p := recover(); p != nil {
			var zero T
			out, err = zero, &hooks.Error{Stage: stage, Hook: name, Panic: p, Stack: string(debug.Stack())}
		}
	}()
	out, err = fn()
	if err != nil {
		err = &hooks.Error{Stage: stage, Hook: name, Err: err}
	}
	return out, err
}

// LLMOutcome is the combined effect of a BeforeLLM chain.
type LLMOutcome struct {
	Messages []model.Message
	Tools    []model.ToolDef
	Model    string
	// Response, when non-nil, is a canned response: do not call the model.
	Response *model.Response
	// By names the hook that supplied Response.
	By string
}

// BeforeLLM runs the BeforeLLM chain on ev and returns the messages, tools and
// model to use, each as replaced by the hooks in order, or a canned response.
// ev is not modified. The error is an [*hooks.Error].
func BeforeLLM(ctx context.Context, h *hooks.Hooks, ev hooks.BeforeLLMEvent) (LLMOutcome, error) {
	out := LLMOutcome{Messages: ev.Messages, Tools: ev.Tools, Model: ev.Model}
	if h == nil {
		return out, nil
	}
	evs := make([]hooks.BeforeLLMEvent, len(h.Chain(hooks.StageBeforeLLM))) // every hook's event in one allocation
	for i, hk := range h.Chain(hooks.StageBeforeLLM) {
		fn := hk.Func.(hooks.BeforeLLMFunc)
		e := &evs[i]
		*e = hooks.BeforeLLMEvent{Messages: cloneMessages(out.Messages), Tools: cloneTools(out.Tools), Model: out.Model, Turn: ev.Turn}
		ov, err := call(hooks.StageBeforeLLM, hk.Name, func() (*hooks.LLMOverride, error) { return fn(ctx, e) })
		if err != nil {
			return out, err
		}
		if ov == nil {
			continue
		}
		if ov.Messages != nil {
			out.Messages = ov.Messages
		}
		if ov.Tools != nil {
			out.Tools = ov.Tools
		}
		if ov.Model != "" {
			out.Model = ov.Model
		}
		if ov.Response != nil {
			out.Response, out.By = ov.Response, hk.Name
			return out, nil
		}
	}
	return out, nil
}

// cloneMessages copies msgs deeply enough that a hook can change anything in
// the copy (tool calls and their arguments included) without touching the
// run's transcript. The tool calls of every message share one allocation,
// and their arguments another; each slice's capacity ends at its length, so
// appending to one never reaches the next.
func cloneMessages(msgs []model.Message) []model.Message {
	out := slices.Clone(msgs)
	ncalls, nbytes := 0, 0
	for _, m := range msgs {
		ncalls += len(m.ToolCalls)
		for _, c := range m.ToolCalls {
			nbytes += len(c.Arguments)
		}
	}
	if ncalls == 0 {
		return out
	}
	calls := make([]model.ToolCall, 0, ncalls)
	args := make(arena, 0, nbytes)
	for i := range out {
		if out[i].ToolCalls != nil {
			start := len(calls)
			calls = append(calls, out[i].ToolCalls...)
			out[i].ToolCalls = calls[start:len(calls):len(calls)]
			for j := range out[i].ToolCalls {
				out[i].ToolCalls[j].Arguments = args.clone(out[i].ToolCalls[j].Arguments)
			}
		}
	}
	return out
}

// cloneTools copies tools down to their schema bytes (in one allocation, as
// cloneMessages does).
func cloneTools(tools []model.ToolDef) []model.ToolDef {
	out := slices.Clone(tools)
	n := 0
	for _, t := range tools {
		n += len(t.InputSchema)
	}
	schemas := make(arena, 0, n)
	for i := range out {
		out[i].InputSchema = schemas.clone(out[i].InputSchema)
	}
	return out
}

// arena hands out copies of byte slices from one allocation; each copy's
// capacity ends at its length, so that appending to one copy never writes
// into another. Beyond its capacity it allocates each copy on its own.
type arena []byte

// clone returns a copy of b (nil for nil).
func (a *arena) clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	if len(*a)+len(b) > cap(*a) {
		return slices.Clone(b)
	}
	start := len(*a)
	*a = append(*a, b...)
	return (*a)[start:len(*a):len(*a)]
}

// AfterLLM runs every AfterLLM hook in order. The first error stops the
// chain and is returned as an [*hooks.Error].
func AfterLLM(ctx context.Context, h *hooks.Hooks, ev hooks.AfterLLMEvent) error {
	if h == nil {
		return nil
	}
	evs := make([]hooks.AfterLLMEvent, len(h.Chain(hooks.StageAfterLLM))) // every hook's event in one allocation
	for i, hk := range h.Chain(hooks.StageAfterLLM) {
		fn := hk.Func.(hooks.AfterLLMFunc)
		e := &evs[i]
		*e = ev
		if _, err := call(hooks.StageAfterLLM, hk.Name, func() (struct{}, error) { return struct{}{}, fn(ctx, e) }); err != nil {
			return err
		}
	}
	return nil
}

// ToolOutcome is the combined effect of a BeforeTool chain.
type ToolOutcome struct {
	// Args are the arguments after every rewrite (the input when none).
	Args json.RawMessage
	// Rewritten reports whether any hook rewrote the arguments.
	Rewritten bool
	// Result, when non-nil, short-circuits the call (it may be a pending request).
	Result *tool.Result
	// By names the hook that short-circuited.
	By string
	// Votes lists every hook that expressed an opinion, in order: Source is
	// the hook ({"kind": "hook", "name": <name>}), Decision is allow,
	// rewrite, deny (an error result), result (a successful short-circuit)
	// or ask (a pending request).
	Votes []tool.Vote
	// Context holds the non-empty [ToolOverride].Context texts of the hooks
	// that ran, in order.
	Context []string
}

// BeforeTool runs the BeforeTool chain on ev. Each hook receives a fresh copy
// of the arguments as rewritten so far; the first hook that returns a Result ends
// the chain. ev is not modified. The error is an [*hooks.Error].
func BeforeTool(ctx context.Context, h *hooks.Hooks, ev hooks.BeforeToolEvent) (ToolOutcome, error) {
	return BeforeToolApproved(ctx, h, ev, nil)
}

// BeforeToolApproved is [BeforeTool] for the retry of a call after
// an approval: a pending request that a hook asks is resolved by the answer
// (seed 002: "ask = a pending(...) result, which wait_for / wait_for_ctx
// resolves"), so the hook is not asked to know about answers.
//
// When a hook returns a pending request and approved(hook, args) reports true
// for its name and the arguments it was shown, its ask is satisfied: it is kept
// as an "ask" vote and the chain goes on to the next hook as if the hook had
// had no opinion. Every other hook is heard as on any call, so a later denial
// or rewrite still counts. approved decides which approval covers which
// arguments (package agent compares the digest of the arguments the request was
// raised for); a nil approved satisfies nothing.
func BeforeToolApproved(ctx context.Context, h *hooks.Hooks, ev hooks.BeforeToolEvent, approved func(hook string, args json.RawMessage) bool) (ToolOutcome, error) {
	out := ToolOutcome{Args: ev.Args}
	if h == nil {
		return out, nil
	}
	// Every hook's event, hints and copy of the arguments, in one
	// allocation each (the arguments' copies may outgrow theirs after a
	// rewrite).
	n := len(h.Chain(hooks.StageBeforeTool))
	evs := make([]hooks.BeforeToolEvent, n)
	var hints []tool.Hints
	if ev.Hints != nil {
		hints = make([]tool.Hints, n)
	}
	args := make(arena, 0, n*len(ev.Args))
	for i, hk := range h.Chain(hooks.StageBeforeTool) {
		fn := hk.Func.(hooks.BeforeToolFunc)
		e := &evs[i]
		*e = ev
		e.Args = args.clone(out.Args)
		if ev.Hints != nil {
			hints[i] = *ev.Hints
			e.Hints = &hints[i]
		}
		if ev.Answer != nil {
			ac := *ev.Answer
			e.Answer = &ac
		}
		ov, err := call(hooks.StageBeforeTool, hk.Name, func() (*hooks.ToolOverride, error) { return fn(ctx, e) })
		if err != nil {
			return out, err
		}
		if ov == nil {
			continue
		}
		if ov.Context != "" {
			out.Context = append(out.Context, ov.Context)
		}
		if ov.Result != nil {
			r := ov.Result.Clone()
			if r.Pending != nil && approved != nil && approved(hk.Name, slices.Clone(out.Args)) {
				out.Votes = append(out.Votes, tool.Vote{Source: hookPrincipal(hk.Name), Decision: tool.VoteAsk, Reason: orPrompt(ov.Reason, r.Pending)})
				continue
			}
			out.Result, out.By = &r, hk.Name
			d := tool.VoteResult
			switch {
			case r.Pending != nil:
				d = tool.VoteAsk
			case r.IsError:
				d = tool.VoteDeny
			}
			reason := ov.Reason
			if reason == "" {
				if r.Pending != nil {
					reason = r.Pending.Prompt
				} else {
					reason = r.Output
				}
			}
			out.Votes = append(out.Votes, tool.Vote{Source: hookPrincipal(hk.Name), Decision: d, Reason: reason})
			return out, nil
		}
		if ov.Args != nil {
			out.Args = slices.Clone(ov.Args)
			out.Rewritten = true
			out.Votes = append(out.Votes, tool.Vote{Source: hookPrincipal(hk.Name), Decision: tool.VoteRewrite, Reason: ov.Reason})
		}
		if ov.Allow {
			out.Votes = append(out.Votes, tool.Vote{Source: hookPrincipal(hk.Name), Decision: tool.VoteAllow, Reason: ov.Reason})
		}
	}
	return out, nil
}

// hookPrincipal is the principal a hook votes and answers as.
func hookPrincipal(name string) tool.Principal {
	return tool.Principal{Kind: tool.PrincipalHook, Name: name}
}

// orPrompt is reason, or the request's prompt when reason is empty.
func orPrompt(reason string, req *tool.Request) string {
	if reason == "" {
		return req.Prompt
	}
	return reason
}

// AfterTool runs the AfterTool chain: each hook sees the result as replaced by
// the ones before it. It returns the final result and the names of the hooks
// that replaced it, in order. ev is not modified. The error is an [*hooks.Error].
func AfterTool(ctx context.Context, h *hooks.Hooks, ev hooks.AfterToolEvent) (tool.Result, []string, error) {
	res := ev.Result
	if h == nil {
		return res, nil, nil
	}
	var by []string
	evs := make([]hooks.AfterToolEvent, len(h.Chain(hooks.StageAfterTool))) // every hook's event and arguments in one allocation each
	args := make(arena, 0, len(h.Chain(hooks.StageAfterTool))*len(ev.Args))
	for i, hk := range h.Chain(hooks.StageAfterTool) {
		fn := hk.Func.(hooks.AfterToolFunc)
		e := &evs[i]
		*e = ev
		e.Args = args.clone(ev.Args)
		e.Result = res.Clone()
		ov, err := call(hooks.StageAfterTool, hk.Name, func() (*hooks.ToolOverride, error) { return fn(ctx, e) })
		if err != nil {
			return res, by, err
		}
		if ov != nil && ov.Result != nil {
			res = ov.Result.Clone()
			by = append(by, hk.Name)
		}
	}
	return res, by, nil
}

// Pending runs every Pending hook in order and returns their errors joined
// (each an [*hooks.Error]).
func Pending(ctx context.Context, h *hooks.Hooks, ev hooks.PendingEvent) error {
	if h == nil {
		return nil
	}
	var errs []error
	for _, hk := range h.Chain(hooks.StagePending) {
		fn := hk.Func.(hooks.PendingFunc)
		e := ev
		if _, err := call(hooks.StagePending, hk.Name, func() (struct{}, error) { return struct{}{}, fn(ctx, &e) }); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Permission asks the Permission hooks in order; the first non-nil answer
// ends the chain and is returned with ID set to ev.Request.ID, Principal to
// the hook ({"kind": "hook", "name": <name>}), and By and Actor cleared. It
// returns nil when no hook answered. The error is an [*hooks.Error].
func Permission(ctx context.Context, h *hooks.Hooks, ev hooks.PermissionEvent) (*tool.Answer, error) {
	if h == nil {
		return nil, nil
	}
	for _, hk := range h.Chain(hooks.StagePermission) {
		fn := hk.Func.(hooks.PermissionFunc)
		e := ev
		e.Args = slices.Clone(ev.Args)
		e.Request.Data = slices.Clone(ev.Request.Data)
		if ev.Hints != nil {
			hc := *ev.Hints
			e.Hints = &hc
		}
		ans, err := call(hooks.StagePermission, hk.Name, func() (*tool.Answer, error) { return fn(ctx, &e) })
		if err != nil {
			return nil, err
		}
		if ans != nil {
			a := *ans
			// A hook answers as itself: it cannot name another answerer.
			a.ID, a.By, a.Principal, a.Actor = ev.Request.ID, "", hookPrincipal(hk.Name), tool.Principal{}
			return &a, nil
		}
	}
	return nil, nil
}

// Start runs the Start hooks in order and returns the prompt as replaced
// by them. A hook that blocks ends the chain with an [*hooks.Error] wrapping
// [hooks.ErrBlocked]; a hook's error is returned as an [*hooks.Error].
func Start(ctx context.Context, h *hooks.Hooks, ev hooks.StartEvent) (string, error) {
	prompt := ev.Prompt
	if h == nil {
		return prompt, nil
	}
	for _, hk := range h.Chain(hooks.StageStart) {
		fn := hk.Func.(hooks.StartFunc)
		e := hooks.StartEvent{Prompt: prompt, Resumed: ev.Resumed}
		ov, err := call(hooks.StageStart, hk.Name, func() (*hooks.StartOverride, error) { return fn(ctx, &e) })
		if err != nil {
			return prompt, err
		}
		if ov == nil {
			continue
		}
		if ov.Block != "" {
			return prompt, &hooks.Error{Stage: hooks.StageStart, Hook: hk.Name, Err: fmt.Errorf("%w: %s", hooks.ErrBlocked, ov.Block)}
		}
		if ov.Prompt != "" && !ev.Resumed {
			prompt = ov.Prompt
		}
	}
	return prompt, nil
}

// End runs every End hook, in order, and returns their errors joined (each
// an [*hooks.Error]); every hook runs whatever the others did.
func End(ctx context.Context, h *hooks.Hooks, ev hooks.EndEvent) error {
	if h == nil {
		return nil
	}
	var errs []error
	for _, hk := range h.Chain(hooks.StageEnd) {
		fn := hk.Func.(hooks.EndFunc)
		e := ev
		if _, err := call(hooks.StageEnd, hk.Name, func() (struct{}, error) { return struct{}{}, fn(ctx, &e) }); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// MaxStopContinuations caps how many times Stop hooks may continue one run,
// counted across its halts and resumes (the count is in the run's state);
// after that the final answer stands.
const MaxStopContinuations = 8

// Stop runs every Stop hook in order and joins the reasons of those that
// continue the run with blank lines; "" means the run ends. The first error
// stops the chain and is returned as an [*hooks.Error].
func Stop(ctx context.Context, h *hooks.Hooks, ev hooks.StopEvent) (string, error) {
	if h == nil {
		return "", nil
	}
	var reasons []string
	for _, hk := range h.Chain(hooks.StageStop) {
		fn := hk.Func.(hooks.StopFunc)
		e := ev
		reason, err := call(hooks.StageStop, hk.Name, func() (string, error) { return fn(ctx, &e) })
		if err != nil {
			return "", err
		}
		if strings.TrimSpace(reason) != "" {
			reasons = append(reasons, reason)
		}
	}
	return strings.Join(reasons, "\n\n"), nil
}

// SubagentStop runs every SubagentStop hook in order and joins the reasons
// of those that continue the sub-agent with blank lines; "" means it ends.
// The first error stops the chain and is returned as an [*hooks.Error].
func SubagentStop(ctx context.Context, h *hooks.Hooks, ev hooks.SubagentStopEvent) (string, error) {
	if h == nil {
		return "", nil
	}
	var reasons []string
	for _, hk := range h.Chain(hooks.StageSubagentStop) {
		fn := hk.Func.(hooks.SubagentStopFunc)
		e := ev
		reason, err := call(hooks.StageSubagentStop, hk.Name, func() (string, error) { return fn(ctx, &e) })
		if err != nil {
			return "", err
		}
		if strings.TrimSpace(reason) != "" {
			reasons = append(reasons, reason)
		}
	}
	return strings.Join(reasons, "\n\n"), nil
}

// WithRun returns ctx carrying info for [hooks.RunFrom]; the agent calls it
// once per run and per resume.
func WithRun(ctx context.Context, info hooks.RunInfo) context.Context {
	return &runContext{Context: ctx, info: info}
}

// runContext is a context carrying a RunInfo, as context.WithValue would,
// in one allocation with it.
type runContext struct {
	context.Context
	info hooks.RunInfo
}

// Value returns the run info (as a *hooks.RunInfo) for toolctx.RunKey{}, and
// ctx's value for any other key.
func (c *runContext) Value(key any) any {
	if key == (toolctx.RunKey{}) {
		return &c.info
	}
	return c.Context.Value(key)
}

func (c *runContext) String() string { return "hookrun.WithRun(" + c.info.RunID + ")" }
