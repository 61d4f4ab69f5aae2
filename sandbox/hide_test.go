//go:build linux

package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/sandbox"
)

// A hidden file that does not exist when the command starts (a store's
// -journal, a logins directory made later) is hidden once it appears:
// the tree that holds it is granted entry by entry, so what appears in
// it later gets no right. A file that existed, and is not hidden, stays
// readable.
func TestHideMissingFile(t *testing.T) {
	s := newSandbox(t)
	ws, state := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(state, "notes.txt"), []byte("notes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	journal, logins := filepath.Join(state, "tollgate.db-journal"), filepath.Join(state, "mcp-oauth")
	p := sandbox.Policy{Mode: sandbox.Workspace, Workspace: ws, Read: []string{state}, Hide: []string{journal, logins}}
	go func() {
		// The files appear once the command runs.
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(filepath.Join(ws, "started")); err == nil {
				break
			}
		}
		_ = os.WriteFile(journal, []byte("journal-secret\n"), 0o600)
		_ = os.MkdirAll(logins, 0o700)
		_ = os.WriteFile(filepath.Join(logins, "srv.json"), []byte("token-secret\n"), 0o600)
		_ = os.WriteFile(filepath.Join(state, "ready"), nil, 0o600)
	}()
	script := ": > " + ws + "/started; n=0; while [ ! -e " + state + "/ready ] && [ $n -lt 1200 ]; do sleep 0.05; n=$((n+1)); done; " +
		"cat " + journal + " " + logins + "/srv.json " + state + "/notes.txt"
	_, out := run(t, s, p, ws, script)
	if strings.Contains(out, "secret") {
		t.Errorf("a hidden file made after the command started was read:\n%s", out)
	}
	if !strings.Contains(out, "notes\n") {
		t.Errorf("a file of the tree that is not hidden was not read:\n%s", out)
	}
}
