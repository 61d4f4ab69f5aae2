package gate

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/hookrun"
	"github.com/tollgate-dev/tollgate/internal/jsonenc"
	"github.com/tollgate-dev/tollgate/internal/toolcall"
	"github.com/tollgate-dev/tollgate/tool"
)

// invalidReason is the decision reason for arguments that fail the schema.
// The validation error itself quotes argument values, so it goes only to the
// model (in the result); records and logs, which never hold argument values,
// get this.
const invalidReason = "the arguments do not match the tool's input schema (the model was shown the details)"

// cutOffReason is the decision reason for a call cut off at the model's
// output limit.
const cutOffReason = "cut off at the model's output limit before its arguments were complete"

// pass is one pass of [Gate.Decide] over a call: what the steps share.
type pass struct {
	ctx   context.Context // the call's, with the answer once it is taken
	g     *Gate
	env   *Env
	c     *Call
	rec   *Record
	prior *Pending     // the request the call was suspended on, on a retry
	ans   *tool.Answer // its answer
	votes []tool.Vote
	// shadow: the shadow rules' would-be votes, recorded beside the decision.
	shadow []tool.Vote
	// answered: the answer's vote still leads votes, waiting for its place.
	answered bool
	// appr and apprAns are the approved request and its answer that the
	// call goes on with: the prior request and the answer when it is an
	// approval, the approval the prior request carries
	// ([Pending].Approved) when the answer is to the tool's own request, or
	// a Permission hook's; nil when no approval is in hand.
	appr    *Pending
	apprAns *tool.Answer
	// carried: appr is the prior request's carried approval, whose vote
	// leads votes with the answer's until they find their place.
	carried bool
	// permission: the approval is a Permission hook's, made in this pass;
	// it is not carried over a request of the tool (the hooks are asked
	// again on a retry).
	permission bool
	t          tool.Tool
	spec       tool.Spec
	args       json.RawMessage
	notes      []string // the BeforeTool hooks' context
}

// Decide runs steps 1 to 4 of the pipeline (docs/architecture.md) on c:
// resolve, validate, the BeforeTool hooks, the authorizers under
// deny > ask > allow, the Permission hooks, and an approval request when
// the answer is ask. prior and ans are set when the call is taken up again
// with an answer to prior's request: the answer is checked against the
// request (expiry, digest of the arguments, edits validated and authorized
// again) and every source is heard again.
//
// The ruling is Allowed (run it and call [Gate.Complete]), a Record (the
// call ended without running: unknown, invalid, denied, declined,
// short-circuited), Pending, or Err.
func (g *Gate) Decide(ctx context.Context, env *Env, c Call, prior *Pending, ans *tool.Answer) Ruling {
	p := &pass{ctx: ctx, g: g, env: env, c: &c, rec: g.newRecord(c), prior: prior, ans: ans, args: c.Args}
	if ans != nil {
		if r := p.takeAnswer(); r != nil {
			return *r
		}
		ctx = toolcall.WithAnswer(ctx, *ans)
		p.ctx = ctx
	}
	if r := p.resolve(); r != nil {
		return *r
	}
	if r := p.beforeTool(ctx); r != nil {
		return *r
	}
	return p.authorization(ctx)
}

