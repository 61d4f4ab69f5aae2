package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/toolctx"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// processCall runs one call through the pipeline; with a WaitFor it waits for
// the answer to a pending request and retries the call once with it.
func (r *runner) processCall(ctx context.Context, call model.ToolCall, prior *PendingCall, ans *tool.Answer, emit func(Event)) CallOutcome {
	// Announced on the first attempt and again when a resume takes the call up.
	if r.generate {
		emit(Event{}) // counted, never read: see runner.generate
	} else {
		c := call
		emit(Event{Kind: EventToolCall, Turn: r.st.Turn, Call: &c, CallID: call.ID})
	}
	oc := r.pipeline(ctx, call, prior, ans, emit)
	wait := r.a.opts.WaitFor
	if g := inherited(ctx); wait == nil && g != nil {
		wait = g.waitFor
	}
	if oc.Pending == nil || wait == nil || ans != nil {
		return oc
	}
	for i := len(r.a.opts.Middleware) - 1; i >= 0; i-- {
		if m := r.a.opts.Middleware[i].Wait; m != nil {
			wait = m(wait)
		}
	}
	req := oc.Pending.Request
	answer, err := r.safeWait(context.WithValue(ctx, waitingKey{}, oc.Pending), wait, req)
	if err != nil {
		if ctx.Err() != nil {
			return CallOutcome{Err: ctx.Err()}
		}
		return r.finish(ctx, r.newRecord(call), tool.Errorf("no answer to request %s: %v", req.ID, err),
			Decision{Outcome: OutcomeDeclined, By: approval.Runtime, Reason: err.Error(), Votes: oc.Pending.Votes}, false, emit)
	}
	if answer.ID == "" {
		answer.ID = req.ID
	}
	if answer.ID != req.ID {
		return r.finish(ctx, r.newRecord(call), tool.Errorf("the answer is for request %s, not %s", answer.ID, req.ID),
			Decision{Outcome: OutcomeDeclined, By: approval.Runtime, Reason: "misrouted answer", Votes: oc.Pending.Votes}, false, emit)
	}
	if err := answer.Check(); err != nil {
		return r.finish(ctx, r.newRecord(call), tool.Errorf("the answer to request %s was refused: %v", req.ID, err),
			Decision{Outcome: OutcomeDeclined, By: approval.Runtime, Reason: "the answer names two different answerers", Votes: oc.Pending.Votes}, false, emit)
	}
	return r.pipeline(ctx, call, oc.Pending, &answer, emit)
}

type waitingKey struct{}

// PendingCallFrom returns a copy of the pending call whose request the wait
// that ctx was handed to is for (a [Middleware]'s Wait, Options.WaitFor):
// its request, origin, asking hook, arguments and the votes heard before it,
// as a halted run's state would hold it. A tracer counts and annotates the
// pending step with it as it would on a halt. ok is false for any other
// context.
func PendingCallFrom(ctx context.Context) (p *PendingCall, ok bool) {
	w, ok := ctx.Value(waitingKey{}).(*PendingCall)
	if !ok {
		return nil, false
	}
	c := *w
	c.Request.Data = slices.Clone(w.Request.Data)
	if w.Request.ExpiresAt != nil {
		t := *w.Request.ExpiresAt
		c.Request.ExpiresAt = &t
	}
	c.Args, c.Votes = slices.Clone(w.Args), slices.Clone(w.Votes)
	return &c, true
}

// hookApproved reports whether ans approves a request that a BeforeTool hook
// raised (a declined answer never gets this far).
func hookApproved(prior *PendingCall, ans *tool.Answer) bool {
	return ans != nil && ans.OK && prior != nil && prior.Origin == OriginHook && prior.Hook != "" && prior.Request.Kind == tool.KindApproval
}

func (r *runner) newRecord(call model.ToolCall) *ToolCallRecord {
	d := approval.Digest(call.Arguments)
	return &ToolCallRecord{
		RunID: r.st.RunID, ID: call.ID, Name: call.Name, Turn: r.st.Turn,
		RequestedArgs: call.Arguments, Args: call.Arguments,
		RequestedDigest: d, ArgsDigest: d,
		Started: r.a.opts.Now(),
	}
}

// answerer is who gave ans ([tool.Answer.Who]: a Permission hook, a person,
// a flag, the runtime), or an unnamed person when the host named no one. Who
// acted on its behalf is ans.Actor.
func answerer(ans *tool.Answer) approval.Principal {
	if who := ans.Who(); !who.IsZero() {
		return who
	}
	return approval.Principal{Kind: approval.PrincipalPerson}
}

