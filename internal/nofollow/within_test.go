package nofollow_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/nofollow"
)

// A link in any directory of the path below the workspace is refused, with
// openat2 and with the component-by-component fallback, and nothing is
// created where it leads; links above the workspace, and paths outside it,
// are followed as before.
func TestOpenFileIn(t *testing.T) {
	for _, walk := range []bool{false, true} {
		name := "openat2"
		if walk {
			name = "walk"
		}
		t.Run(name, func(t *testing.T) {
			nofollow.SetWalkOnly(walk)
			defer nofollow.SetWalkOnly(false)
			testOpenFileIn(t)
		})
	}
}

func testOpenFileIn(t *testing.T) {
	top, outside := t.TempDir(), t.TempDir()
	real := filepath.Join(top, "real")
	ws := filepath.Join(real, "ws")
	for _, d := range []string{filepath.Join(ws, "a"), filepath.Join(outside, "d")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	link := func(to, at string) {
		if err := os.Symlink(to, at); err != nil {
			t.Fatal(err)
		}
	}
	link(outside, filepath.Join(ws, "logs"))                      // ws/logs -> outside
	link(outside, filepath.Join(ws, "a", "b"))                    // ws/a/b -> outside
	link(filepath.Join(outside, "f"), filepath.Join(ws, "final")) // ws/final -> outside/f
	link(real, filepath.Join(top, "home"))                        // top/home -> real, above the workspace
	const flag = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	for _, p := range []string{"logs/run.log", "a/b/run.log", "a/b/d/run.log", "final"} {
		f, err := nofollow.OpenFileIn(ws, filepath.Join(ws, p), flag, 0o600)
		if err == nil {
			f.Close()
			t.Errorf("%s: opened through a link in the workspace", p)
			continue
		}
		if p != "final" && !errors.Is(err, nofollow.ErrLinkInRoot) {
			t.Errorf("%s: %v", p, err)
		}
	}
	for _, p := range []string{"run.log", "f", "d/run.log"} {
		if _, err := os.Lstat(filepath.Join(outside, p)); err == nil {
			t.Errorf("%s was created outside the workspace", p)
		}
	}
	// Links above the workspace and outside it are the user's.
	for root, p := range map[string]string{
		filepath.Join(top, "home", "ws"): filepath.Join(top, "home", "ws", "a", "ok.log"),
		ws:                               filepath.Join(top, "home", "elsewhere.log"),
		"":                               filepath.Join(ws, "logs", "no-root.log"),
	} {
		f, err := nofollow.OpenFileIn(root, p, flag, 0o600)
		if err != nil {
			t.Errorf("root %q, %s: %v", root, p, err)
			continue
		}
		f.Close()
	}
	fifo := filepath.Join(ws, "a", "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if f, err := nofollow.OpenFileIn(ws, fifo, flag, 0o600); err == nil {
		f.Close()
		t.Error("a FIFO was opened")
	}
}