// takeAnswer checks an answer before anything runs: an answer for another
// request, one that names two different answerers, an expired request or
// a declining answer ends the call. An approving answer's vote leads the
// votes until it finds its place (placeAnswer).
func (p *pass) takeAnswer() *Ruling {
	if p.prior != nil {
		p.votes = slices.Clone(p.prior.Votes)
		p.shadow = slices.Clone(p.prior.Shadow)
		// An answer without an ID is for the request it is given with;
		// one for another request decides nothing here.
		a := *p.ans
		a.ID = cmp.Or(a.ID, p.prior.Request.ID)
		p.ans = &a
		if a.ID != p.prior.Request.ID {
			r := p.end(tool.Errorf("the answer is for request %s, not %s", a.ID, p.prior.Request.ID),
				Decision{Outcome: OutcomeDeclined, By: approval.Runtime, Reason: "misrouted answer"})
			return &r
		}
	}
	if err := p.ans.Check(); err != nil {
		r := p.end(tool.Errorf("the answer to request %s was refused: %v", p.ans.ID, err),
			Decision{Outcome: OutcomeDeclined, By: approval.Runtime, Reason: "the answer names two different answerers"})
		return &r
	}
	by := answerer(p.ans)
	if p.prior != nil && p.prior.Request.Expired(p.g.opts.Now()) {
		r := p.end(tool.Errorf("the request %s expired at %s before it was answered", p.prior.Request.ID, p.prior.Request.ExpiresAt.Format(time.RFC3339)),
			Decision{Outcome: OutcomeExpired, By: approval.Runtime})
		return &r
	}
	if !p.ans.OK {
		reason := cmp.Or(p.ans.Reason, "no reason given")
		p.votes = append(p.votes, tool.Vote{Source: by, Actor: p.ans.Actor, Decision: tool.VoteDeny, Reason: reason})
		r := p.end(tool.Errorf("declined by %s: %s", declinedBy(by), reason),
			Decision{Outcome: OutcomeDeclined, By: by, Actor: p.ans.Actor, Reason: reason})
		return &r
	}
	// On a retry every source is heard again; the votes heard before the
	// request only matter when the call ends here (declined, expired).
	p.votes = []tool.Vote{{Source: by, Actor: p.ans.Actor, Decision: tool.VoteAllow, Reason: p.ans.Reason}}
	p.answered = true
	p.takeApproval()
	return nil
}

// takeApproval finds the approval the call goes on with: the answer
// itself when the prior request was an approval, or the approval the
// prior request carries when the answer is to the tool's own request
// (its vote then leads the answer's). A carried approval whose answer
// does not approve, or names two answerers, is not taken (fail closed:
// the call is asked about again).
func (p *pass) takeApproval() {
	switch {
	case p.prior == nil:
	case p.prior.Request.Kind == tool.KindApproval:
		p.appr, p.apprAns = p.prior, p.ans
	case p.prior.Origin == OriginTool && p.prior.Approved != nil:
		a := *p.prior.Approved
		if !a.Answer.OK || a.Answer.Check() != nil || a.Request == "" {
			return
		}
		a.Answer.ID = a.Request
		p.appr, p.apprAns, p.carried = a.pending(), &a.Answer, true
		by := answerer(&a.Answer)
		p.votes = append([]tool.Vote{{Source: by, Actor: a.Answer.Actor, Decision: tool.VoteAllow, Reason: a.Answer.Reason}}, p.votes...)
	}
}

// approved is the approval in hand as it is carried over a request the
// tool raises while it runs; nil when there is none or it is a
// Permission hook's.
func (p *pass) approved() *Approval {
	if p.apprAns == nil || p.permission {
		return nil
	}
	return &Approval{Request: p.appr.Request.ID, Origin: p.appr.Origin, Hook: p.appr.Hook, Digest: p.appr.Digest, Answer: *p.apprAns}
}

// placeAnswer moves the answer's vote where the source that asked is heard
// again (after its vote; after the last one for a zero principal), so that
// the votes stay in the order they were heard: the ask, then the answer.
func (p *pass) placeAnswer(after tool.Principal) {
	if !p.answered {
		return
	}
	p.answered = false
	n := 1 // the leading votes: the answer's, after a carried approval's
	if p.carried {
		n = 2
	}
	votes := p.votes
	i := len(votes) - n // the first leading vote's index once placed
	if !after.IsZero() {
		for j := len(votes) - 1; j >= n; j-- {
			if votes[j].Source == after {
				i = j - n + 1
				break
			}
		}
	}
	lead := slices.Clone(votes[:n])
	copy(votes[:i], votes[n:i+n])
	copy(votes[i:i+n], lead)
}