// invalidReason is the decision reason for arguments that fail the schema.
// The validation error itself quotes argument values, so it goes only to the
// model (in the result); records and logs, which never hold argument values,
// get this.
const invalidReason = "the arguments do not match the tool's input schema (the model was shown the details)"

// cutOffReason is the decision reason for a call cut off at the model's
// output limit.
const cutOffReason = "cut off at the model's output limit before its arguments were complete"

// pipeline is one pass of docs/architecture.md's tool-call pipeline. prior and ans
// are set when the call is retried after an answer.
func (r *runner) pipeline(ctx context.Context, call model.ToolCall, prior *PendingCall, ans *tool.Answer, emit func(Event)) CallOutcome {
	rec := r.newRecord(call)
	// On a retry every source is heard again; the votes heard before the
	// request only matter when the call ends here (declined, expired).
	var votes []Vote
	if ans != nil {
		if prior != nil {
			votes = slices.Clone(prior.Votes)
		}
		by := answerer(ans)
		if prior != nil && prior.Request.Expired(r.a.opts.Now()) {
			return r.finish(ctx, rec, tool.Errorf("the request %s expired at %s before it was answered", prior.Request.ID, prior.Request.ExpiresAt.Format(time.RFC3339)),
				Decision{Outcome: OutcomeExpired, By: approval.Runtime, Votes: votes}, false, emit)
		}
		if !ans.OK {
			reason := ans.Reason
			if reason == "" {
				reason = "no reason given"
			}
			votes = append(votes, Vote{Source: by, Actor: ans.Actor, Decision: approval.VoteDeny, Reason: reason})
			return r.finish(ctx, rec, tool.Errorf("declined by %s: %s", declinedBy(by), reason),
				Decision{Outcome: OutcomeDeclined, By: by, Actor: ans.Actor, Reason: reason, Votes: votes}, false, emit)
		}
		votes = []Vote{{Source: by, Actor: ans.Actor, Decision: approval.VoteAllow, Reason: ans.Reason}}
		ctx = tool.WithAnswer(ctx, *ans)
	}
	// The answer's vote goes where the source that asked is heard again, so
	// that the votes stay in the order they were heard (the ask, then the
	// answer); until then it leads.
	answered := ans != nil
	placeAnswer := func(after approval.Principal) {
		if !answered {
			return
		}
		answered = false
		i := len(votes) - 1 // the answer's index once placed
		if !after.IsZero() {
			for j := len(votes) - 1; j > 0; j-- {
				if votes[j].Source == after {
					i = j
					break
				}
			}
		}
		v := votes[0]
		copy(votes[:i], votes[1:i+1])
		votes[i] = v
	}

	// A call the output limit cut off never runs: its arguments are not
	// what the model meant.
	if r.cutOff[call.ID] {
		return r.finish(ctx, rec, tool.Errorf("%s: this tool call was cut off at the model's output limit (finish reason length) before its arguments were complete, and did not run; ask for less at a time", call.Name),
			Decision{Outcome: OutcomeInvalid, By: approval.Runtime, Reason: cutOffReason, Votes: votes}, false, emit)
	}

	// 1. Resolve.
	t, ok := r.tools[call.Name]
	if !ok {
		return r.finish(ctx, rec, tool.Errorf("unknown tool %q; available tools: %s", call.Name, strings.Join(r.toolNames(), ", ")),
			Decision{Outcome: OutcomeUnknownTool, By: approval.Runtime, Reason: "no tool has this name", Votes: votes}, false, emit)
	}
	spec := t.Spec()
	args := call.Arguments

	// 2. Validate. checked is the last arguments validated: when the tool
	// runs with them, it is told so and does not validate them again.
	if err := r.a.validator(t).Validate(args); err != nil {
		return r.finish(ctx, rec, tool.Errorf("%s: %v", call.Name, err),
			Decision{Outcome: OutcomeInvalid, By: approval.Runtime, Reason: invalidReason, Votes: votes}, false, emit)
	}
	checked := args

	// 3. BeforeTool chain.
	hev := hooks.BeforeToolEvent{Name: call.Name, Args: args, ID: call.ID, Turn: r.st.Turn, Hints: spec.Hints, Answer: ans}
	// An approved hook request resolves that hook's ask (seed 002), for the
	// arguments it was raised for; the other hooks are heard as usual.
	var approvedAsk func(string, json.RawMessage) bool
	if hookApproved(prior, ans) {
		approvedAsk = func(hook string, a json.RawMessage) bool {
			return hook == prior.Hook && approval.Digest(a) == prior.Digest
		}
	}
	out, err := r.a.opts.Hooks.RunBeforeToolApproved(ctx, hev, approvedAsk)
	if err != nil {
		return CallOutcome{Err: err}
	}
	votes = append(votes, out.Votes...)
	if prior != nil && prior.Origin == OriginHook {
		placeAnswer(approval.Principal{Kind: approval.PrincipalHook, Name: prior.Hook})
	}
	if out.Rewritten {
		args = out.Args
		rec.Args, rec.ArgsDigest = storable(args), approval.Digest(args)
	}
	if out.Result != nil {
		res := *out.Result
		last := votes[len(votes)-1]
		if res.Pending != nil {
			if hookApproved(prior, ans) && out.By == prior.Hook {
				return r.finish(ctx, rec, tool.Errorf("the approval %s was given for other arguments; the call was not run", prior.Request.ID),
					Decision{Outcome: OutcomeDenied, By: approval.Runtime, Reason: "arguments digest mismatch", Votes: votes}, false, emit)
			}
			oc := r.suspend(ctx, rec, OriginHook, hookRequest(res.Pending, call, args, spec, out.By), args, votes, ans, emit)
			if oc.Pending != nil {
				oc.Pending.Hook = out.By
			}
			return oc
		}
		oc := OutcomeShortCircuit
		if res.IsError {
			oc = OutcomeDenied
		}
		res = withContext(res, out.Context)
		return r.finish(ctx, rec, res, Decision{Outcome: oc, By: last.Source, Reason: last.Reason, Votes: votes}, false, emit)
	}
	if out.Rewritten {
		if err := r.a.validator(t).Validate(args); err != nil {
			// The arguments are the last rewriting hook's.
			by := approval.Runtime
			for _, v := range slices.Backward(out.Votes) {
				if v.Decision == approval.VoteRewrite {
					by = v.Source
					break
				}
			}
			return r.finish(ctx, rec, tool.Errorf("%s: %s rewrote the arguments into invalid ones: %v", call.Name, by, err),
				Decision{Outcome: OutcomeInvalid, By: by, Reason: by.String() + " rewrote the arguments into ones that do not match the tool's input schema (the model was shown the details)", Votes: votes}, false, emit)
		}
		checked = args
	}

	// An approval of a hook's ask that edits the arguments is taken only
	// when a hook applied the edit (the person's arguments are the ones
	// that go on): else the call would run with arguments other than those
	// the person approved.
	if hookApproved(prior, ans) && len(bytes.TrimSpace(ans.Data)) > 0 && approval.Digest(args) != approval.Digest(json.RawMessage(ans.Data)) {
		return r.finish(ctx, rec, tool.Errorf("the approval %s edited the arguments, but it answers hook %s, which did not apply them; the call was not run (approve without editing, or deny)", prior.Request.ID, prior.Hook),
			Decision{Outcome: OutcomeDenied, By: approval.Runtime, Reason: "edited arguments not applied", Votes: votes}, false, emit)
	}

	// 4. Authorization, on the final tool and arguments. A Permission hook's
	// answer is taken here, without running the pipeline again: every hook
	// of steps 1 to 3 fires once per call.
	var decision Decision
authorization:
	for {
		edited := false
		// Only an answer to the agent's own authorization request can edit the
		// arguments; Data answering a tool's or a hook's question is theirs.
		if ans != nil && prior != nil && len(bytes.TrimSpace(ans.Data)) > 0 && prior.Origin == OriginAuthorization {
			if approval.Digest(args) != prior.Digest {
				return r.finish(ctx, rec, tool.Errorf("the approval %s was given for other arguments; the call was not run", prior.Request.ID),
					Decision{Outcome: OutcomeDenied, By: approval.Runtime, Reason: "arguments digest mismatch", Votes: votes}, false, emit)
			}
			ed, err := model.EncodeArguments(json.RawMessage(ans.Data))
			if err != nil {
				return r.finish(ctx, rec, tool.Errorf("the edited arguments from %s are not a JSON object: %v", answerer(ans), err),
					Decision{Outcome: OutcomeInvalid, By: answerer(ans), Actor: ans.Actor, Reason: "the edited arguments are not a JSON object", Votes: votes}, false, emit)
			}
			args, edited = ed, true
			rec.Args, rec.ArgsDigest = storable(args), approval.Digest(args)
			votes = append(votes, Vote{Source: answerer(ans), Actor: ans.Actor, Decision: approval.VoteRewrite, Reason: "edited the arguments"})
			if err := r.a.validator(t).Validate(args); err != nil {
				return r.finish(ctx, rec, tool.Errorf("%s: edited arguments are invalid: %v", call.Name, err),
					Decision{Outcome: OutcomeInvalid, By: approval.Runtime, Reason: invalidReason, Votes: votes}, false, emit)
			}
			checked = args
		}
		verdict, avotes := r.authorize(ctx, call, args, spec.Hints, votes)
		votes = append(votes, avotes...)
		placeAnswer(approval.Principal{}) // an authorizer's or a tool's request: heard after every authorizer
		// An approval answer covers this call when it was given for these arguments
		// (or the person wrote them).
		covered := ans != nil && prior != nil && prior.Request.Kind == tool.KindApproval && (edited || approval.Digest(args) == prior.Digest)
		decision = Decision{Outcome: OutcomeAllowed, By: verdict.By, Reason: verdict.Reason, Votes: votes}
		switch verdict.Decision {
		case approval.Deny:
			return r.finish(ctx, rec, withContext(tool.Errorf("denied by %s: %s", verdict.By, orDefault(verdict.Reason, "no reason given")), out.Context),
				Decision{Outcome: OutcomeDenied, By: verdict.By, Reason: verdict.Reason, Votes: votes}, false, emit)
		case approval.Ask:
			if !covered {
				req := r.approvalRequest(call, args, spec, verdict)
				if ans == nil { // Permission hooks may answer before a person is asked.
					pans, err := r.a.opts.Hooks.RunPermission(ctx, hooks.PermissionEvent{Name: call.Name, Args: args, ID: call.ID, Turn: r.st.Turn, Hints: spec.Hints, Request: req})
					if err != nil {
						return CallOutcome{Err: err}
					}
					if pans != nil {
						by := answerer(pans)
						if !pans.OK {
							reason := orDefault(pans.Reason, "no reason given")
							votes = append(votes, Vote{Source: by, Actor: pans.Actor, Decision: approval.VoteDeny, Reason: reason})
							return r.finish(ctx, rec, tool.Errorf("declined by %s: %s", declinedBy(by), reason),
								Decision{Outcome: OutcomeDeclined, By: by, Actor: pans.Actor, Reason: reason, Votes: votes}, false, emit)
						}
						votes = append(votes, Vote{Source: by, Actor: pans.Actor, Decision: approval.VoteAllow, Reason: pans.Reason})
						prior = &PendingCall{Request: req, Origin: OriginAuthorization, Digest: approval.Digest(args), Args: storable(args), Votes: votes}
						ans = pans
						ctx = tool.WithAnswer(ctx, *ans)
						if len(bytes.TrimSpace(ans.Data)) > 0 {
							// Edited arguments are validated and authorized again.
							continue
						}
						decision = Decision{Outcome: OutcomeApproved, By: by, Actor: ans.Actor, Reason: ans.Reason, Votes: votes}
						break authorization
					}
				}
				return r.suspend(ctx, rec, OriginAuthorization, &req, args, votes, ans, emit)
			}
			decision = Decision{Outcome: OutcomeApproved, By: answerer(ans), Actor: ans.Actor, Reason: ans.Reason, Votes: votes}
		default:
			if ans != nil {
				decision = Decision{Outcome: OutcomeApproved, By: answerer(ans), Actor: ans.Actor, Reason: ans.Reason, Votes: votes}
			}
		}
		break
	}
	if r.generate {
		emit(Event{})
	} else {
		d := decision
		emit(Event{Kind: EventDecision, Turn: r.st.Turn, CallID: call.ID, Decision: &d})
	}

	// 5-7. Listener PRE, execute, listener POST / ON_ERROR.
	l := r.a.ToolCallListener()
	var use *hooks.ToolUse
	if l != nil {
		use = &hooks.ToolUse{Tool: call.Name, Args: slices.Clone(args), CallID: call.ID, Turn: r.st.Turn, AgentID: r.a.opts.ID, RunID: r.st.RunID}
		r.guard(ctx, "tool call listener (PreToolUse)", func() { l.PreToolUse(ctx, use) })
	}
	if err := ctx.Err(); err != nil {
		// Cancelled while the PreToolUse hooks ran: the tool does not start.
		return CallOutcome{Err: err}
	}
	lim := r.a.limits(call.Name)
	start := time.Now()
	cc := &callContext{Context: ctx, gov: r.gov, runState: r.toolState, rep: reporter{emit: emit, turn: r.st.Turn, callID: call.ID}}
	if spec.InputSchema != nil && len(checked) > 0 && len(checked) == len(args) && &checked[0] == &args[0] {
		cc.validated, cc.isValidated = toolctx.Validated{Schema: spec.InputSchema, Args: args}, true
	}
	var tctx context.Context = cc
	var inv *tool.Invocation
	if _, ok := t.(tool.Invoker); ok { // only tools that take it pay for it
		inv = &tool.Invocation{RunID: r.st.RunID, AgentID: r.a.opts.ID, CallID: call.ID, Turn: r.st.Turn, Answer: ans}
		tctx = tool.WithInvocation(tctx, *inv)
	}
	res := executeBounded(tctx, r.a.workers, t, inv, args, lim)
	cc.rep.close()
	latency := time.Since(start)
	if res.IsError && res.Pending == nil {
		// The tool refused the file it opened (approval.CheckFile): the call
		// is denied by whoever refused it, not allowed.
		if fr := cc.refusal.Load(); fr != nil && strings.Contains(res.Output, fr.Error()) {
			decision = refusedDecision(decision, fr)
		}
	}
	if res.Pending != nil {
		if l != nil {
			post := *use
			post.Latency, post.Pending = latency, true
			r.guard(ctx, "tool call listener (PostToolUse)", func() { l.PostToolUse(ctx, &post) })
		}
		return r.suspend(ctx, rec, OriginTool, res.Pending, args, votes, ans, emit)
	}
	if l != nil {
		post := *use
		post.Latency, post.Success, post.OutputSize = latency, !res.IsError, len(res.Output)
		if res.IsError {
			post.Error = res.Output
		}
		r.guard(ctx, "tool call listener (PostToolUse)", func() { l.PostToolUse(ctx, &post) })
		if res.IsError {
			r.guard(ctx, "tool call listener (OnError)", func() { l.OnError(ctx, &post) })
		}
	}

	// 8. AfterTool chain.
	final, by, err := r.a.opts.Hooks.RunAfterTool(ctx, hooks.AfterToolEvent{Name: call.Name, Args: args, Result: res, ID: call.ID, Turn: r.st.Turn})
	if err != nil {
		// The tool ran: record it, but withhold its output, since the hook
		// that failed may have been the one meant to redact it.
		rec.ReplacedBy = by
		withheld := tool.Errorf("the result was withheld: %v", err)
		oc := r.finish(ctx, rec, withheld, decision, true, emit)
		oc.Err = err
		return oc
	}
	rec.ReplacedBy = by
	final = capResult(withContext(final, out.Context), lim.MaxResultBytes)
	// 9. Record.
	return r.finish(ctx, rec, final, decision, true, emit)
}

