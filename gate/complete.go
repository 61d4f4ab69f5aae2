package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/argcheck"
	"github.com/tollgate-dev/tollgate/internal/hookrun"
	"github.com/tollgate-dev/tollgate/internal/toolcall"
	"github.com/tollgate-dev/tollgate/tool"
)

// ErrNoRecord is Complete's error for an [Allowed] without its Record:
// not one that Decide made.
var ErrNoRecord = errors.New("gate: the allowed call has no record (it was not made by Decide)")

// Ran is what running an allowed call gave: the tool's result (or the one
// the caller reports for a tool it ran elsewhere), how long it took, and
// the file refusal the tool met, if any ([approval.CheckFile]).
type Ran struct {
	Result  tool.Result
	Latency time.Duration
	Refusal *approval.FileRefusal
}

// Runner runs an allowed call's tool with the call's context and returns
// what it gave. The agent's runner executes the tool under its limits; a
// caller that ran the tool elsewhere returns the result it reports.
type Runner func(ctx context.Context, a *Allowed) Ran

// Reported is the [Runner] of a caller that ran the tool itself: it runs
// nothing and returns res as the tool's result.
func Reported(res tool.Result, latency time.Duration) Runner {
	return func(context.Context, *Allowed) Ran { return Ran{Result: res, Latency: latency} }
}

// Complete runs steps 5 to 9 of the pipeline on a call [Gate.Decide]
// allowed: the listener's PRE_TOOL_USE, run (the tool, or the reported
// result), the listener's POST_TOOL_USE and ON_ERROR, the AfterTool
// hooks (which may replace the result), the cap, the record. A tool that
// asks instead of answering (a pending request in its result) suspends the
// call: the ruling is Pending. A context that ends during PRE_TOOL_USE
// runs nothing: the ruling is its Err. An AfterTool hook that fails
// withholds the result: the ruling is the Record with the Err. An Allowed
// without its Record is refused with [ErrNoRecord].
func (g *Gate) Complete(ctx context.Context, env *Env, a *Allowed, run Runner) Ruling {
	c, rec := &a.Call, a.Record
	if rec == nil {
		return Ruling{Err: ErrNoRecord}
	}
	if a.Answer != nil {
		ctx = toolcall.WithAnswer(ctx, *a.Answer)
	}
	var use *hooks.ToolUse
	l := g.listener()
	if l != nil {
		use = &hooks.ToolUse{Tool: c.Name, Args: slices.Clone(a.Args), CallID: c.ID, Turn: c.Turn, AgentID: c.AgentID, RunID: c.RunID, Retried: a.Retried}
		g.guard(ctx, c, "tool call listener (PreToolUse)", func() { l.PreToolUse(ctx, use) })
	}
	if err := ctx.Err(); err != nil {
		// Cancelled while the PreToolUse hooks ran: the tool does not start.
		return Ruling{Err: err}
	}
	ran := run(ctx, a)
	res := ran.Result
	decision := rec.Decision
	if res.IsError && res.Pending == nil && ran.Refusal != nil && strings.Contains(res.Output, ran.Refusal.Error()) {
		// The tool refused the file it opened (approval.CheckFile): the call
		// is denied by whoever refused it, not allowed.
		decision = refusedDecision(decision, ran.Refusal)
	}
	if res.Pending != nil {
		if l != nil {
			post := *use
			post.Latency, post.Pending = ran.Latency, true
			g.guard(ctx, c, "tool call listener (PostToolUse)", func() { l.PostToolUse(ctx, &post) })
		}
		if ap := a.Approved; a.Answer != nil && ap != nil && a.Answer.ID == ap.Request {
			// The tool asks while it runs on an approval: the call waits
			// for the answer, and its approval waits with it.
			pd := g.suspend(ctx, env, c, rec, OriginTool, res.Pending, a.Args, decision.Votes)
			cp := *ap
			pd.Approved = &cp
			return Ruling{Pending: pd}
		}
		if a.Answer != nil && a.Approved == nil && a.Answer.Who().Kind == tool.PrincipalHook {
			// A Permission hook's approval is not carried: the call waits
			// for the answer, and the hooks are asked again on the retry.
			return Ruling{Pending: g.suspend(ctx, env, c, rec, OriginTool, res.Pending, a.Args, decision.Votes)}
		}
		if a.Answer != nil {
			return Ruling{Record: g.finish(ctx, env, c, rec, tool.Errorf("%s raised a second pending request (%s) after an answer; the call was not run", OriginTool, res.Pending.Prompt),
				Decision{Outcome: OutcomeDenied, By: approval.Runtime, Reason: "second pending request", Votes: decision.Votes}, false)}
		}
		return Ruling{Pending: g.suspend(ctx, env, c, rec, OriginTool, res.Pending, a.Args, decision.Votes)}
	}
	if l != nil {
		g.listenAfter(ctx, c, l, *use, res, ran.Latency)
	}
	rec.Decision = decision
	return g.afterTool(ctx, env, a, rec, res)
}

