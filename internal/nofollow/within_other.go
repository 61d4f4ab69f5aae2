//go:build !linux

package nofollow

import (
	"os"
	"path/filepath"
)

// openBelow opens rel below root after checking, by name, that none of its
// directories below root is a symbolic link (no openat2 here: a link made
// between the check and the open is followed).
func openBelow(root, rel string, flag int, perm os.FileMode) (*os.File, error) {
	path := filepath.Join(root, rel)
	if err := CheckDirIn(root, filepath.Dir(path)); err != nil {
		return nil, err
	}
	return os.OpenFile(path, flag, perm)
}
