package replay

import (
	"cmp"
	"encoding/json"
	"iter"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/tool"
)

// MaxExamples is how many examples a [Change] keeps (the first, in the
// store's order).
const MaxExamples = 5

// maxExampleArgs bounds the arguments an example shows (bytes).
const maxExampleArgs = 300

// Call is one recorded tool call, as a replay reads it.
type Call struct {
	// Tenant and RunID name the run; CallID the call in it.
	Tenant, RunID, CallID string
	// Tool is the tool's name and Args the arguments the call ran with.
	Tool string
	Args json.RawMessage
	// Hints are the tool's hints; nil when unknown.
	Hints *tool.Hints
	// Started is when the call was decided.
	Started time.Time
	// Outcome is the recorded outcome (gate.Outcome: allowed, approved,
	// denied, declined, expired).
	Outcome string
	// Was is the recorded policy effect, and WasBy the rule or autonomy
	// level that decided it ("rule:ask-bash"; "" for the default allow).
	Was   approval.Effect
	WasBy string
	// Shadow are the votes the shadow rules of the policy then in force
	// recorded beside the decision.
	Shadow []tool.Vote
}

// Report is what a candidate policy changes over the recorded calls.
type Report struct {
	// Policy is the candidate policy's name (its file).
	Policy string `json:"policy"`
	// Calls is the number of calls replayed; Runs of the runs they belong to.
	Calls int `json:"calls"`
	Runs  int `json:"runs"`
	// Unchanged counts the calls decided as they were.
	Unchanged int `json:"unchanged"`
	// Changes are the changed decisions, one entry per (from, to), in the
	// order allow, ask, deny of From then To.
	Changes []Change `json:"changes"`
	// ApprovalsSaved counts the calls a person was asked about that the
	// policy would decide alone (ask to allow or deny); SavedDeclined those
	// of them a person had declined or let expire, which the policy would
	// now allow.
	ApprovalsSaved int `json:"approvalsSaved"`
	SavedDeclined  int `json:"savedDeclined"`
	// ApprovalsAdded counts the calls decided alone that it would ask about.
	ApprovalsAdded int `json:"approvalsAdded"`
	// Shadow counts how often each shadow rule of the policy (mode:
	// shadow) would have voted, by rule and vote, sorted by rule then vote;
	// those votes change no decision above.
	Shadow []ShadowCount `json:"shadow"`
}

// ShadowCount is how often one shadow rule would have voted one way.
type ShadowCount struct {
	// Rule is the rule ("rule:deny-etc").
	Rule string `json:"rule"`
	// Decision is the vote it would have cast, and Count how often.
	Decision approval.Effect `json:"decision"`
	Count    int             `json:"count"`
}

// Change is one kind of changed decision.
type Change struct {
	// From is the recorded policy effect, To the candidate's.
	From approval.Effect `json:"from"`
	To   approval.Effect `json:"to"`
	// Count is how many calls changed so; Examples are the first
	// [MaxExamples] of them, in the store's order.
	Count    int       `json:"count"`
	Examples []Example `json:"examples"`
}

// Example is one changed call.
type Example struct {
	// RunID, CallID and Tool name the call.
	RunID  string `json:"runId"`
	CallID string `json:"callId"`
	Tool   string `json:"tool"`
	// Args are the call's arguments, cut to 300 bytes (then not JSON: a
	// string ending in "…").
	Args string `json:"args"`
	// Outcome is what happened to the call (approved, declined, ...).
	Outcome string `json:"outcome"`
	// WasBy and By are who decided, recorded and replayed.
	WasBy string `json:"wasBy"`
	By    string `json:"by"`
}

// Replay evaluates p on every call of calls and reports what changes.
func Replay(p *policy.Policy, calls iter.Seq[Call]) Report {
	r := Report{Policy: p.Spec().Name, Changes: []Change{}, Shadow: []ShadowCount{}}
	runs := map[string]bool{}
	changes := map[[2]approval.Effect]*Change{}
	shadow := map[ShadowCount]int{}
	for c := range calls {
		r.Calls++
		runs[c.Tenant+"\x00"+c.RunID] = true
		ev := p.Evaluate(approval.Call{Tool: c.Tool, CallID: c.CallID, Args: c.Args, Hints: c.Hints, RunID: c.RunID})
		for _, v := range ev.Shadow {
			shadow[ShadowCount{Rule: v.By.String(), Decision: v.Decision}]++
		}
		now := ev.Verdict.Decision
		if now == c.Was {
			r.Unchanged++
			continue
		}
		key := [2]approval.Effect{c.Was, now}
		ch := changes[key]
		if ch == nil {
			ch = &Change{From: c.Was, To: now, Examples: []Example{}}
			changes[key] = ch
		}
		ch.Count++
		if len(ch.Examples) < MaxExamples {
			ch.Examples = append(ch.Examples, Example{RunID: c.RunID, CallID: c.CallID, Tool: c.Tool, Args: clip(c.Args),
				Outcome: c.Outcome, WasBy: c.WasBy, By: ev.Verdict.By.String()})
		}
		switch {
		case c.Was == approval.Ask:
			r.ApprovalsSaved++
			if now == approval.Allow && c.Outcome != "approved" {
				r.SavedDeclined++
			}
		case now == approval.Ask:
			r.ApprovalsAdded++
		}
	}
	r.Runs = len(runs)
	r.Shadow = sortedCounts(shadow)
	for _, ch := range changes {
		r.Changes = append(r.Changes, *ch)
	}
	slices.SortFunc(r.Changes, func(a, b Change) int {
		return cmp.Or(cmp.Compare(rank(a.From), rank(b.From)), cmp.Compare(rank(a.To), rank(b.To)))
	})
	return r
}

// rank orders effects allow, ask, deny.
func rank(e approval.Effect) int {
	switch e {
	case approval.Allow:
		return 0
	case approval.Ask:
		return 1
	}
	return 2
}

// clip returns args as text of at most maxExampleArgs bytes.
func clip(args json.RawMessage) string {
	s := string(args)
	if len(s) <= maxExampleArgs {
		return s
	}
	cut := maxExampleArgs
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