// resolve is steps 1 and 2: the call's tool, and its arguments against the
// tool's schema. A call the output limit cut off never runs: its arguments
// are not what the model meant.
func (p *pass) resolve() *Ruling {
	c := p.c
	if c.CutOff {
		r := p.end(tool.Errorf("%s: this tool call was cut off at the model's output limit (finish reason length) before its arguments were complete, and did not run; ask for less at a time", c.Name),
			Decision{Outcome: OutcomeInvalid, By: approval.Runtime, Reason: cutOffReason})
		return &r
	}
	t, ok := p.env.Tools.Tool(c.Name)
	if !ok {
		r := p.end(tool.Errorf("unknown tool %q; available tools: %s", c.Name, strings.Join(p.env.Tools.Names(), ", ")),
			Decision{Outcome: OutcomeUnknownTool, By: approval.Runtime, Reason: "no tool has this name"})
		return &r
	}
	p.t, p.spec = t, t.Spec()
	p.rec.Hints = p.spec.Hints
	if err := p.g.validator(t).Validate(p.args); err != nil {
		r := p.end(tool.Errorf("%s: %v", c.Name, err),
			Decision{Outcome: OutcomeInvalid, By: approval.Runtime, Reason: invalidReason})
		return &r
	}
	return nil
}

// hookApproved reports whether the answer approves a request that a
// BeforeTool hook raised (a declined answer never gets this far).
func (p *pass) hookApproved() bool {
	return p.apprAns != nil && p.apprAns.OK && p.appr.Origin == OriginHook && p.appr.Hook != "" && p.appr.Request.Kind == tool.KindApproval
}

// beforeTool is step 3: the BeforeTool chain, in registration order. An
// approved hook request resolves that hook's ask (seed 002), for the
// arguments it was raised for; the other hooks are heard as usual.
func (p *pass) beforeTool(ctx context.Context) *Ruling {
	c := p.c
	hev := hooks.BeforeToolEvent{Name: c.Name, Args: p.args, ID: c.ID, Turn: c.Turn, Hints: p.spec.Hints, Answer: p.ans}
	var approvedAsk func(string, json.RawMessage) bool
	if p.hookApproved() {
		approvedAsk = func(hook string, a json.RawMessage) bool {
			return hook == p.appr.Hook && approval.Digest(a) == p.appr.Digest
		}
	}
	out, err := hookrun.BeforeToolApproved(ctx, p.g.opts.Hooks, hev, approvedAsk)
	if err != nil {
		return &Ruling{Err: err}
	}
	p.votes = append(p.votes, out.Votes...)
	p.notes = out.Context
	if p.prior != nil && p.prior.Origin == OriginHook {
		p.placeAnswer(tool.Principal{Kind: tool.PrincipalHook, Name: p.prior.Hook})
	}
	if out.Rewritten {
		p.args = out.Args
		p.rec.Args, p.rec.ArgsDigest = storable(p.args), approval.Digest(p.args)
	}
	if out.Result != nil {
		r := p.hookResult(ctx, *out.Result, out.By)
		return &r
	}
	if out.Rewritten {
		if err := p.g.validator(p.t).Validate(p.args); err != nil {
			r := p.invalidRewrite(out.Votes, err)
			return &r
		}
	}
	// An approval of a hook's ask that edits the arguments is taken only
	// when a hook applied the edit (the person's arguments are the ones
	// that go on): else the call would run with arguments other than those
	// the person approved.
	if p.hookApproved() && len(bytes.TrimSpace(p.apprAns.Data)) > 0 && approval.Digest(p.args) != approval.Digest(json.RawMessage(p.apprAns.Data)) {
		r := p.end(tool.Errorf("the approval %s edited the arguments, but it answers hook %s, which did not apply them; the call was not run (approve without editing, or deny)", p.appr.Request.ID, p.appr.Hook),
			Decision{Outcome: OutcomeDenied, By: approval.Runtime, Reason: "edited arguments not applied"})
		return &r
	}
	return nil
}

// hookResult ends the BeforeTool chain on the result a hook returned: a
// pending request (the hook asks), or a result that stands for the tool's.
func (p *pass) hookResult(ctx context.Context, res tool.Result, hook string) Ruling {
	last := p.votes[len(p.votes)-1]
	if res.Pending != nil {
		if p.hookApproved() && hook == p.appr.Hook {
			return p.end(tool.Errorf("the approval %s was given for other arguments; the call was not run", p.appr.Request.ID),
				Decision{Outcome: OutcomeDenied, By: approval.Runtime, Reason: "arguments digest mismatch"})
		}
		r := p.suspend(ctx, OriginHook, hookRequest(res.Pending, p.c, p.args, p.spec, hook))
		if r.Pending != nil {
			r.Pending.Hook = hook
		}
		return r
	}
	oc := OutcomeShortCircuit
	if res.IsError {
		oc = OutcomeDenied
	}
	return p.end(withContext(res, p.notes), Decision{Outcome: oc, By: last.Source, Reason: last.Reason})
}

