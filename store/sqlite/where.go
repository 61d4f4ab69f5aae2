package sqlite

import (
	"strings"

	"github.com/tollgate-dev/tollgate/store"
)

// where is the WHERE clause of a listing, made of the conditions of the
// filters set and nothing for those left empty, so that SQLite plans each
// query with the index of what it selects by. A condition that tests in
// SQL whether its filter is set (its parameter empty, or the column equal
// to it) is planned before the parameters are bound, and scans the table.
// The statements are few (one for each combination of filters set), and
// each connection keeps them prepared.
type where struct {
	conds []string
	args  []any
}

// and adds the condition cond with its arguments.
func (w *where) and(cond string, args ...any) {
	w.conds = append(w.conds, cond)
	w.args = append(w.args, args...)
}

// andIf adds cond = value when value is not empty.
func (w *where) andIf(col, value string) {
	if value != "" {
		w.and(col+" = ?", value)
	}
}

// tenant adds the condition of a listing's tenant: none across all
// tenants.
func (w *where) tenant(tenant string, all bool) {
	if !all {
		w.and("tenant = ?", tenant)
	}
}

// unindexed is col in a condition SQLite must not plan with col's index
// (SQLite's unary +): where a run or an ID is also selected, whose index
// finds a few rows, not a tenant's or a status's many.
func unindexed(col string) string { return "+" + col }

func (w *where) String() string { return strings.Join(w.conds, " AND ") }

// eventsQuery is ListEvents's query of at most limit events of f, and its
// arguments.
func eventsQuery(f store.EventFilter, limit int) (string, []any) {
	w := eventsWhere(f)
	return `SELECT seq, tenant, run_id, type, time, data FROM events WHERE ` + w.String() + ` ORDER BY seq LIMIT ?`, append(w.args, limit)
}

// approvalsQuery is ListApprovals's query of at most limit approvals of f
// after position after, and its arguments.
func approvalsQuery(f store.ApprovalFilter, after int64, limit int) (string, []any) {
	w := approvalsWhere(f, after)
	return `SELECT ` + approvalCols + ` FROM approvals WHERE ` + w.String() + ` ORDER BY seq LIMIT ?`, append(w.args, limit)
}

// runsQuery is ListRuns's query of at most limit runs of f from position
// from, and its arguments.
func runsQuery(f store.RunFilter, from int64, limit int) (string, []any) {
	order := "seq"
	if f.Newest {
		order = "seq DESC"
	}
	w := runsWhere(f, from)
	return `SELECT ` + runCols + ` FROM runs WHERE ` + w.String() + ` ORDER BY ` + order + ` LIMIT ?`, append(w.args, limit)
}

// eventsWhere selects the events of f after f.AfterSeq.
func eventsWhere(f store.EventFilter) *where {
	w := &where{}
	w.and("seq > ?", f.AfterSeq)
	if f.RunID != "" {
		w.and("run_id = ?", f.RunID)
		if !f.AllTenants {
			w.and(unindexed("tenant")+" = ?", f.Tenant)
		}
		return w
	}
	w.tenant(f.Tenant, f.AllTenants)
	return w
}

// approvalsWhere selects the approvals of f after position after.
func approvalsWhere(f store.ApprovalFilter, after int64) *where {
	w := &where{}
	w.and("seq > ?", after)
	w.andIf("run_id", f.RunID)
	w.andIf("id", f.ID)
	tenant, status := "tenant", "status"
	if f.RunID != "" || f.ID != "" {
		tenant, status = unindexed(tenant), unindexed(status)
	}
	if !f.AllTenants {
		w.and(tenant+" = ?", f.Tenant)
	}
	w.andIf(status, string(f.Status))
	return w
}

// runsWhere selects the runs of f from position from: after it, or
// before it for the newest first (from 0: from the newest).
func runsWhere(f store.RunFilter, from int64) *where {
	w := &where{}
	switch {
	case !f.Newest:
		w.and("seq > ?", from)
	case from != 0:
		w.and("seq < ?", from)
	}
	w.tenant(f.Tenant, f.AllTenants)
	w.andIf("status", string(f.Status))
	w.andIf("owner", f.Owner)
	if len(w.conds) == 0 {
		w.and("1")
	}
	return w
}
