package replay

import (
	"context"
	"encoding/json"
	"iter"
	"time"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/statecalls"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// Options selects the recorded calls [Calls] reads.
type Options struct {
	// Tenant is the tenant read ("" is the default tenant); AllTenants
	// reads every tenant (the local command line).
	Tenant     string
	AllTenants bool
	// Since, when not zero, skips calls decided before it.
	Since time.Time
	// Hints gives a tool's hints when no approval request of the store
	// recorded them (the builtin tools' own, say); nil means none.
	Hints func(tool string) *tool.Hints
}

// Calls returns the recorded calls of the store s that o selects, in the
// store's order: runs as stored, calls as recorded in each (a run with
// neither state nor result, such as a Claude Code or Codex session's, by
// its tool.finished events). A run whose state or result does not decode
// is skipped. Errors: the store's.
func Calls(ctx context.Context, s store.Store, o Options) ([]Call, error) {
	hints, err := requestHints(ctx, s, o)
	if err != nil {
		return nil, err
	}
	var out []Call
	for run, err := range store.AllRuns(ctx, s, store.RunFilter{Tenant: o.Tenant, AllTenants: o.AllTenants}) {
		if err != nil {
			return nil, err
		}
		recs := records(run)
		if len(run.State) == 0 && len(run.Result) == 0 {
			if recs, err = eventRecords(ctx, s, run); err != nil {
				return nil, err
			}
		}
		for _, rec := range recs {
			c, ok := callOf(run, rec)
			if !ok || (!o.Since.IsZero() && c.Started.Before(o.Since)) {
				continue
			}
			if c.Hints == nil { // the record's, else an approval request's, else the caller's
				c.Hints = hints[[2]string{run.Tenant, c.Tool}]
			}
			if c.Hints == nil && o.Hints != nil {
				c.Hints = o.Hints(c.Tool)
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// Seq returns calls as a sequence for [Replay].
func Seq(calls []Call) iter.Seq[Call] {
	return func(yield func(Call) bool) {
		for _, c := range calls {
			if !yield(c) {
				return
			}
		}
	}
}

// requestHints returns the hints approval requests recorded, per tenant
// and tool (the latest request's).
func requestHints(ctx context.Context, s store.Store, o Options) (map[[2]string]*tool.Hints, error) {
	out := map[[2]string]*tool.Hints{}
	for a, err := range store.AllApprovals(ctx, s, store.ApprovalFilter{Tenant: o.Tenant, AllTenants: o.AllTenants}) {
		if err != nil {
			return nil, err
		}
		if a.Kind != tool.KindApproval {
			continue
		}
		if d, err := approval.ParseRequestData(a.Request); err == nil && d.Hints != nil {
			out[[2]string{a.Tenant, a.Tool}] = d.Hints
		}
	}
	return out, nil
}

// records returns the tool call records of run: its result's when it
// ended, its state's otherwise, with the finished calls of the state's
// turn in progress (its batch), as the agent's result lists them.
func records(run store.Run) []gate.Record {
	var v struct {
		ToolCalls []gate.Record                  `json:"toolCalls"`
		Batch     []statecalls.Call[gate.Record] `json:"batch"`
	}
	src := run.State
	if run.Status.Finished() || len(src) == 0 {
		src = run.Result
	}
	if len(src) == 0 || json.Unmarshal(src, &v) != nil {
		return nil
	}
	return statecalls.Append(v.ToolCalls, v.Batch)
}

// toolFinished is the type of the event that records a finished call
// (runs.EventToolFinished), its data an agent event with the record.
const toolFinished = "tool.finished"

// eventRecords returns the records of a run that keeps them in its events
// only (a Claude Code or Codex session's run, whose calls its agent ran):
// the record of each tool.finished event, in the log's order.
func eventRecords(ctx context.Context, s store.Store, run store.Run) ([]gate.Record, error) {
	var out []gate.Record
	var after int64
	for {
		evs, err := s.ListEvents(ctx, store.EventFilter{Tenant: run.Tenant, RunID: run.ID, AfterSeq: after, Limit: store.MaxLimit})
		if err != nil {
			return nil, err
		}
		for _, ev := range evs {
			after = ev.Seq
			var e struct {
				Record *gate.Record `json:"record"`
			}
			if ev.Type == toolFinished && json.Unmarshal(ev.Data, &e) == nil && e.Record != nil {
				out = append(out, *e.Record)
			}
		}
		if len(evs) < store.MaxLimit {
			return out, nil
		}
	}
}

// callOf is the replayed call of a record, and false for a record that
// never reached the policy or waits for an answer.
func callOf(run store.Run, rec gate.Record) (Call, bool) {
	switch rec.Decision.Outcome {
	case gate.OutcomeAllowed, gate.OutcomeApproved, gate.OutcomeDenied, gate.OutcomeDeclined, gate.OutcomeExpired:
	default:
		return Call{}, false
	}
	args := rec.Args
	if len(args) == 0 {
		args = rec.RequestedArgs
	}
	c := Call{Tenant: run.Tenant, RunID: run.ID, CallID: rec.ID, Tool: rec.Name, Args: args, Started: rec.Started,
		Outcome: string(rec.Decision.Outcome), Was: approval.Allow, Shadow: rec.Decision.Shadow, Hints: rec.Hints}
	var vs []approval.Verdict
	for _, v := range rec.Decision.Votes {
		if v.Source.Kind == tool.PrincipalRule || v.Source.Kind == tool.PrincipalAutonomy {
			vs = append(vs, approval.Verdict{Decision: approval.Effect(v.Decision), By: v.Source})
		}
	}
	if len(vs) > 0 {
		w := approval.Strongest(vs...)
		c.Was, c.WasBy = w.Decision, w.By.String()
	}
	return c, true
}
