package builtin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// errNoFdPath says the system cannot name an open file's path.
var errNoFdPath = errors.New("the system does not name open files")

// fdPath returns the absolute path of the file f is open on, as the kernel
// names the descriptor (readlink /proc/self/fd/N, proc(5)): the file that
// was opened, whatever its path leads to now; for a file removed since, its
// last path. A descriptor /proc cannot name by a path is an error; without
// /proc (not mounted) it is errNoFdPath, and the caller resolves the path.
func fdPath(f *os.File) (string, error) {
	sc, err := f.SyscallConn()
	if err != nil {
		return "", err
	}
	var p string
	var rerr error
	if err := sc.Control(func(fd uintptr) {
		p, rerr = os.Readlink("/proc/self/fd/" + strconv.FormatUint(uint64(fd), 10))
	}); err != nil {
		return "", err
	}
	if rerr != nil {
		if _, err := os.Stat("/proc/self/fd"); err != nil {
			return "", errNoFdPath // no /proc here: resolve the path instead
		}
		return "", fmt.Errorf("naming the opened file: %w", rerr)
	}
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("the opened file has no path (%q)", p)
	}
	// A file removed (or replaced by a rename) since it was opened is
	// named by its last path and this suffix; the directory part is its
	// real one all the same.
	return strings.TrimSuffix(p, " (deleted)"), nil
}
