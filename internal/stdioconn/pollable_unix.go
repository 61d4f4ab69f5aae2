//go:build unix

package stdioconn

import (
	"os"
	"syscall"
)

// Pollable returns a new descriptor for f's pipe or socket, in
// non-blocking mode, so that Go's poller reads it and closing it unblocks a
// pending Read; f itself stays open. ok is false for anything else (a
// terminal, a regular file, /dev/null), which a [Conn] cannot read: use the
// SDK's [mcp.IOTransport] there. The mode is the open file's, so f turns
// non-blocking too.
func Pollable(f *os.File) (_ *os.File, ok bool) {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return nil, false
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, false
	}
	nfd, dupErr := -1, error(nil)
	if err := rc.Control(func(fd uintptr) { nfd, dupErr = syscall.Dup(int(fd)) }); err != nil || dupErr != nil {
		return nil, false
	}
	syscall.CloseOnExec(nfd)
	if err := syscall.SetNonblock(nfd, true); err != nil {
		_ = syscall.Close(nfd)
		return nil, false
	}
	return os.NewFile(uintptr(nfd), f.Name()), true
}
