package proc

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestCancelKillsGrandchildren(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	ctx, cancel := context.WithCancel(context.Background())
	// The shell starts a background grandchild that would outlive a plain kill of sh.
	cmd := exec.CommandContext(ctx, "sh", "-c", "sleep 300 & echo $! > "+pidFile+"; wait")
	Prepare(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		b, err := os.ReadFile(pidFile)
		if err == nil && strings.TrimSpace(string(b)) != "" {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if pid == 0 {
		t.Fatal("grandchild never started")
	}
	cancel()
	_ = cmd.Wait()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if err := syscall.Kill(pid, 0); err != nil {
			return // gone
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("grandchild %d still alive after the group was cancelled", pid)
}

func TestLimitedBuffer(t *testing.T) {
	b := NewLimitedBuffer(5)
	n, err := b.Write([]byte("hello world"))
	if n != 11 || err != nil {
		t.Fatalf("Write = %d, %v; want 11, nil", n, err)
	}
	b.Write([]byte("!!"))
	if got := b.String(); got != "hello" {
		t.Errorf("kept %q, want %q", got, "hello")
	}
	if got := b.Dropped(); got != 8 {
		t.Errorf("dropped %d, want 8", got)
	}
	if !b.Truncated() {
		t.Error("Truncated() = false")
	}
}