// refusedDecision is d after the tool refused the file it was to use, with
// fr: denied by the refusal's source, which votes deny.
func refusedDecision(d Decision, fr *approval.FileRefusal) Decision {
	v := fr.Verdict
	reason := v.Reason
	if v.Decision != approval.Deny || reason == "" {
		reason = fr.Error()
	}
	votes := append(slices.Clip(d.Votes), Vote{Source: v.By, Decision: approval.VoteDeny, Reason: reason})
	return Decision{Outcome: OutcomeDenied, By: v.By, Reason: reason, Votes: votes}
}

// withContext appends the BeforeTool hooks' context texts to res's output,
// after a blank line, one per line (see hooks.ToolOverride.Context).
func withContext(res tool.Result, notes []string) tool.Result {
	if len(notes) == 0 {
		return res
	}
	res.Output = strings.TrimRight(res.Output, "\n") + "\n\n" + strings.Join(notes, "\n")
	return res
}

// storable returns args if they are valid JSON nested at most
// tool.MaxArgumentsDepth deep, and otherwise the bytes as a JSON string, so
// that a record or a halted state with arguments a hook garbled still
// encodes, and reads back from a store (the call itself fails validation).
func storable(args json.RawMessage) json.RawMessage {
	if json.Valid(args) && !tool.TooDeep(args) {
		return slices.Clone(args)
	}
	b, _ := json.Marshal(string(args))
	return b
}

