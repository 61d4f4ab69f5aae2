package builtin

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// notRegular is the refusal of a path that names something other than a
// regular file or a directory: a named pipe, a device or a socket. Opening
// one could block the call forever (a FIFO with no writer, a terminal) or
// read without end (/dev/zero), so the file tools never read or write them.
type notRegular struct {
	path string
	mode fs.FileMode
}

func (e *notRegular) Error() string {
	if e.mode.IsDir() {
		return e.path + " is not a regular file"
	}
	what := "not a regular file"
	switch t := e.mode.Type(); {
	case t&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case t&fs.ModeCharDevice != 0:
		what = "a character device"
	case t&fs.ModeDevice != 0:
		what = "a block device"
	case t&fs.ModeSocket != 0:
		what = "a socket"
	}
	return fmt.Sprintf("%s is %s; the file tools read and write regular files only", e.path, what)
}

// openRegular opens rel inside root for reading without blocking on a FIFO
// or a device (O_NONBLOCK, which changes nothing for a regular file), and
// returns it with its FileInfo when it is a regular file or a directory.
// Anything else is closed and refused with a *notRegular naming p, the path
// as the model wrote it.
func openRegular(root *os.Root, rel, p string) (*os.File, fs.FileInfo, error) {
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() && !fi.IsDir() {
		f.Close()
		return nil, nil, &notRegular{path: p, mode: fi.Mode()}
	}
	return f, fi, nil
}

// linkCount returns the number of hard links of the file fi describes (1
// when the platform does not say).
func linkCount(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// hardLinked is the refusal to write a file that has other names: the
// policy and the records judge a path, and a second name of the same file
// (possibly outside the workspace, or under a denied directory) would let a
// write through one path change what another path holds.
type hardLinked struct {
	path  string
	links uint64
}

func (e *hardLinked) Error() string {
	return fmt.Sprintf("refused: %s has %d hard links; write and edit do not change a file that has other names", e.path, e.links)
}