// invalidRewrite ends a call whose arguments a hook rewrote into ones that
// fail the schema; the arguments are the last rewriting hook's.
func (p *pass) invalidRewrite(hookVotes []tool.Vote, err error) Ruling {
	by := approval.Runtime
	for _, v := range slices.Backward(hookVotes) {
		if v.Decision == tool.VoteRewrite {
			by = v.Source
			break
		}
	}
	return p.end(tool.Errorf("%s: %s rewrote the arguments into invalid ones: %v", p.c.Name, by, err),
		Decision{Outcome: OutcomeInvalid, By: by, Reason: by.String() + " rewrote the arguments into ones that do not match the tool's input schema (the model was shown the details)"})
}

// end records a call that ends in Decide without running; the decision
// gets the votes heard so far.
func (p *pass) end(res tool.Result, d Decision) Ruling {
	d.Votes, d.Shadow = p.votes, p.shadow
	return Ruling{Record: p.g.finish(p.ctx, p.env, p.c, p.rec, res, d, false)}
}

// suspend turns a pending request into a pending call, or into an error
// record when the call was already taken up after an answer (at most one
// retry).
func (p *pass) suspend(ctx context.Context, origin Origin, req *tool.Request) Ruling {
	if p.ans != nil {
		return p.end(tool.Errorf("%s raised a second pending request (%s) after an answer; the call was not run", origin, req.Prompt),
			Decision{Outcome: OutcomeDenied, By: approval.Runtime, Reason: "second pending request"})
	}
	pd := p.g.suspend(ctx, p.env, p.c, p.rec, origin, req, p.args, p.votes)
	pd.Shadow = p.shadow
	return Ruling{Pending: pd}
}

// suspend makes the pending call of req and tells the observer, the Pending
// hooks and the log.
func (g *Gate) suspend(ctx context.Context, env *Env, c *Call, rec *Record, origin Origin, req *tool.Request, args json.RawMessage, votes []tool.Vote) *Pending {
	q := *req
	if q.ID == "" {
		q.ID = g.opts.NewID("req_")
	}
	if env.ClaimID != nil {
		q.ID = env.ClaimID(q.ID, rec.ID)
	}
	if q.Kind == "" {
		// hooks.Ask is for approvals; a tool that asks without a kind wants input.
		q.Kind = tool.KindApproval
		if origin == OriginTool {
			q.Kind = tool.KindInput
		}
	}
	if q.ExpiresAt == nil && g.opts.ApprovalTTL > 0 {
		exp := g.opts.Now().Add(g.opts.ApprovalTTL)
		q.ExpiresAt = &exp
	}
	pc := &Pending{Request: q, Origin: origin, Digest: approval.Digest(args), Args: storable(args), Votes: votes}
	d := Decision{Outcome: OutcomePending, By: lastSource(votes, tool.Principal{Kind: tool.PrincipalRuntime, Name: string(origin)}), Reason: q.Prompt, Votes: votes}
	if env.Observer != nil {
		env.Observer.Decided(c, d)
		env.Observer.Pending(c, q)
	}
	if err := hookrun.Pending(ctx, g.opts.Hooks, hooks.PendingEvent{Name: rec.Name, ID: rec.ID, Turn: c.Turn, Request: q}); err != nil {
		g.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "pending hook failed", slog.String("run", c.RunID), slog.String("error", err.Error()))
	}
	g.opts.Logger.LogAttrs(ctx, slog.LevelInfo, "tool call pending", logAttrs(c.RunID, rec, d)...)
	return pc
}

