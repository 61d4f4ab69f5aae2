package server

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/layer"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/internal/statecalls"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// Limits of GET /v1/audit.
const (
	// defaultAuditLimit is how many decisions a search returns when
	// ?limit= is not given; maxAuditLimit the most it returns.
	defaultAuditLimit = 1000
	maxAuditLimit     = 100_000
)

// auditFilter is what GET /v1/audit selects; empty fields select all.
type auditFilter struct {
	tool, rule, person, source, outcome string
	since                               time.Time
}

// matches reports whether e is selected: the tool, source and outcome
// exactly; a rule that voted or decided (rule:NAME); a person who decided
// or acted (person:NAME); decided at or after since.
func (f auditFilter) matches(e serverapi.AuditEntry) bool {
	switch {
	case f.tool != "" && e.Tool != f.tool,
		f.source != "" && e.Source != f.source,
		f.outcome != "" && e.Outcome != f.outcome,
		!f.since.IsZero() && e.Time.Before(f.since):
		return false
	}
	if f.rule != "" {
		want := tool.Principal{Kind: tool.PrincipalRule, Name: f.rule}.String()
		if e.By != want && !votedBy(e.Votes, want) {
			return false
		}
	}
	if f.person != "" {
		want := tool.Principal{Kind: tool.PrincipalPerson, Name: f.person}.String()
		if e.By != want && e.Actor != want {
			return false
		}
	}
	return true
}

func votedBy(vs []tool.Vote, who string) bool {
	for _, v := range vs {
		if v.Source.String() == who {
			return true
		}
	}
	return false
}

// audit is GET /v1/audit?tool=&rule=&person=&source=&outcome=&since=&limit=&format=:
// the decided calls of the caller's tenant, in the store's order (runs as
// stored, calls as recorded), as JSON or, with format=jsonl, as JSON Lines
// (application/jsonl, one serverapi.AuditEntry a line).
func (s *Server) audit(w http.ResponseWriter, r *http.Request, p Principal) {
	q := r.URL.Query()
	f := auditFilter{tool: q.Get("tool"), rule: q.Get("rule"), person: q.Get("person"), source: q.Get("source"), outcome: q.Get("outcome")}
	if v := q.Get("since"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			problemf(w, r, http.StatusBadRequest, "since: want a positive duration such as 24h")
			return
		}
		f.since = s.now().Add(-d)
	}
	limit := defaultAuditLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxAuditLimit {
			problemf(w, r, http.StatusBadRequest, "limit: want a number from 1 to "+strconv.Itoa(maxAuditLimit))
			return
		}
		limit = n
	}
	format := q.Get("format")
	if format != "" && format != "json" && format != "jsonl" {
		problemf(w, r, http.StatusBadRequest, "format: want json or jsonl")
		return
	}
	out := serverapi.AuditPage{Entries: []serverapi.AuditEntry{}}
	for run, err := range store.AllRuns(r.Context(), s.store, store.RunFilter{Tenant: p.Tenant}) {
		if err != nil {
			problemf(w, r, http.StatusInternalServerError, "reading the runs failed")
			return
		}
		for _, e := range s.auditEntries(r.Context(), run) {
			if !f.matches(e) {
				continue
			}
			if len(out.Entries) == limit {
				out.Truncated = true
				break
			}
			out.Entries = append(out.Entries, e)
		}
		if out.Truncated {
			break
		}
	}
	if format != "jsonl" {
		writeJSON(w, http.StatusOK, out)
		return
	}
	w.Header().Set("Content-Type", "application/jsonl")
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for _, e := range out.Entries {
		if err := enc.Encode(e); err != nil {
			return
		}
	}
	_ = bw.Flush()
}

// auditEntries are the decided calls of run: its result's records when it
// ended, its state's otherwise, a Claude Code or Codex session's from its
// events (the latest 1,000); calls still pending are left out.
func (s *Server) auditEntries(ctx context.Context, run store.Run) []serverapi.AuditEntry {
	var v struct {
		ToolCalls []gate.Record                  `json:"toolCalls"`
		Batch     []statecalls.Call[gate.Record] `json:"batch"`
	}
	src := run.State
	if run.Status.Finished() || len(src) == 0 {
		src = run.Result
	}
	if claudeSession(run) {
		calls, err := s.toolCalls(ctx, run)
		if err != nil {
			return nil
		}
		src, _ = json.Marshal(map[string]json.RawMessage{"toolCalls": calls})
	}
	if len(src) == 0 || json.Unmarshal(src, &v) != nil {
		return nil
	}
	v.ToolCalls = statecalls.Append(v.ToolCalls, v.Batch)
	source := summary(run).Source
	path, pol := s.runPolicy(run)
	served := ""
	if pol != nil {
		served = s.rulePolicy(run, path)
	}
	var out []serverapi.AuditEntry
	for _, rec := range v.ToolCalls {
		d := rec.Decision
		if d.Outcome == gate.OutcomePending {
			continue
		}
		e := serverapi.AuditEntry{Time: rec.Started, RunID: run.ID, CallID: rec.ID, Tool: rec.Name, Source: source, Outcome: string(d.Outcome),
			By: d.By.String(), Reason: d.Reason, Args: rec.Args, Votes: d.Votes, Shadow: d.Shadow}
		if !d.Actor.IsZero() {
			e.Actor = d.Actor.String()
		}
		e.RuleAt = ruleAt(pol, path, lastRule(d))
		if e.RuleAt != "" {
			e.RulePolicy = served
		}
		e.LayerVersion = layerVersion(d)
		out = append(out, e)
	}
	return out
}

// lastRule is the rule that decided d, else the last rule that voted on it
// (the one that asked, when a person approved), else the zero principal.
func lastRule(d gate.Decision) tool.Principal {
	if d.By.Kind == tool.PrincipalRule {
		return d.By
	}
	for i := len(d.Votes) - 1; i >= 0; i-- {
		if d.Votes[i].Source.Kind == tool.PrincipalRule {
			return d.Votes[i].Source
		}
	}
	return tool.Principal{}
}

// layerReason finds the rule layer's version in the reason of a decision
// it made ("approved by rule layer v3 (rule ...)", "... (rule layer v3,
// accepted by ...)").
var layerReason = regexp.MustCompile(`\brule layer v([0-9]{1,18})\b`)

// layerVersion is the version of the rule layer that decided d: d is by
// the layer's hook or by a rule whose reason names the layer; 0 otherwise.
func layerVersion(d gate.Decision) int64 {
	byLayer := d.By == tool.Principal{Kind: tool.PrincipalHook, Name: layer.HookName}
	if !byLayer && d.By.Kind != tool.PrincipalRule {
		return 0
	}
	m := layerReason.FindStringSubmatch(d.Reason)
	if m == nil {
		return 0
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}
