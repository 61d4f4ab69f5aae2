package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/sqlite"
	"github.com/tollgate-dev/tollgate/tool"
)

// v1Schema is the schema the first released version wrote (PRAGMA
// user_version 1, no schema_version table), kept here verbatim so that the
// migration is tested against what is on users' disks, not against the
// embedded migration file.
const v1Schema = `
CREATE TABLE IF NOT EXISTS runs (
	id         TEXT PRIMARY KEY,
	status     TEXT NOT NULL,
	state      TEXT,
	result     TEXT,
	config     TEXT,
	created_at TEXT NOT NULL,
	updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_status ON runs(status);
CREATE TABLE IF NOT EXISTS approvals (
	seq        INTEGER PRIMARY KEY AUTOINCREMENT,
	run_id     TEXT NOT NULL REFERENCES runs(id),
	id         TEXT NOT NULL,
	call_id    TEXT NOT NULL,
	tool       TEXT NOT NULL,
	digest     TEXT NOT NULL,
	kind       TEXT NOT NULL,
	prompt     TEXT NOT NULL,
	request    TEXT NOT NULL,
	status     TEXT NOT NULL,
	decided_by TEXT NOT NULL DEFAULT '',
	reason     TEXT NOT NULL DEFAULT '',
	data       TEXT,
	created_at TEXT NOT NULL,
	updated_at TEXT NOT NULL,
	decided_at TEXT,
	used_at    TEXT,
	expires_at TEXT,
	UNIQUE (run_id, id)
);
CREATE INDEX IF NOT EXISTS approvals_status ON approvals(status);
CREATE INDEX IF NOT EXISTS approvals_id ON approvals(id);
PRAGMA user_version = 1;
`

func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func exec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func TestMigrateVersion1(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tollgate.db")
	db := rawDB(t, path)
	exec(t, db, v1Schema)
	// Inserted in an order other than their creation times: the migration
	// keeps the order version 1 listed them in (created_at, then rowid).
	for _, r := range [][2]string{{"run_b", "2030-01-02T03:04:06Z"}, {"run_a", "2030-01-02T03:04:05Z"}, {"run_c", "2030-01-02T03:04:06Z"}} {
		exec(t, db, `INSERT INTO runs (id, status, state, result, config, created_at, updated_at) VALUES (?, 'pending', '{"s":1}', NULL, '{"args":["run"]}', ?, ?)`, r[0], r[1], r[1])
	}
	for i, id := range []string{"run_a", "run_b", "run_a"} {
		exec(t, db, `INSERT INTO approvals (run_id, id, call_id, tool, digest, kind, prompt, request, status, created_at, updated_at)
			VALUES (?, ?, 'call_1', 'transfer_funds', 'sha256:x', 'approval', 'Allow?', '{"id":"r","kind":"approval","prompt":"Allow?"}', 'pending', '2030-01-02T03:04:05Z', '2030-01-02T03:04:05Z')`,
			id, []string{"req_1", "req_1", "req_2"}[i])
	}
	// Decided before decisions were sealed: it has no MAC.
	exec(t, db, `UPDATE approvals SET status = 'approved', decided_by = 'alice' WHERE run_id = 'run_a' AND id = 'req_2'`)
	db.Close()

	clock := time.Date(2030, 1, 3, 0, 0, 0, 0, time.UTC)
	s, err := sqlite.Open(ctx, path, &store.Options{Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatalf("Open of a version 1 file: %v", err)
	}
	defer s.Close()
	var ids []string
	for r, err := range store.AllRuns(ctx, s, store.RunFilter{}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
		if r.Tenant != "" || r.Version != 1 || r.Lease != nil || string(r.State) != `{"s":1}` || string(r.Config) != `{"args":["run"]}` {
			t.Errorf("migrated run %+v", r)
		}
	}
	if d := cmp.Diff([]string{"run_a", "run_b", "run_c"}, ids); d != "" {
		t.Fatalf("migrated runs (-want +got):\n%s", d)
	}
	var apps []string
	for a, err := range store.AllApprovals(ctx, s, store.ApprovalFilter{}) {
		if err != nil {
			t.Fatal(err)
		}
		apps = append(apps, a.RunID+"/"+a.ID)
	}
	if d := cmp.Diff([]string{"run_a/req_1", "run_b/req_1", "run_a/req_2"}, apps); d != "" {
		t.Fatalf("migrated approvals (-want +got):\n%s", d)
	}

	// The migrated file works: decide, claim, add approvals, events.
	if _, err := s.Decide(ctx, "run_a", "req_1", store.Answer{Approve: true, By: tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}}); err != nil {
		t.Fatal(err)
	}
	// The decision made after the upgrade is sealed; the one made before is
	// refused: declined, never consumed.
	if a, err := s.GetApproval(ctx, "run_a", "req_1"); err != nil || a.Unverified {
		t.Fatalf("decided after the migration: unverified %v, %v", a.Unverified, err)
	}
	if a, err := s.GetApproval(ctx, "run_a", "req_2"); err != nil || !a.Unverified {
		t.Fatalf("decided before the migration: unverified %v, %v", a.Unverified, err)
	}
	if _, err := s.Consume(ctx, "run_a", "req_2", "sha256:x"); !errors.Is(err, store.ErrUnverified) {
		t.Fatalf("Consume of a decision made before the migration: %v", err)
	}
	if _, _, err := s.ClaimRun(ctx, "run_a", store.Claim{Holder: "w", TTL: time.Minute, From: []store.RunStatus{store.RunPending}, To: store.RunResuming}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateRun(ctx, "run_b", store.RunUpdate{Approvals: []store.Approval{{ID: "req_3"}}, Events: []store.Event{{Type: "x"}}}); err != nil {
		t.Fatal(err)
	}
	p, err := s.ListApprovals(ctx, store.ApprovalFilter{AllTenants: true})
	if err != nil || len(p.Approvals) != 4 || p.Approvals[3].ID != "req_3" {
		t.Fatalf("approvals after the migration: %+v, %v", p.Approvals, err)
	}
	evs, err := s.ListEvents(ctx, store.EventFilter{})
	if err != nil || len(evs) != 2 || evs[0].Type != store.EventApprovalDecided {
		t.Fatalf("events after the migration: %+v, %v", evs, err)
	}
	s.Close()

	db = rawDB(t, path)
	var v, uv int
	if err := db.QueryRow(`SELECT version FROM schema_version`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&uv); err != nil {
		t.Fatal(err)
	}
	if v != sqlite.SchemaVersion || uv != sqlite.SchemaVersion {
		t.Fatalf("schema_version %d, user_version %d; want %d", v, uv, sqlite.SchemaVersion)
	}
	// Opening again migrates nothing and keeps everything.
	s2, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	r, err := s2.GetRun(ctx, "run_a")
	if err != nil || r.Status != store.RunResuming || r.Lease == nil || r.Lease.Holder != "w" {
		t.Fatalf("run after reopening: %+v, %v", r, err)
	}
}

func TestRefuseNewerSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tollgate.db")
	s, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db := rawDB(t, path)
	exec(t, db, `UPDATE schema_version SET version = ?`, sqlite.SchemaVersion+1)
	db.Close()
	_, err = sqlite.Open(ctx, path, nil)
	if err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("Open of a newer schema: %v", err)
	}
}