// authorization is step 4, on the final tool and arguments. A Permission
// hook's answer is taken here, without running the steps before again:
// every hook of steps 1 to 3 fires once per call. Edited arguments (an
// answer's or a Permission hook's) are validated and authorized again.
func (p *pass) authorization(ctx context.Context) Ruling {
	for {
		edited, r := p.takeEdit()
		if r != nil {
			return *r
		}
		verdict, avotes, shadow := p.g.authorize(ctx, p.env, p.c, p.args, p.spec.Hints, p.votes)
		p.shadow = shadow
		p.votes = append(p.votes, avotes...)
		p.placeAnswer(tool.Principal{}) // an authorizer's or a tool's request: heard after every authorizer
		// An approval answer covers this call when it was given for these
		// arguments (or the person wrote them); so does the approval the
		// tool's answered request carries.
		covered := p.apprAns != nil && (edited || approval.Digest(p.args) == p.appr.Digest)
		switch verdict.Decision {
		case approval.Deny:
			return p.end(withContext(tool.Errorf("denied by %s: %s", verdict.By, cmp.Or(verdict.Reason, "no reason given")), p.notes),
				Decision{Outcome: OutcomeDenied, By: verdict.By, Reason: verdict.Reason})
		case approval.Ask:
			if covered {
				return p.allow(ctx, Decision{Outcome: OutcomeApproved, By: answerer(p.apprAns), Actor: p.apprAns.Actor, Reason: p.apprAns.Reason})
			}
			r, again := p.ask(ctx, verdict)
			if again {
				ctx = toolcall.WithAnswer(ctx, *p.ans)
				p.ctx = ctx
				continue
			}
			return r
		default:
			// An answer decided this call when it approved these arguments,
			// or answered the tool's own request (the tool goes on with
			// it); an approval of other arguments (a hook rewrote them
			// after it) is only a vote, and the call is allowed by the
			// source that allowed it.
			if covered || (p.ans != nil && p.prior != nil && p.prior.Origin == OriginTool) {
				return p.allow(ctx, Decision{Outcome: OutcomeApproved, By: answerer(p.ans), Actor: p.ans.Actor, Reason: p.ans.Reason})
			}
			return p.allow(ctx, Decision{Outcome: OutcomeAllowed, By: verdict.By, Reason: verdict.Reason})
		}
	}
}

// takeEdit applies the arguments an answer to the gate's own authorization
// request wrote (only such an answer can edit them; Data answering a tool's
// or a hook's question is theirs): bound to the digest of the arguments it
// was asked about, a JSON object, and valid against the schema.
func (p *pass) takeEdit() (edited bool, r *Ruling) {
	ans := p.apprAns
	if ans == nil || len(bytes.TrimSpace(ans.Data)) == 0 || p.appr.Origin != OriginAuthorization {
		return false, nil
	}
	if approval.Digest(p.args) != p.appr.Digest {
		e := p.end(tool.Errorf("the approval %s was given for other arguments; the call was not run", p.appr.Request.ID),
			Decision{Outcome: OutcomeDenied, By: approval.Runtime, Reason: "arguments digest mismatch"})
		return false, &e
	}
	by := answerer(ans)
	ed, err := jsonenc.Object(json.RawMessage(ans.Data))
	if err != nil {
		e := p.end(tool.Errorf("the edited arguments from %s are not a JSON object: %v", by, err),
			Decision{Outcome: OutcomeInvalid, By: by, Actor: ans.Actor, Reason: "the edited arguments are not a JSON object"})
		return false, &e
	}
	p.args = ed
	p.rec.Args, p.rec.ArgsDigest = storable(ed), approval.Digest(ed)
	p.votes = append(p.votes, tool.Vote{Source: by, Actor: ans.Actor, Decision: tool.VoteRewrite, Reason: "edited the arguments"})
	if err := p.g.validator(p.t).Validate(ed); err != nil {
		e := p.end(tool.Errorf("%s: edited arguments are invalid: %v", p.c.Name, err),
			Decision{Outcome: OutcomeInvalid, By: approval.Runtime, Reason: invalidReason})
		return true, &e
	}
	return true, nil
}

