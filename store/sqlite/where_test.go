package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/store"
)

// A listing by run, by ID or by status is planned with the index of what
// it selects by, not as a walk of the whole table from the position given:
// a decision finds its request by ID, a resume its run's pending requests,
// a heartbeat its run's events, and each did it in time that grew with
// the store.
func TestListingsUseTheirIndexes(t *testing.T) {
	s := openInternal(t)
	for _, tt := range []struct {
		what  string
		query func() (string, []any)
		index string
	}{
		{"approvals by ID", func() (string, []any) {
			return approvalsQuery(store.ApprovalFilter{Tenant: "acme", ID: "req_1", Limit: 2}, 0, 3)
		}, "approvals_id"},
		{"approvals of a run", func() (string, []any) {
			return approvalsQuery(store.ApprovalFilter{AllTenants: true, RunID: "run_1", Status: store.StatusPending}, 0, 2)
		}, "approvals_run"},
		{"events of a run", func() (string, []any) { return eventsQuery(store.EventFilter{AllTenants: true, RunID: "run_1"}, 100) }, "events_run"},
		{"events of a tenant", func() (string, []any) { return eventsQuery(store.EventFilter{Tenant: "acme"}, 100) }, "events_tenant"},
		{"runs by status", func() (string, []any) {
			return runsQuery(store.RunFilter{AllTenants: true, Status: store.RunPending}, 0, 101)
		}, "runs_status"},
	} {
		q, args := tt.query()
		plan := explain(t, s, q, args)
		if !strings.Contains(plan, "INDEX "+tt.index) {
			t.Errorf("%s: plan %q, want the index %s", tt.what, plan, tt.index)
		}
	}
}

// explain returns SQLite's plan of query with args, its steps joined.
func explain(t *testing.T, s *sqliteStore, query string, args []any) string {
	t.Helper()
	rows, err := s.db.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var steps []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		steps = append(steps, detail)
	}
	return fmt.Sprint(steps)
}

// A stored document too small to pass the limits is not scanned, and its
// name is not made: each event a stream or the follower reads was
// scanned, and named, for nothing.
func TestSmallDocumentsAreNotScanned(t *testing.T) {
	doc := sql.NullString{String: `{"status":"done","reason":""}`, Valid: true}
	named := 0
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := boundedOf(func() string { named++; return "event 1: data" }, doc); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 || named != 0 {
		t.Fatalf("checking a small document: %v allocations, named %d times; want the copy it returns, and no name", allocs, named)
	}
}