// declinedBy names who declined for the model: a person by name alone.
func declinedBy(p approval.Principal) string {
	if p.Kind == approval.PrincipalPerson && p.Name != "" {
		return p.Name
	}
	return p.String()
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// execute calls the tool (through [tool.Invoker] when it has it), turning an
// error or a panic into an error result.
func execute(ctx context.Context, t tool.Tool, inv *tool.Invocation, args json.RawMessage) (res tool.Result) {
	defer func() {
		if p := recover(); p != nil {
			res = tool.Recovered(t.Spec().Name, p)
		}
	}()
	var err error
	if iv, ok := t.(tool.Invoker); ok && inv != nil {
		res, err = iv.Invoke(ctx, inv, args)
	} else {
		res, err = t.Call(ctx, args)
	}
	if err != nil {
		return tool.Error(err.Error())
	}
	return res
}

func (r *runner) toolNames() []string {
	names := make([]string, 0, len(r.tools))
	for n := range r.tools {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// authorize runs every authorizer and combines them with the hooks' allow votes
// under deny > ask > allow.
func (r *runner) authorize(ctx context.Context, call model.ToolCall, args json.RawMessage, hints *tool.Hints, votes []Vote) (approval.Verdict, []Vote) {
	var verdicts []approval.Verdict
	for _, v := range votes {
		if v.Decision == approval.VoteAllow && v.Source.Kind == approval.PrincipalHook {
			verdicts = append(verdicts, approval.Verdict{Decision: approval.Allow, Reason: v.Reason, By: v.Source})
		}
	}
	var out []Vote
	azs := r.a.opts.Authorizers
	if g := inherited(ctx); g != nil {
		azs = append(slices.Clone(azs), g.authorizers...)
	}
	if len(azs) == 0 {
		return approval.Strongest(verdicts...), nil
	}
	c := approval.Call{Tool: call.Name, CallID: call.ID, Args: slices.Clone(args), RunID: r.st.RunID}
	if hints != nil {
		h := *hints
		c.Hints = &h
	}
	for i, az := range azs {
		v, err := safeAuthorize(ctx, az, c)
		if v.By.IsZero() {
			v.By = approval.Principal{Kind: approval.PrincipalRule, Name: fmt.Sprintf("authorizer#%d", i+1)}
		}
		switch {
		case err != nil:
			v = approval.Verdict{Decision: approval.Deny, Reason: "authorization failed: " + err.Error(), By: v.By}
		case !v.Decision.Valid():
			v = approval.Verdict{Decision: approval.Deny, Reason: fmt.Sprintf("authorizer returned invalid decision %q", v.Decision), By: v.By}
		}
		verdicts = append(verdicts, v)
		out = append(out, Vote{Source: v.By, Decision: approval.VoteDecision(v.Decision), Reason: v.Reason})
	}
	return approval.Strongest(verdicts...), out
}

func (r *runner) approvalRequest(call model.ToolCall, args json.RawMessage, spec tool.Spec, v approval.Verdict) tool.Request {
	data, _ := model.MarshalJSON(approval.RequestData{Tool: call.Name, CallID: call.ID, Args: args, Digest: approval.Digest(args), Reason: v.Reason, By: v.By, Hints: spec.Hints, Schema: spec.InputSchema})
	prompt := fmt.Sprintf("Allow %s %s?", call.Name, abbreviate(string(args), 200))
	if v.Reason != "" {
		prompt += " (" + v.By.String() + ": " + v.Reason + ")"
	}
	req := tool.Request{ID: r.a.opts.NewID("req_"), Kind: tool.KindApproval, Prompt: prompt, Data: data}
	if ttl := r.a.opts.ApprovalTTL; ttl > 0 {
		exp := r.a.opts.Now().Add(ttl)
		req.ExpiresAt = &exp
	}
	return req
}

// hookRequest returns a hook's pending request of kind approval (or of no
// kind, which becomes one) with the [approval.RequestData] of the call as
// its Data when the hook gave none: the tool, the call, the arguments and
// their digest, the hook's prompt as the reason and the hook as who asked,
// so that whoever answers (a terminal, the approvals page, the API) is
// shown what the approval lets run, not only what the hook wrote. Any
// other request is returned as it is.
func hookRequest(req *tool.Request, call model.ToolCall, args json.RawMessage, spec tool.Spec, hook string) *tool.Request {
	if (req.Kind != "" && req.Kind != tool.KindApproval) || len(bytes.TrimSpace(req.Data)) > 0 {
		return req
	}
	data, err := model.MarshalJSON(approval.RequestData{Tool: call.Name, CallID: call.ID, Args: storable(args), Digest: approval.Digest(args),
		Reason: req.Prompt, By: approval.Principal{Kind: approval.PrincipalHook, Name: hook}, Hints: spec.Hints})
	if err != nil {
		return req
	}
	q := *req
	q.Data = data
	return &q
}

func abbreviate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// suspend turns a pending request into a pending call, or into an error result
// when the call was already retried after an answer (at most one retry).
func (r *runner) suspend(ctx context.Context, rec *ToolCallRecord, origin Origin, req *tool.Request, args json.RawMessage, votes []Vote, ans *tool.Answer, emit func(Event)) CallOutcome {
	if ans != nil {
		return r.finish(ctx, rec, tool.Errorf("%s raised a second pending request (%s) after an answer; the call was not run", origin, req.Prompt),
			Decision{Outcome: OutcomeDenied, By: approval.Runtime, Reason: "second pending request", Votes: votes}, false, emit)
	}
	q := *req
	if q.ID == "" {
		q.ID = r.a.opts.NewID("req_")
	}
	q.ID = r.claimRequestID(q.ID, rec.ID)
	if q.Kind == "" {
		// hooks.Ask is for approvals; a tool that asks without a kind wants input.
		q.Kind = tool.KindApproval
		if origin == OriginTool {
			q.Kind = tool.KindInput
		}
	}
	if q.ExpiresAt == nil && r.a.opts.ApprovalTTL > 0 {
		exp := r.a.opts.Now().Add(r.a.opts.ApprovalTTL)
		q.ExpiresAt = &exp
	}
	pc := &PendingCall{Request: q, Origin: origin, Digest: approval.Digest(args), Args: storable(args), Votes: votes}
	d := Decision{Outcome: OutcomePending, By: lastSource(votes, approval.Principal{Kind: approval.PrincipalRuntime, Name: string(origin)}), Reason: q.Prompt, Votes: votes}
	emit(Event{Kind: EventDecision, Turn: r.st.Turn, CallID: rec.ID, Decision: &d})
	emit(Event{Kind: EventPending, Turn: r.st.Turn, CallID: rec.ID, Request: &q})
	if err := r.a.opts.Hooks.RunPending(ctx, hooks.PendingEvent{Name: rec.Name, ID: rec.ID, Turn: r.st.Turn, Request: q}); err != nil {
		r.a.log.LogAttrs(ctx, slog.LevelWarn, "pending hook failed", slog.String("run", r.st.RunID), slog.String("error", err.Error()))
	}
	r.a.log.LogAttrs(ctx, slogInfo, "tool call pending", attrs(r.st.RunID, rec, d)...)
	return CallOutcome{Pending: pc}
}

func lastSource(votes []Vote, def approval.Principal) approval.Principal {
	if len(votes) == 0 {
		return def
	}
	return votes[len(votes)-1].Source
}

// finish completes the record, emits it and hands it to OnRecord.
func (r *runner) finish(ctx context.Context, rec *ToolCallRecord, res tool.Result, d Decision, ran bool, emit func(Event)) CallOutcome {
	rec.Output, rec.IsError, rec.Metadata = res.Output, res.IsError, res.Metadata
	rec.Ran, rec.Decision = ran, d
	rec.Duration = r.a.opts.Now().Sub(rec.Started)
	if r.generate { // counted, never read: see runner.generate
		if !ran {
			emit(Event{})
		}
		emit(Event{})
	} else {
		if !ran {
			dc := d
			emit(Event{Kind: EventDecision, Turn: r.st.Turn, CallID: rec.ID, Decision: &dc})
		}
		c := *rec
		emit(Event{Kind: EventToolResult, Turn: r.st.Turn, CallID: rec.ID, Record: &c})
	}
	if r.a.log.Enabled(ctx, slogInfo) { // the attributes cost more than a discarded line
		r.a.log.LogAttrs(ctx, slogInfo, "tool call", attrs(r.st.RunID, rec, d)...)
	}
	if r.a.opts.OnRecord != nil {
		r.guard(ctx, "OnRecord", func() { r.a.opts.OnRecord(ctx, *rec) })
	}
	return CallOutcome{Record: rec}
}

// cachedValidator is a tool's validator and the schema it was built from.
type cachedValidator struct {
	schema *jsonschema.Schema
	v      *tool.Validator
}

// validator returns the cached schema validator of t. The cache holds one
// entry per tool name, rebuilt when the tool's schema changes, so it stays as
// small as the set of tools.
func (a *Agent) validator(t tool.Tool) *tool.Validator {
	spec := t.Spec()
	key := spec.Name
	if c, ok := a.validators.Load(key); ok && c.(cachedValidator).schema == spec.InputSchema {
		return c.(cachedValidator).v
	}
	v, err := tool.NewValidator(spec.InputSchema)
	if err != nil {
		// A tool with a broken schema cannot be validated against; accept any
		// object rather than fail every call, and say so once per tool.
		a.log.Warn("tool has an invalid input schema; arguments are only checked to be an object", "tool", t.Spec().Name, "error", err)
		v, _ = tool.NewValidator(nil)
	}
	a.validators.Store(key, cachedValidator{spec.InputSchema, v})
	return v
}

// cachedSchema is the JSON of a tool's input schema and the schema it was
// made from.
type cachedSchema struct {
	schema *jsonschema.Schema
	json   json.RawMessage
}

// schemaJSON returns the JSON of spec's input schema (nil for none, or for
// one that does not marshal), from a cache that, like the validators', holds
// one entry per tool name and is refreshed when the tool's schema changes,
// so that a run does not marshal every tool's schema again.
func (a *Agent) schemaJSON(spec tool.Spec) json.RawMessage {
	if spec.InputSchema == nil {
		return nil
	}
	if c, ok := a.schemas.Load(spec.Name); ok && c.(cachedSchema).schema == spec.InputSchema {
		return c.(cachedSchema).json
	}
	b, err := spec.InputSchema.MarshalJSON()
	if err != nil {
		return nil
	}
	a.schemas.Store(spec.Name, cachedSchema{spec.InputSchema, b})
	return b
}

// guard runs a host callback that has no way to fail (the listener,
// OnRecord) on a call's goroutine: a panic there is logged and the run goes
// on, rather than crashing the process from a worker goroutine.
func (r *runner) guard(ctx context.Context, what string, fn func()) {
	defer func() {
		if p := recover(); p != nil {
			r.a.log.LogAttrs(ctx, slog.LevelError, what+" panicked", slog.String("run", r.st.RunID), slog.Any("panic", p))
		}
	}()
	fn()
}

// safeAuthorize calls az, turning a panic into an error (which denies: fail closed).
func safeAuthorize(ctx context.Context, az approval.Authorizer, c approval.Call) (v approval.Verdict, err error) {
	defer func() {
		if p := recover(); p != nil {
			v, err = approval.Verdict{}, fmt.Errorf("authorizer panicked: %v", p)
		}
	}()
	return az.Authorize(ctx, c)
}

// safeWait calls a WaitFor function, turning a panic into an error (no answer).
func (r *runner) safeWait(ctx context.Context, wait tool.WaitFunc, req tool.Request) (a tool.Answer, err error) {
	defer func() {
		if p := recover(); p != nil {
			a, err = tool.Answer{}, fmt.Errorf("WaitFor panicked: %v", p)
		}
	}()
	return wait(ctx, req)
}

// reporter turns a running call's progress and notices into events; after
// close (the call returned) it drops them, since the batch no longer reads
// the call's events then.
// At most MaxProgressEvents and MaxNoticeEvents of them per call.
type reporter struct {
	emit     func(Event)
	turn     int
	callID   string
	mu       sync.Mutex
	closed   bool
	progress int
	notices  int
}

// Bounds of the reports of one call that become events ([EventProgress],
// [EventNotice]); further reports of the call are dropped, so that a tool (or
// the MCP server behind it) cannot flood a run's events.
const (
	// MaxProgressEvents is the most progress events of one call.
	MaxProgressEvents = 1000
	// MaxNoticeEvents is the most notice events of one call.
	MaxNoticeEvents = 32
)

func (p *reporter) Progress(pr tool.Progress) {
	p.send(Event{Kind: EventProgress, Turn: p.turn, CallID: p.callID, Progress: &pr}, &p.progress, MaxProgressEvents)
}

func (p *reporter) Notice(n tool.Notice) {
	p.send(Event{Kind: EventNotice, Turn: p.turn, CallID: p.callID, Notice: &n}, &p.notices, MaxNoticeEvents)
}

// send emits ev unless the call has returned or *count reached limit. It
// holds mu while emitting, so close waits for a report in flight (the batch
// reads events until every call has returned, so that emit completes).
func (p *reporter) send(ev Event, count *int, limit int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed && *count < limit {
		*count++
		p.emit(ev)
	}
}

func (p *reporter) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
}

// callContext is a tool's context: ctx with the values the agent hands every
// tool call (its governance, for sub-agents; the run's state; the reporter;
// the arguments' validation), all answered from one value rather than one
// context.WithValue each. Values a tool puts in a context derived from it
// take precedence as usual.
type callContext struct {
	context.Context
	gov         *governance
	runState    *tool.RunState
	validated   toolctx.Validated
	isValidated bool // false: the arguments were not validated as they are
	rep         reporter
	refusal     atomic.Pointer[approval.FileRefusal] // the last file the tool was refused
}

// Refused records a file refusal of approval.CheckFile (toolctx.RefusalSink).
func (c *callContext) Refused(err error) {
	if fr, ok := err.(*approval.FileRefusal); ok {
		c.refusal.Store(fr)
	}
}

// Value answers the keys callContext holds and passes the others on.
func (c *callContext) Value(key any) any {
	switch key.(type) {
	case governanceKey:
		return c.gov
	case toolctx.RunStateKey:
		return c.runState
	case toolctx.ReporterKey:
		return tool.Reporter(&c.rep)
	case toolctx.RefusalKey:
		return toolctx.RefusalSink(c)
	case toolctx.ValidatedKey:
		if c.isValidated {
			return &c.validated
		}
	}
	return c.Context.Value(key)
}
