// Package nofollow opens the files tollgate writes on a path that a tool
// could have planted (a log file, a database in the workspace) without
// following a symbolic link at its end: a link there could lead the write
// out of the workspace, to a file of the user's (open(2), O_NOFOLLOW).
package nofollow

import (
	"fmt"
	"os"
	"syscall"
)

// OpenFile opens path as os.OpenFile does with flag and perm, but refuses
// a path whose last element is a symbolic link, and anything that is not a
// regular file (a FIFO or a device, opened without blocking, is refused
// before any read or write). The links of the directories above it are
// followed as usual. Errors name the path and say what it is.
func OpenFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSymlink != 0 {
			return nil, fmt.Errorf("%s is a symbolic link: tollgate does not write through one (it could lead outside the workspace); name the file it points to", path)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%s is not a regular file (%s)", path, fi.Mode().Type())
		}
	}
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, perm)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return f, nil
}