// ask makes the approval request of verdict. Before a person is asked,
// the Permission hooks may answer: a refusal ends the call, an approval
// allows it, and an approval with edited arguments has them authorized
// again (again is true: the caller loops).
func (p *pass) ask(ctx context.Context, verdict approval.Verdict) (r Ruling, again bool) {
	req := p.g.approvalRequest(p.c, p.args, p.spec, verdict)
	// On a retry with the answer to the tool's own request, the Permission
	// hooks are asked again (an approval of theirs is not carried);
	// after any other answer, an ask is a second request.
	toolRetry := p.ans != nil && p.prior != nil && p.prior.Origin == OriginTool
	if p.ans != nil && !toolRetry {
		return p.suspend(ctx, OriginAuthorization, &req), false
	}
	pans, err := hookrun.Permission(ctx, p.g.opts.Hooks, hooks.PermissionEvent{Name: p.c.Name, Args: p.args, ID: p.c.ID, Turn: p.c.Turn, Hints: p.spec.Hints, Request: req})
	if err != nil {
		return Ruling{Err: err}, false
	}
	if pans == nil || (toolRetry && len(bytes.TrimSpace(pans.Data)) > 0) {
		// No hook answers (or one edits the arguments the tool's answer
		// was given for): a person is asked, or, after an answer, the
		// call ends on a second request.
		return p.suspend(ctx, OriginAuthorization, &req), false
	}
	by := answerer(pans)
	if !pans.OK {
		reason := cmp.Or(pans.Reason, "no reason given")
		p.votes = append(p.votes, tool.Vote{Source: by, Actor: pans.Actor, Decision: tool.VoteDeny, Reason: reason})
		return p.end(tool.Errorf("declined by %s: %s", declinedBy(by), reason),
			Decision{Outcome: OutcomeDeclined, By: by, Actor: pans.Actor, Reason: reason}), false
	}
	p.votes = append(p.votes, tool.Vote{Source: by, Actor: pans.Actor, Decision: tool.VoteAllow, Reason: pans.Reason})
	if toolRetry {
		// The tool goes on with its answer; the hook allowed the call.
		return p.allow(ctx, Decision{Outcome: OutcomeApproved, By: by, Actor: pans.Actor, Reason: pans.Reason}), false
	}
	p.prior = &Pending{Request: req, Origin: OriginAuthorization, Digest: approval.Digest(p.args), Args: storable(p.args), Votes: p.votes, Shadow: p.shadow}
	p.ans = pans
	p.appr, p.apprAns, p.permission = p.prior, pans, true
	if len(bytes.TrimSpace(pans.Data)) > 0 {
		return Ruling{}, true
	}
	return p.allow(ctx, Decision{Outcome: OutcomeApproved, By: by, Actor: pans.Actor, Reason: pans.Reason}), false
}

// allow ends Decide on a call that runs: the decision is told to the
// observer now, before the listener and the tool.
func (p *pass) allow(ctx context.Context, d Decision) Ruling {
	d.Votes, d.Shadow = p.votes, p.shadow
	p.rec.Decision = d
	if p.env.Observer != nil {
		p.env.Observer.Decided(p.c, d)
	}
	retried := p.ans != nil && p.prior != nil && p.prior.Origin == OriginTool
	return Ruling{Allowed: &Allowed{Call: *p.c, Args: p.args, Record: p.rec, Context: p.notes, Answer: p.ans, Retried: retried, Approved: p.approved()}}
}

