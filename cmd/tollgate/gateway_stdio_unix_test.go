//go:build unix

package main

import (
	"io"
	"os"
	"syscall"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/stdioconn"
)

// TestStdioTransportSharedSocket: a client that hands the gateway one
// socket as both standard input and output (socat's EXEC, inetd, a systemd
// socket unit) shares one open file between them, whose mode is the
// descriptors' both. A write of a response larger than the socket's buffer
// must wait for the client to read, not fail with EAGAIN.
func TestStdioTransportSharedSocket(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	out, err := syscall.Dup(fds[0])
	if err != nil {
		t.Fatal(err)
	}
	stdin, stdout := os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(out), "stdout")
	peer := os.NewFile(uintptr(fds[1]), "client")
	defer func() { stdin.Close(); stdout.Close(); peer.Close() }()
	tr := stdioTransport(&cliEnv{stdin: stdin, stdout: stdout})
	if st, ok := tr.(stdioconn.Transport); ok {
		defer st.Conn.Close()
	}
	const size = 4 << 20
	errc := make(chan error, 1)
	go func() {
		_, err := stdout.Write(make([]byte, size))
		_ = syscall.Shutdown(out, syscall.SHUT_WR) // the client's read ends
		errc <- err
	}()
	n, rerr := io.Copy(io.Discard, peer)
	if err := <-errc; err != nil || rerr != nil || n != size {
		t.Fatalf("writing to standard output: %v; the client read %d bytes of %d (%v)", err, n, size, rerr)
	}
}
