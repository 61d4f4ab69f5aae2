package nofollow

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// walkOnly makes openBelow skip openat2, for tests of the fallback.
var walkOnly = false

// openBelow opens rel (relative, cleaned, no "..") below the directory root
// with flag and perm, following no symbolic link below root.
func openBelow(root, rel string, flag int, perm os.FileMode) (*os.File, error) {
	dir, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dir)
	if !walkOnly {
		fd, err := unix.Openat2(dir, rel, &unix.OpenHow{Flags: uint64(flag), Mode: uint64(perm.Perm()), Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH})
		if err == nil {
			return os.NewFile(uintptr(fd), filepath.Join(root, rel)), nil
		}
		if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EPERM) {
			return nil, err
		}
		// No openat2 (Linux before 5.6, or a seccomp filter that refuses
		// it): component by component.
	}
	parts := strings.Split(rel, string(filepath.Separator))
	cur := dir
	for _, c := range parts[:len(parts)-1] {
		next, err := unix.Openat(cur, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOTDIR) {
			// A link to a directory is not a directory without following.
			var st unix.Stat_t
			if unix.Fstatat(cur, c, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				err = unix.ELOOP
			}
		}
		if cur != dir {
			unix.Close(cur)
		}
		if err != nil {
			return nil, err
		}
		cur = next
	}
	fd, err := unix.Openat(cur, parts[len(parts)-1], flag, uint32(perm.Perm()))
	if cur != dir {
		unix.Close(cur)
	}
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), filepath.Join(root, rel)), nil
}
