package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/store/sqlite"
)

// A database path that is a symbolic link (planted in a state directory
// inside the workspace) is refused: the file it points to is neither
// created, narrowed nor overwritten.
func TestOpenRefusesASymbolicLink(t *testing.T) {
	state, home := t.TempDir(), t.TempDir()
	rc := filepath.Join(home, ".bashrc")
	if err := os.WriteFile(rc, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, to := range map[string]string{"tollgate.db": rc, "other.db": filepath.Join(home, "new")} {
		link := filepath.Join(state, name)
		if err := os.Symlink(to, link); err != nil {
			t.Fatal(err)
		}
		if s, err := sqlite.Open(context.Background(), link, nil); err == nil {
			s.Close()
			t.Errorf("%s: opened through the link", name)
		} else if !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	if fi, err := os.Stat(rc); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("the link's target changed mode: %v %v", fi.Mode(), err)
	}
	if b, _ := os.ReadFile(rc); string(b) != "mine\n" {
		t.Errorf("the link's target changed: %q", b)
	}
	if _, err := os.Lstat(filepath.Join(home, "new")); err == nil {
		t.Error("the dangling link's target was created")
	}
}
