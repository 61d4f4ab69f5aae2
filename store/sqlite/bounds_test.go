package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/bounded"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/sqlite"
)

// A database file is written by other processes: a run's state, an
// approval's request or data and an event's data nested past the limit are
// refused before they are decoded, with an error that names the record.
func TestStoredDocumentsAreBounded(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tollgate.db")
	s, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CreateRun(ctx, store.CreateRunRequest{
		Run:       store.Run{ID: "run_1", Status: store.RunPending, State: json.RawMessage(`{}`)},
		Approvals: []store.Approval{{ID: "req_1", Digest: "d", Data: json.RawMessage(`{}`)}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendEvents(ctx, store.Event{RunID: "run_1", Type: "x", Data: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	deep := strings.Repeat("[", sqlite.MaxStoredDepth+1) + strings.Repeat("]", sqlite.MaxStoredDepth+1)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tamper := func(q string) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, deep); err != nil {
			t.Fatal(err)
		}
	}
	check := func(what, want string, err error) {
		t.Helper()
		if !bounded.IsLimit(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v; want a limit error naming %q", what, err, want)
		}
	}

	tamper(`UPDATE runs SET state = ?`)
	_, err = s.GetRun(ctx, "run_1")
	check("GetRun", "run run_1: state", err)
	_, err = s.ListRuns(ctx, store.RunFilter{})
	check("ListRuns", "run run_1: state", err)

	tamper(`UPDATE approvals SET request = ?`)
	_, err = s.GetApproval(ctx, "run_1", "req_1")
	check("GetApproval", "approval req_1 of run run_1: request", err)

	tamper(`UPDATE approvals SET data = ?, request = '{}'`)
	_, err = s.GetApproval(ctx, "run_1", "req_1")
	check("GetApproval", "approval req_1 of run run_1: data", err)

	tamper(`UPDATE events SET data = ?`)
	_, err = s.ListEvents(ctx, store.EventFilter{RunID: "run_1"})
	check("ListEvents", "data", err)
}

// An update that replaces a run's state and result neither reads nor
// checks the documents it replaces, in its write transaction: a stored
// state past the limits is replaced, and the run reads again.
func TestUpdateReplacesWithoutReading(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tollgate.db")
	s, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CreateRun(ctx, store.CreateRunRequest{Run: store.Run{ID: "run_1", Status: store.RunRunning, State: json.RawMessage(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	deep := strings.Repeat("[", sqlite.MaxStoredDepth+1) + strings.Repeat("]", sqlite.MaxStoredDepth+1)
	if _, err := db.ExecContext(ctx, `UPDATE runs SET state = ?, result = ?`, deep, deep); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateRun(ctx, "run_1", store.RunUpdate{Status: store.RunPending}); !bounded.IsLimit(err) {
		t.Fatalf("an update that keeps the stored state: err = %v, want a limit error", err)
	}
	got, err := s.UpdateRun(ctx, "run_1", store.RunUpdate{State: json.RawMessage(`{"turn":2}`), Result: json.RawMessage(`{"status":"done"}`)})
	if err != nil {
		t.Fatalf("an update that replaces the state and the result: %v", err)
	}
	if string(got.State) != `{"turn":2}` || string(got.Result) != `{"status":"done"}` {
		t.Fatalf("updated run: state %s, result %s", got.State, got.Result)
	}
	if r, err := s.GetRun(ctx, "run_1"); err != nil || string(r.State) != `{"turn":2}` {
		t.Fatalf("GetRun after the update: %s, %v", r.State, err)
	}
}
