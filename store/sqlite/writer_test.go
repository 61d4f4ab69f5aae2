package sqlite

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/store"
)

// A write does not wait for a connection: with every read connection
// held by a reader (rows still open), a run is stored and its event
// appended at once, on the writes' own connection.
func TestWriteWhileReadersHoldEveryConnection(t *testing.T) {
	ctx := context.Background()
	s := openInternal(t)
	for range maxConns {
		rows, err := s.db.QueryContext(ctx, `SELECT seq FROM events`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second) // without a writer of its own, the write waits for ever
	defer cancel()
	run := store.Run{ID: "run_1", Status: store.RunPending, State: json.RawMessage(`{}`)}
	if _, err := s.CreateRun(wctx, store.CreateRunRequest{Run: run, Events: []store.Event{{Type: "run.started"}}}); err != nil {
		t.Fatalf("CreateRun while readers hold every read connection: %v", err)
	}
	if _, err := s.UpdateRun(wctx, "run_1", store.RunUpdate{Status: store.RunDone}); err != nil {
		t.Fatalf("UpdateRun while readers hold every read connection: %v", err)
	}
}