// listenAfter tells the listener the tool returned: POST_TOOL_USE, and
// ON_ERROR when it failed.
func (g *Gate) listenAfter(ctx context.Context, c *Call, l hooks.ToolCallListener, post hooks.ToolUse, res tool.Result, latency time.Duration) {
	post.Latency, post.Success, post.OutputSize = latency, !res.IsError, len(res.Output)
	if res.IsError {
		post.Error = res.Output
	}
	g.guard(ctx, c, "tool call listener (PostToolUse)", func() { l.PostToolUse(ctx, &post) })
	if res.IsError {
		g.guard(ctx, c, "tool call listener (OnError)", func() { l.OnError(ctx, &post) })
	}
}

// afterTool is steps 8 and 9: the AfterTool chain, in order, each hook
// seeing the result as replaced before it; then the cap and the record.
func (g *Gate) afterTool(ctx context.Context, env *Env, a *Allowed, rec *Record, res tool.Result) Ruling {
	c := &a.Call
	final, by, err := hookrun.AfterTool(ctx, g.opts.Hooks, hooks.AfterToolEvent{Name: c.Name, Args: a.Args, Result: res, ID: c.ID, Turn: c.Turn})
	rec.ReplacedBy = by
	if err != nil {
		// The tool ran: record it, but withhold its output, since the hook
		// that failed may have been the one meant to redact it.
		withheld := tool.Errorf("the result was withheld: %v", err)
		return Ruling{Record: g.finish(ctx, env, c, rec, withheld, rec.Decision, true), Err: err}
	}
	max := 0
	if g.opts.MaxResultBytes != nil {
		max = g.opts.MaxResultBytes(c.Name)
	}
	final = capResult(withContext(final, a.Context), max)
	return Ruling{Record: g.finish(ctx, env, c, rec, final, rec.Decision, true)}
}

// End records a call that ends without running, with res as its result
// and d as its decision: the ways a caller's own checks end a call (no
// answer came, an answer for another request).
func (g *Gate) End(ctx context.Context, env *Env, c Call, res tool.Result, d Decision) *Record {
	return g.finish(ctx, env, &c, g.newRecord(c), res, d, false)
}

// newRecord starts the record of c.
func (g *Gate) newRecord(c Call) *Record {
	d := approval.Digest(c.Args)
	return &Record{
		RunID: c.RunID, Source: c.Source, Principal: c.Principal, ID: c.ID, Name: c.Name, Turn: c.Turn,
		RequestedArgs: c.Args, Args: c.Args,
		RequestedDigest: d, ArgsDigest: d,
		Started: g.opts.Now(),
	}
}

// finish completes the record, tells the observer (the decision first
// when the tool did not run), logs it and hands it to OnRecord.
func (g *Gate) finish(ctx context.Context, env *Env, c *Call, rec *Record, res tool.Result, d Decision, ran bool) *Record {
	rec.Output, rec.IsError, rec.Metadata = res.Output, res.IsError, res.Metadata
	rec.Ran, rec.Decision = ran, d
	rec.Duration = g.opts.Now().Sub(rec.Started)
	if env != nil && env.Observer != nil {
		if !ran {
			env.Observer.Decided(c, d)
		}
		env.Observer.Recorded(c, rec)
	}
	if g.opts.Logger.Enabled(ctx, slog.LevelInfo) { // the attributes cost more than a discarded line
		g.opts.Logger.LogAttrs(ctx, slog.LevelInfo, "tool call", logAttrs(c.RunID, rec, d)...)
	}
	if g.opts.OnRecord != nil {
		g.guard(ctx, c, "OnRecord", func() { g.opts.OnRecord(ctx, *rec) })
	}
	return rec
}

