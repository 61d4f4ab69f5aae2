package builtin_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A FIFO in the workspace blocked read and grep forever (opening it waits for
// a writer). The file tools now refuse it at once with a clear error; grep
// over a directory skips it; write and edit refuse it too.
func TestFIFOIsRefusedWithoutBlocking(t *testing.T) {
	root, tools := workspace(t, map[string]string{"a.txt": "needle\n"}, nil)
	if err := syscall.Mkfifo(filepath.Join(root, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The guard only turns a hang into a failure; the calls return at once.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, tc := range []struct {
			tool string
			args map[string]any
			want string
		}{
			{"read", map[string]any{"path": "pipe"}, "pipe is a named pipe (FIFO); the file tools read and write regular files only"},
			{"grep", map[string]any{"pattern": "x", "path": "pipe"}, "pipe is a named pipe (FIFO)"},
			{"edit", map[string]any{"path": "pipe", "oldString": "a", "newString": "b"}, "pipe is a named pipe (FIFO)"},
			{"write", map[string]any{"path": "pipe", "content": "x"}, "pipe is a named pipe (FIFO)"},
		} {
			r := callCtx(t, ctx, tools, tc.tool, tc.args)
			if !r.IsError || !strings.Contains(r.Output, tc.want) {
				t.Errorf("%s: %+v, want an error containing %q", tc.tool, r, tc.want)
			}
		}
		// A directory search skips the FIFO and finds the rest.
		r := callCtx(t, ctx, tools, "grep", map[string]any{"pattern": "needle"})
		if r.IsError || !strings.Contains(r.Output, "a.txt:1: needle") {
			t.Errorf("grep over the workspace: %+v", r)
		}
	}()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("a file tool blocked on a FIFO")
	}
}

// A file with a second name (a hard link, perhaps to a file outside the
// workspace or under a denied directory) is not written through.
func TestWriteRefusesHardLinkedFile(t *testing.T) {
	root, tools := workspace(t, map[string]string{"secret/key.txt": "k\n"}, nil)
	if err := os.Link(filepath.Join(root, "secret", "key.txt"), filepath.Join(root, "pub.txt")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"write", map[string]any{"path": "pub.txt", "content": "pwned\n"}},
		{"edit", map[string]any{"path": "pub.txt", "oldString": "k", "newString": "pwned"}},
	} {
		r := call(t, tools, tc.tool, tc.args)
		if !r.IsError || !strings.Contains(r.Output, "pub.txt has 2 hard links") {
			t.Errorf("%s: %+v, want a refusal", tc.tool, r)
		}
	}
	if got := readFile(t, filepath.Join(root, "pub.txt")); got != "k\n" {
		t.Errorf("pub.txt = %q, want it unchanged", got)
	}
}
