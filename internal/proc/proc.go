// Package proc starts child processes in their own process group so that a
// timeout or a cancellation kills the whole tree (a shell and everything it
// started), and captures their output within a fixed bound.
//
// It is shared by the bash builtin, the declarative command hooks and the MCP
// stdio transport. Unix only (process groups via setpgid).
package proc

import (
	"errors"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// DefaultWaitDelay is how long [Prepare] lets Wait linger for the output pipes
// after the process group was killed, before it closes them itself (a
// grandchild that escaped the group could otherwise hold them open forever).
const DefaultWaitDelay = 2 * time.Second

// Prepare makes cmd start in a new process group, and makes the cancellation of
// the context given to exec.CommandContext kill the whole group with SIGKILL
// rather than only the direct child. It must be called before cmd.Start, on a
// command made by exec.CommandContext: it sets cmd.Cancel, with which Start
// refuses a command made by exec.Command. For such a command set
// SysProcAttr.Setpgid yourself and stop it with [SignalGroup] or [KillGroup].
func Prepare(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.Cancel = func() error {
		err := KillGroup(cmd)
		awaitGroupGone(cmd, DefaultWaitDelay)
		return err
	}
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = DefaultWaitDelay
	}
}

// awaitGroupGone waits, at most max, until no process of cmd's group is
// left. A sandboxed command's PID namespace has its init in the group: the
// kernel ends that init only once every process of its namespace has
// ended, so the cancellation (and Wait, which waits for it) returns only
// when a daemon the command left in its namespace is gone too.
func awaitGroupGone(cmd *exec.Cmd, max time.Duration) {
	if cmd.Process == nil {
		return
	}
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(-cmd.Process.Pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// PrepareSession is [Prepare] with a new session instead of only a new
// process group: the command has no controlling terminal, and its session
// ID, like its process group ID, is its PID.
func PrepareSession(cmd *exec.Cmd) {
	Prepare(cmd)
	cmd.SysProcAttr.Setpgid = false // setsid makes it a group leader; setpgid would then fail
	cmd.SysProcAttr.Setsid = true
}

// KillGroup sends SIGKILL to cmd's whole process group. It returns nil when the
// process was never started or the group is already gone.
func KillGroup(cmd *exec.Cmd) error { return SignalGroup(cmd, syscall.SIGKILL) }

// SignalGroup sends sig to cmd's whole process group (cmd must have been
// started after [Prepare]). A group that no longer exists is not an error.
func SignalGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	if cmd == nil || cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// LimitedBuffer is an io.Writer that keeps the first Limit bytes written to it
// and counts, but drops, the rest. It never returns an error, so a child that
// prints without end is drained and never blocks on a full pipe. It is safe for
// concurrent use (stdout and stderr may share one).
type LimitedBuffer struct {
	// Limit is the number of bytes kept; 0 keeps nothing.
	Limit int

	mu      sync.Mutex
	buf     []byte
	dropped int64
}

// NewLimitedBuffer returns a buffer that keeps at most limit bytes.
func NewLimitedBuffer(limit int) *LimitedBuffer { return &LimitedBuffer{Limit: limit} }

// Write implements io.Writer; it always reports len(p) bytes written.
func (b *LimitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	room := b.Limit - len(b.buf)
	if room > 0 {
		n := min(room, len(p))
		b.buf = append(b.buf, p[:n]...)
		b.dropped += int64(len(p) - n)
	} else {
		b.dropped += int64(len(p))
	}
	return len(p), nil
}

// Bytes returns a copy of what was kept.
func (b *LimitedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.buf...)
}

// String returns what was kept, as a string.
func (b *LimitedBuffer) String() string { return string(b.Bytes()) }

// Dropped returns how many bytes were written past the limit.
func (b *LimitedBuffer) Dropped() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped
}

// Truncated reports whether anything was dropped.
func (b *LimitedBuffer) Truncated() bool { return b.Dropped() > 0 }
