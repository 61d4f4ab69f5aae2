package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/sqlite"
	"github.com/tollgate-dev/tollgate/tool"
)

// An approval whose decision was written into the database, not made
// through tollgate, is no ground for a rule.
func TestPolicyRulesProposeRefusesUnverified(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	state := t.TempDir()
	path := filepath.Join(state, storeFile)
	s, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(map[string]any{"args": map[string]string{"command": "go test ./..."}})
	if _, err := s.CreateRun(ctx, store.CreateRunRequest{Run: store.Run{ID: "run_1", Status: store.RunPending}, Approvals: []store.Approval{{
		ID: "req_1", CallID: "c1", Tool: "bash", Digest: "sha256:x", Kind: tool.KindApproval, Prompt: "Allow?",
		Request: tool.Request{ID: "req_1", Kind: tool.KindApproval, Data: data},
	}}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE approvals SET status = 'approved', decided_by = 'person:mallory', mac = '' WHERE id = 'req_1'`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	code, out, errOut := apMain(t, "policy", "rules", "propose", "req_1", "--state-dir", state)
	if code == 0 || !strings.Contains(out+errOut, "no valid seal") {
		t.Fatalf("propose from an unverified approval: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = apMain(t, "policy", "rules", "list", "--state-dir", state)
	if code != 0 || !strings.Contains(out, "0 proposal(s)") {
		t.Fatalf("list: exit %d\n%s", code, out)
	}
}