func (g *Gate) listener() hooks.ToolCallListener {
	if g.opts.Listener == nil {
		return nil
	}
	return g.opts.Listener()
}

// guard runs a host callback that has no way to fail (the listener,
// OnRecord) on a call's goroutine: a panic there is logged and the run goes
// on, rather than crashing the process from a worker goroutine.
func (g *Gate) guard(ctx context.Context, c *Call, what string, fn func()) {
	defer func() {
		if p := recover(); p != nil {
			g.opts.Logger.LogAttrs(ctx, slog.LevelError, what+" panicked", slog.String("run", c.RunID), slog.Any("panic", p))
		}
	}()
	fn()
}

// logAttrs are the log attributes of a tool call decision. Argument
// values and outputs are never logged (they may hold secrets); digests
// identify them.
func logAttrs(runID string, rec *Record, d Decision) []slog.Attr {
	out := make([]slog.Attr, 0, 10)
	out = append(out,
		slog.String("run", runID),
		slog.String("call", rec.ID),
		slog.String("tool", rec.Name),
		slog.Int("turn", rec.Turn),
		slog.String("outcome", string(d.Outcome)),
		slog.String("by", d.By.String()),
		slog.String("argsDigest", rec.ArgsDigest),
		slog.Bool("isError", rec.IsError),
		slog.Duration("duration", rec.Duration),
	)
	if !d.Actor.IsZero() {
		out = append(out, slog.String("actor", d.Actor.String()))
	}
	return out
}

// refusedDecision is d after the tool refused the file it was to use, with
// fr: denied by the refusal's source, which votes deny.
func refusedDecision(d Decision, fr *approval.FileRefusal) Decision {
	v := fr.Verdict
	reason := v.Reason
	if v.Decision != approval.Deny || reason == "" {
		reason = fr.Error()
	}
	votes := append(slices.Clip(d.Votes), tool.Vote{Source: v.By, Decision: tool.VoteDeny, Reason: reason})
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

// capResult cuts res.Output to max bytes (0 or negative: no cap) at a
// character boundary and appends a marker saying how much was cut.
func capResult(res tool.Result, max int) tool.Result {
	if max <= 0 || len(res.Output) <= max {
		return res
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(res.Output[cut]) {
		cut--
	}
	total := len(res.Output)
	res.Output = res.Output[:cut] + fmt.Sprintf("\n[tool result truncated: %d of %d bytes cut (limit %d bytes)]", total-cut, total, max)
	return res
}

// storable returns args if they are valid JSON nested at most
// argcheck.MaxDepth deep, and otherwise the bytes as a JSON string, so
// that a record or a halted state with arguments a hook garbled still
// encodes, and reads back from a store (the call itself fails validation).
func storable(args json.RawMessage) json.RawMessage {
	if json.Valid(args) && !argcheck.TooDeep(args) {
		return slices.Clone(args)
	}
	b, _ := json.Marshal(string(args))
	return b
}

// answerer is who gave ans ([tool.Answer.Who]: a Permission hook, a person,
// a flag, the runtime), or an unnamed person when the host named no one. Who
// acted on its behalf is ans.Actor.
func answerer(ans *tool.Answer) tool.Principal {
	if who := ans.Who(); !who.IsZero() {
		return who
	}
	return tool.Principal{Kind: tool.PrincipalPerson}
}

// declinedBy names who declined for the model: a person by name alone.
func declinedBy(p tool.Principal) string {
	if p.Kind == tool.PrincipalPerson && p.Name != "" {
		return p.Name
	}
	return p.String()
}

func lastSource(votes []tool.Vote, def tool.Principal) tool.Principal {
	if len(votes) == 0 {
		return def
	}
	return votes[len(votes)-1].Source
}

// abbreviate cuts s to at most n bytes, at a character boundary, and
// marks the cut.
func abbreviate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
