package nofollow_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/nofollow"
)

// A link at the end of the path is refused, whether its target exists or
// not, and the target is neither created nor written; a FIFO is refused
// without blocking; a regular file opens.
func TestOpenFile(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "bashrc")
	if err := os.WriteFile(target, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const flag = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	for name, to := range map[string]string{"existing": target, "dangling": filepath.Join(outside, "new")} {
		link := filepath.Join(dir, name)
		if err := os.Symlink(to, link); err != nil {
			t.Fatal(err)
		}
		if f, err := nofollow.OpenFile(link, flag, 0o600); err == nil || !strings.Contains(err.Error(), "symbolic link") {
			f.Close()
			t.Errorf("%s link: err %v", name, err)
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "mine\n" {
		t.Errorf("the target changed: %q", b)
	}
	if _, err := os.Lstat(filepath.Join(outside, "new")); err == nil {
		t.Error("the dangling link's target was created")
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := nofollow.OpenFile(fifo, flag, 0o600); err == nil {
		t.Error("a FIFO was opened")
	}
	f, err := nofollow.OpenFile(filepath.Join(dir, "log"), flag, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}