// authorize runs every authorizer (the gate's, then the environment's)
// and combines them with the hooks' allow votes under deny > ask > allow.
// An authorizer that fails or panics denies (fail closed).
//
// The third result lists what shadow rules would have voted (from the
// authorizers that are shadow authorizers): recorded, never combined.
func (g *Gate) authorize(ctx context.Context, env *Env, c *Call, args json.RawMessage, hints *tool.Hints, votes []tool.Vote) (approval.Verdict, []tool.Vote, []tool.Vote) {
	var verdicts []approval.Verdict
	for _, v := range votes {
		if v.Decision == tool.VoteAllow && v.Source.Kind == tool.PrincipalHook {
			verdicts = append(verdicts, approval.Verdict{Decision: approval.Allow, Reason: v.Reason, By: v.Source})
		}
	}
	azs := g.opts.Authorizers
	if len(env.Authorizers) > 0 {
		azs = append(slices.Clone(azs), env.Authorizers...)
	}
	if len(azs) == 0 {
		return approval.Strongest(verdicts...), nil, nil
	}
	ac := approval.Call{Tool: c.Name, CallID: c.ID, Args: slices.Clone(args), RunID: c.RunID, Source: string(c.Source), Principal: c.Principal}
	if hints != nil {
		h := *hints
		ac.Hints = &h
	}
	var out, shadow []tool.Vote
	for i, az := range azs {
		v, sv, err := safeAuthorize(ctx, az, ac)
		for _, x := range sv {
			shadow = append(shadow, tool.Vote{Source: x.By, Decision: tool.VoteDecision(x.Decision), Reason: x.Reason})
		}
		if v.By.IsZero() {
			v.By = tool.Principal{Kind: tool.PrincipalRule, Name: fmt.Sprintf("authorizer#%d", i+1)}
		}
		switch {
		case err != nil:
			v = approval.Verdict{Decision: approval.Deny, Reason: "authorization failed: " + err.Error(), By: v.By}
		case !v.Decision.Valid():
			v = approval.Verdict{Decision: approval.Deny, Reason: fmt.Sprintf("authorizer returned invalid decision %q", v.Decision), By: v.By}
		}
		verdicts = append(verdicts, v)
		out = append(out, tool.Vote{Source: v.By, Decision: tool.VoteDecision(v.Decision), Reason: v.Reason})
	}
	return approval.Strongest(verdicts...), out, shadow
}

// shadowAuthorizer is an authorizer that also says what its shadow rules
// would have voted (a policy with rules in mode shadow): AuthorizeShadow
// returns the verdict Authorize would, and the would-be votes of the shadow
// rules that match c. They are recorded beside the decision
// (Decision.Shadow) and decide nothing.
type shadowAuthorizer interface {
	AuthorizeShadow(ctx context.Context, c approval.Call) (approval.Verdict, []approval.Verdict, error)
}

// safeAuthorize calls az, turning a panic into an error (which denies: fail closed).
// A shadow authorizer is asked for its shadow votes too.
func safeAuthorize(ctx context.Context, az approval.Authorizer, c approval.Call) (v approval.Verdict, shadow []approval.Verdict, err error) {
	defer func() {
		if p := recover(); p != nil {
			v, shadow, err = approval.Verdict{}, nil, fmt.Errorf("authorizer panicked: %v", p)
		}
	}()
	if sa, ok := az.(shadowAuthorizer); ok {
		return sa.AuthorizeShadow(ctx, c)
	}
	v, err = az.Authorize(ctx, c)
	return v, nil, err
}

// approvalRequest is the request of an authorizer's ask: its data is the
// call's [approval.RequestData], bound to the arguments' digest.
func (g *Gate) approvalRequest(c *Call, args json.RawMessage, spec tool.Spec, v approval.Verdict) tool.Request {
	data, _ := jsonenc.Marshal(approval.RequestData{Tool: c.Name, CallID: c.ID, Args: args, Digest: approval.Digest(args), Reason: v.Reason, By: v.By, Hints: spec.Hints, Schema: spec.InputSchema})
	prompt := fmt.Sprintf("Allow %s %s?", c.Name, abbreviate(string(args), 200))
	if v.Reason != "" {
		prompt += " (" + v.By.String() + ": " + v.Reason + ")"
	}
	req := tool.Request{ID: g.opts.NewID("req_"), Kind: tool.KindApproval, Prompt: prompt, Data: data}
	if ttl := g.opts.ApprovalTTL; ttl > 0 {
		exp := g.opts.Now().Add(ttl)
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
func hookRequest(req *tool.Request, c *Call, args json.RawMessage, spec tool.Spec, hook string) *tool.Request {
	if (req.Kind != "" && req.Kind != tool.KindApproval) || len(bytes.TrimSpace(req.Data)) > 0 {
		return req
	}
	data, err := jsonenc.Marshal(approval.RequestData{Tool: c.Name, CallID: c.ID, Args: storable(args), Digest: approval.Digest(args),
		Reason: req.Prompt, By: tool.Principal{Kind: tool.PrincipalHook, Name: hook}, Hints: spec.Hints})
	if err != nil {
		return req
	}
	q := *req
	q.Data = data
	return &q
}