func TestEventDataRoundTrip(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "tollgate.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	data := json.RawMessage(`{"text":"caf\u00e9 \u2603","n":1.5e300}`)
	if _, err := s.AppendEvents(ctx, store.Event{Type: "x", Data: data}); err != nil {
		t.Fatal(err)
	}
	evs, err := s.ListEvents(ctx, store.EventFilter{})
	if err != nil || len(evs) != 1 || string(evs[0].Data) != string(data) {
		t.Fatalf("events %+v, %v", evs, err)
	}
}

// TestDecidedByTextStillReads: approvals decided before principals were typed
// keep who decided as text; a migrated file reads them as principals, and an
// administrator's answer kept then as one name gets its actor back.
func TestDecidedByTextStillReads(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tollgate.db")
	db := rawDB(t, path)
	exec(t, db, v1Schema)
	exec(t, db, `INSERT INTO runs (id, status, created_at, updated_at) VALUES ('run_1', 'pending', '2030-01-02T03:04:05Z', '2030-01-02T03:04:05Z')`)
	for i, by := range []string{"alice", "alice (by root with --admin)", "flag:--approve=yes", "person:bob", ""} {
		status := "approved"
		if by == "" {
			status = "pending"
		}
		exec(t, db, `INSERT INTO approvals (run_id, id, call_id, tool, digest, kind, prompt, request, status, decided_by, created_at, updated_at)
			VALUES ('run_1', ?, 'call_1', 'transfer_funds', 'sha256:x', 'approval', 'Allow?', '{"id":"r","kind":"approval","prompt":"Allow?"}', ?, ?, '2030-01-02T03:04:05Z', '2030-01-02T03:04:05Z')`,
			fmt.Sprintf("req_%d", i), status, by)
	}
	db.Close()

	s, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	type who struct{ By, Actor tool.Principal }
	var got []who
	for a, err := range store.AllApprovals(ctx, s, store.ApprovalFilter{RunID: "run_1"}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, who{a.DecidedBy, a.Actor})
	}
	person := func(n string) tool.Principal { return tool.Principal{Kind: tool.PrincipalPerson, Name: n} }
	want := []who{
		{By: person("alice")},
		{By: person("alice"), Actor: person("root")},
		{By: tool.Principal{Kind: tool.PrincipalFlag, Name: "--approve=yes"}},
		{By: person("bob")},
		{},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("principals read from text (-want +got):\n%s", d)
	}

	// A new decision keeps the principals' text forms in their columns.
	if _, err := s.Decide(ctx, "run_1", "req_4", store.Answer{Approve: true, By: person("carol"), Actor: person("root")}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	db = rawDB(t, path)
	var by, actor string
	if err := db.QueryRow(`SELECT decided_by, actor FROM approvals WHERE id = 'req_4'`).Scan(&by, &actor); err != nil {
		t.Fatal(err)
	}
	if by != "person:carol" || actor != "person:root" {
		t.Errorf("stored decided_by %q, actor %q; want person:carol, person:root", by, actor)
	}
}
