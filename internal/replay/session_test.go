package replay_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/replay"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// A run that keeps its records in its events only, as a Claude Code or
// Codex session's run does (tool.finished events, no state or result), is
// replayed from them; the other event types and another tenant's session
// are not read.
func TestCallsOfASessionRun(t *testing.T) {
	ctx := context.Background()
	s := memory.New(nil)
	session := func(id, tenant string, recs ...gate.Record) {
		t.Helper()
		evs := []store.Event{{Type: "run.started", Data: json.RawMessage(`{"agent":"claude-code"}`)}}
		for _, r := range recs {
			d := r.Decision
			b, _ := json.Marshal(map[string]any{"kind": "decision", "decision": d})
			evs = append(evs, store.Event{Type: "tool.decided", Data: b})
			b, _ = json.Marshal(map[string]any{"kind": "tool_result", "record": r})
			evs = append(evs, store.Event{Type: "tool.finished", Data: b})
		}
		if _, err := s.CreateRun(ctx, store.CreateRunRequest{Run: store.Run{ID: id, Tenant: tenant, Status: store.RunRunning,
			Config: json.RawMessage(`{"agent":"claude-code","source":"claude-code","session":"s1"}`)}, Events: evs}); err != nil {
			t.Fatal(err)
		}
	}
	session("cc_1", "acme",
		rec("t1", "bash", `{"command":"go test ./..."}`, gate.OutcomeApproved, askBash, alice),
		rec("t2", "bash", `{"command":"rm -rf build"}`, gate.OutcomeDeclined, askBash, aliceNo))
	session("cc_2", "globex", rec("t1", "bash", `{"command":"go vet"}`, gate.OutcomeApproved, askBash, alice))
	calls, err := replay.Calls(ctx, s, replay.Options{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || calls[0].RunID != "cc_1" || calls[0].CallID != "t1" || calls[1].CallID != "t2" ||
		calls[1].Outcome != "declined" || calls[0].WasBy != "rule:ask-bash" {
		t.Fatalf("calls %+v", calls)
	}
	r := replay.Replay(candidatePolicy(t), replay.Seq(calls))
	// The candidate asks about bash only when it deletes: the go test's
	// approval is saved, the rm is asked about as before.
	if r.Calls != 2 || r.Runs != 1 || r.Unchanged != 1 || r.ApprovalsSaved != 1 || r.SavedDeclined != 0 {
		t.Fatalf("replay %+v", r)
	}
}
