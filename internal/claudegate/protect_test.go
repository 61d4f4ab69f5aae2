package claudegate_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/internal/claudegate"
	"github.com/tollgate-dev/tollgate/tool"
)

// The files that govern the agent cannot be written by its file tools:
// the policy itself, a file under the state directory, the workspace's
// .claude settings; other files, reads, and calls without a path are
// left to the policies.
func TestProtectFiles(t *testing.T) {
	dir := t.TempDir()
	pol, state, ws := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "state"), filepath.Join(dir, "ws")
	az := claudegate.ProtectFiles(pol, state, filepath.Join(ws, ".claude"))
	for _, tc := range []struct {
		path     string
		readOnly bool
		want     approval.Effect
	}{
		{pol, false, approval.Deny},
		{filepath.Join(state, "sessions", "s1.json"), false, approval.Deny},
		{filepath.Join(ws, ".claude", "settings.json"), false, approval.Deny},
		{filepath.Join(ws, "sub", "..", ".claude", "settings.local.json"), false, approval.Deny},
		{"notes.txt", false, approval.Deny},
		{filepath.Join(ws, "notes.txt"), false, approval.Allow},
		{pol, true, approval.Allow},
		{filepath.Join(dir, "policy.yaml.bak"), false, approval.Allow},
	} {
		args, _ := json.Marshal(map[string]string{"path": tc.path})
		v, err := az.Authorize(context.Background(), approval.Call{Tool: "write", Args: args, Hints: &tool.Hints{ReadOnly: tc.readOnly}})
		if err != nil || v.Decision != tc.want {
			t.Errorf("%s (read-only %v): %s (%s), want %s", tc.path, tc.readOnly, v.Decision, v.Reason, tc.want)
		}
	}
	v, _ := az.Authorize(context.Background(), approval.Call{Tool: "bash", Args: json.RawMessage(`{"command":"ls"}`)})
	if v.Decision != approval.Allow || v.By != approval.Default {
		t.Errorf("a call without a path: %+v", v)
	}
}
