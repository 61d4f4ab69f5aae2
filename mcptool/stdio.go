package mcptool

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/internal/proc"
	"github.com/tollgate-dev/tollgate/internal/stdioconn"
)

// defaultShutdownGrace is the default of [Options].ShutdownGrace.
const defaultShutdownGrace = 2 * time.Second

// stderrKeep is how many bytes of a stdio server's stderr are kept (the last ones).
const stderrKeep = 4096

// stdioTransport starts a stdio MCP server in its own process group and speaks
// newline-delimited JSON to it (MCP specification 2025-06-18, "Transports:
// stdio"). It does what mcp.CommandTransport does, and in addition signals the
// whole process group, so that a server's own children go with it, and owns
// the pipes itself, so that a grandchild holding one open cannot stall Close.
type stdioTransport struct {
	cmd    *exec.Cmd
	grace  time.Duration
	logger *slog.Logger
	server string
	stderr *tailBuffer
	maxMsg int    // see noiseFilter
	child  *child // set by Connect
}

// Connect starts the command. The process is not tied to ctx: it lives until
// the connection is closed.
func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, err
	}
	t.cmd.Stdin, t.cmd.Stdout, t.cmd.Stderr = inR, outW, errW
	// A process group of its own, so that signals reach the server's
	// children too. (proc.Prepare would also set cmd.Cancel, which only a
	// command made with exec.CommandContext may have; the server's life is not
	// tied to a context.)
	if t.cmd.SysProcAttr == nil {
		t.cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	t.cmd.SysProcAttr.Setpgid = true
	if err := t.cmd.Start(); err != nil {
		closeAll(inR, inW, outR, outW, errR, errW)
		return nil, err
	}
	// The child has its copies; ours of the child's ends must go, so that EOF
	// arrives when the child (and its children) are gone.
	closeAll(inR, outW, errW)
	c := &child{
		cmd: t.cmd, stdin: inW, stdout: outR, stderrR: errR, grace: t.grace,
		logger: t.logger, server: t.server,
		exited: make(chan struct{}), stderrDone: make(chan struct{}),
	}
	go func() {
		defer close(c.stderrDone)
		_, _ = io.Copy(t.stderr, errR)
	}()
	go func() {
		c.waitErr = t.cmd.Wait()
		close(c.exited)
	}()
	t.child = c
	// Lines that are not JSON-RPC (a banner, log lines) are dropped and
	// logged rather than breaking the connection (see noiseFilter). The
	// pipe is the poller's, so closing it (c.Close does, last) ends a read.
	// The filter bounds messages; what it hands on (a line of up to
	// noiseCheckLen, a replacement of up to cutResultBytes of text) may be
	// over maxMsg, so the connection keeps the SDK's limit.
	out := newNoiseFilter(outR, t.logger, t.server, t.maxMsg)
	return stdioconn.New(out, c, c, 0), nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// child is the running server process. Its Write feeds the server's stdin; its
// Close shuts the server down (and is what closing the MCP connection calls).
type child struct {
	cmd        *exec.Cmd
	stdin      *os.File
	stdout     *os.File
	stderrR    *os.File
	grace      time.Duration
	logger     *slog.Logger
	server     string
	exited     chan struct{} // closed when Wait has returned
	waitErr    error
	stderrDone chan struct{}

	closeOnce sync.Once
	closeErr  error
}

func (c *child) Write(p []byte) (int, error) { return c.stdin.Write(p) }

// Close follows the MCP specification's stdio shutdown ("Lifecycle:
// Shutdown"): close the server's stdin and wait; then SIGTERM and wait; then
// SIGKILL; each wait lasts at most the grace period, so Close returns within
// about three grace periods. SIGTERM and SIGKILL go to the server's whole
// process group, and the group is sent SIGKILL at the end in every case, so no
// child of the server that stayed in its group survives it. (A child that
// moved itself to another session or group is beyond reach.)
func (c *child) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.shutdown() })
	return c.closeErr
}

// killWait is the least time Close waits for a server to exit after SIGKILL.
const killWait = 2 * time.Second

func (c *child) shutdown() error {
	_ = c.stdin.Close()
	wait := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-c.exited:
			return true
		case <-t.C:
			return false
		}
	}
	var err error
	switch {
	case wait(c.grace):
	default:
		c.logger.Warn("mcp server did not exit after its stdin was closed; sending SIGTERM", "server", c.server, "grace", c.grace)
		_ = proc.SignalGroup(c.cmd, syscall.SIGTERM)
		if wait(c.grace) {
			break
		}
		c.logger.Warn("mcp server did not exit after SIGTERM; sending SIGKILL", "server", c.server, "grace", c.grace)
		_ = proc.KillGroup(c.cmd)
		// SIGKILL cannot be ignored: only a loaded machine delays the exit,
		// so wait at least killWait for it, whatever the grace.
		if !wait(max(c.grace, killWait)) {
			err = fmt.Errorf("mcp server %q (pid %d) did not exit after SIGKILL", c.server, c.cmd.Process.Pid)
		}
	}
	// Whatever is left of the group (children of a server that exited on its
	// own, say) goes now.
	_ = proc.KillGroup(c.cmd)
	// Let the stderr copier drain what the group wrote, but not for long: a
	// process outside the group may still hold the pipe.
	t := time.NewTimer(100 * time.Millisecond)
	select {
	case <-c.stderrDone:
	case <-t.C:
	}
	t.Stop()
	closeAll(c.stdout, c.stderrR)
	return err
}

// tailBuffer keeps the last n bytes written to it. It is safe for concurrent use.
type tailBuffer struct {
	n   int
	mu  sync.Mutex
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.n {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.n:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
