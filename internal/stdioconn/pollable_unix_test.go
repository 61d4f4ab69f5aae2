//go:build unix

package stdioconn_test

import (
	"os"
	"syscall"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/stdioconn"
)

// nonblocking reports whether f's open file is in non-blocking mode.
func nonblocking(t *testing.T, f *os.File) bool {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags uintptr
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		flags, _, errno = syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
	}); err != nil || errno != 0 {
		t.Fatalf("F_GETFL: %v %v", err, errno)
	}
	return flags&syscall.O_NONBLOCK != 0
}

// The mode of standard input is its open file's, which the process that
// started this one shares: closing the connection puts it back as it was,
// so that whoever reads the pipe next does not meet EAGAIN.
func TestPollableCloseRestoresTheMode(t *testing.T) {
	for _, was := range []bool{false, true} {
		r, w, err := os.Pipe() // non-blocking, the poller's
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		defer w.Close()
		rc, _ := r.SyscallConn()
		_ = rc.Control(func(fd uintptr) { _ = syscall.SetNonblock(int(fd), was) })
		in, closer, ok := stdioconn.Pollable(r)
		if !ok || !nonblocking(t, in) {
			t.Fatalf("a pipe: pollable %v", ok)
		}
		if err := closer.Close(); err != nil {
			t.Fatal(err)
		}
		if got := nonblocking(t, r); got != was {
			t.Errorf("non-blocking %v after Close, was %v before", got, was)
		}
	}
}
