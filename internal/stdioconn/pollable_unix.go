//go:build unix

package stdioconn

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Pollable returns a new descriptor for f's pipe or socket, in
// non-blocking mode, so that Go's poller reads it and closing it unblocks a
// pending Read; f itself stays open. ok is false for anything else (a
// terminal, a regular file, /dev/null), which a [Conn] cannot read: use the
// SDK's [mcp.IOTransport] there. The mode is the open file's, so f turns
// non-blocking too, and with it the file of every process that shares it
// (the one that started this one, say): closer closes in and puts the mode
// back as it was.
func Pollable(f *os.File) (in *os.File, closer interface{ Close() error }, ok bool) {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return nil, nil, false
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, nil, false
	}
	// Close-on-exec from the start: a child started meanwhile (an MCP
	// server) must not inherit the copy.
	nfd, dupErr := -1, error(nil)
	if err := rc.Control(func(fd uintptr) { nfd, dupErr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }); err != nil || dupErr != nil {
		return nil, nil, false
	}
	was, err := nonblocking(nfd)
	if err == nil {
		err = syscall.SetNonblock(nfd, true)
	}
	if err != nil {
		_ = syscall.Close(nfd)
		return nil, nil, false
	}
	in = os.NewFile(uintptr(nfd), f.Name())
	return in, restorer{in, f, was}, true
}

// restorer closes in, then puts f's mode back to non-blocking or not (was).
type restorer struct {
	in  *os.File
	f   *os.File
	was bool
}

func (r restorer) Close() error {
	err := r.in.Close()
	if r.was {
		return err
	}
	rc, rerr := r.f.SyscallConn()
	if rerr == nil {
		rerr = rc.Control(func(fd uintptr) { rerr = syscall.SetNonblock(int(fd), false) })
	}
	if errors.Is(rerr, os.ErrClosed) {
		rerr = nil // f was closed first: nothing left to put back
	}
	return errors.Join(err, rerr)
}

// nonblocking reports whether fd's open file is in non-blocking mode.
func nonblocking(fd int) (bool, error) {
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return false, err
	}
	return flags&unix.O_NONBLOCK != 0, nil
}
