package sandbox_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/sandbox"
)

// RemoveSealed leaves a sealed directory in place while a command that
// seals it runs (so that the command, whose read-only mount an rmdir from
// outside would detach, still cannot plant a settings file in it), and
// removes it, empty, once the command has ended.
func TestRemoveSealedWaitsForTheCommand(t *testing.T) {
	s := newSandbox(t)
	if !s.Status().Namespaces {
		t.Skip("no mount namespaces here: nothing is sealed (documented)")
	}
	ws := t.TempDir()
	claude := filepath.Join(ws, ".claude")
	p := sandbox.Policy{Mode: sandbox.Workspace, Workspace: ws, Seal: []string{claude}}
	// The command says it runs, waits for the test's word, then tries to
	// plant Claude Code settings.
	cmd := exec.Command("sh", "-c", "touch started; while [ ! -e go ]; do sleep 0.01; done; mkdir -p .claude; echo '{}' > .claude/settings.json; echo end")
	cmd.Dir = ws
	if _, err := s.Wrap(cmd, p); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	for !exists(filepath.Join(ws, "started")) {
		select {
		case err := <-waited:
			t.Fatalf("the command ended before it started: %v\n%s", err, out.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if removed, err := sandbox.RemoveSealed(claude); removed || err != nil || !isDir(claude) {
		t.Errorf("removed while a command sealing it runs: %t, %v", removed, err)
	}
	if err := os.WriteFile(filepath.Join(ws, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	<-waited
	if exists(filepath.Join(claude, "settings.json")) {
		t.Fatalf("the command planted settings in the sealed directory:\n%s", out.String())
	}
	if removed, err := sandbox.RemoveSealed(claude); !removed || err != nil || exists(claude) {
		t.Errorf("after the command: removed %t, %v; still there: %t", removed, err, exists(claude))
	}
}

// RemoveSealed removes only an empty directory, and none while a host
// holds it (HoldSealed); a file, a link or a directory with files stays.
func TestRemoveSealedOnlyAnEmptyUnheldDirectory(t *testing.T) {
	ws := t.TempDir()
	claude := filepath.Join(ws, ".claude")
	if err := os.Mkdir(claude, 0o755); err != nil {
		t.Fatal(err)
	}
	release, err := sandbox.HoldSealed(claude)
	if err != nil {
		t.Fatal(err)
	}
	if removed, err := sandbox.RemoveSealed(claude); removed || err != nil || !isDir(claude) {
		t.Errorf("removed while held: %t, %v", removed, err)
	}
	release()
	if err := os.WriteFile(filepath.Join(claude, "settings.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if removed, err := sandbox.RemoveSealed(claude); removed || err != nil || !exists(filepath.Join(claude, "settings.json")) {
		t.Errorf("a directory with a file: removed %t, %v", removed, err)
	}
	if err := os.RemoveAll(claude); err != nil {
		t.Fatal(err)
	}
	target := t.TempDir()
	if err := os.Symlink(target, claude); err != nil {
		t.Fatal(err)
	}
	if removed, err := sandbox.RemoveSealed(claude); removed || err != nil || !isDir(target) {
		t.Errorf("a link: removed %t, %v", removed, err)
	}
	if _, err := os.Lstat(claude); err != nil {
		t.Errorf("the link went: %v", err)
	}
	if removed, err := sandbox.RemoveSealed(filepath.Join(ws, "missing", ".claude")); removed || err != nil {
		t.Errorf("a missing parent: removed %t, %v", removed, err)
	}
	if err := os.Remove(claude); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(claude, 0o755); err != nil {
		t.Fatal(err)
	}
	if removed, err := sandbox.RemoveSealed(claude); !removed || err != nil || exists(claude) {
		t.Errorf("an empty, unheld directory: removed %t, %v", removed, err)
	}
}

func isDir(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.IsDir()
}

// RemoveSealed waits a moment for a hold that is let go as it is called (a
// command's helper exits a moment after the command; a process that forked
// while it held the lock keeps it until its child execs): the directory is
// removed, not left behind.
func TestRemoveSealedWaitsForAHoldLetGo(t *testing.T) {
	claude := filepath.Join(t.TempDir(), ".claude")
	if err := os.Mkdir(claude, 0o755); err != nil {
		t.Fatal(err)
	}
	release, err := sandbox.HoldSealed(claude)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		release()
	}()
	if removed, err := sandbox.RemoveSealed(claude); !removed || err != nil || exists(claude) {
		t.Errorf("a hold let go while removing: removed %t, %v", removed, err)
	}
}
