package nofollow

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/tollgate-dev/tollgate/internal/realpath"
)

// ErrLinkInRoot is returned (wrapped with the paths) by [OpenFileIn] for a
// path with a symbolic link in its part inside the root.
var ErrLinkInRoot = errors.New("a symbolic link in the part of the path inside the workspace")

// OpenFileIn opens path as [OpenFile] does and, when path lies inside the
// directory root (an agent's workspace, where its tools could have put
// links), also refuses a symbolic link in any of its components below root:
// a directory there that is a link could lead the write out of the
// workspace. root itself and the directories above it are followed (a
// symlinked /home is the user's). Both paths must be absolute; an empty
// root, or a path outside it, is opened as [OpenFile] opens it. On Linux
// the path is resolved from a descriptor of root by openat2(2) with
// RESOLVE_NO_SYMLINKS, or component by component with O_NOFOLLOW on kernels
// before 5.6. Errors wrap [ErrLinkInRoot] and name both paths.
func OpenFileIn(root, path string, flag int, perm os.FileMode) (*os.File, error) {
	root, rel, ok := locate(root, path)
	if !ok {
		return OpenFile(path, flag, perm)
	}
	f, err := openBelow(root, rel, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, perm)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s: %w %s; tollgate does not follow links there (a tool could have planted one); name the real path", path, ErrLinkInRoot, root)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return f, nil
}

// locate finds where path enters the workspace root, however either is
// spelled: the shortest leading part of path that is root, by name or once
// its links are resolved (links above the workspace, or the workspace named
// through one). It returns root's real path and the rest of path below it;
// false for a path that does not enter root.
func locate(root, path string) (string, string, bool) {
	if root == "" || !filepath.IsAbs(root) || !filepath.IsAbs(path) {
		return "", "", false
	}
	real := realpath.Resolve(filepath.Clean(root))
	if rel, ok := below(root, path); ok {
		return real, rel, true
	}
	clean := filepath.Clean(path)
	var prefixes []string
	for p := filepath.Dir(clean); p != filepath.Dir(p); p = filepath.Dir(p) {
		prefixes = append(prefixes, p)
	}
	for i := len(prefixes) - 1; i >= 0; i-- {
		if realpath.Resolve(prefixes[i]) == real {
			rel, ok := below(prefixes[i], clean)
			return real, rel, ok
		}
	}
	return "", "", false
}

// below returns path relative to root when it lies strictly inside it
// (lexically, both cleaned).
func below(root, path string) (string, bool) {
	if root == "" || !filepath.IsAbs(root) || !filepath.IsAbs(path) {
		return "", false
	}
	rel, err := filepath.Rel(filepath.Clean(root), filepath.Clean(path))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

// CheckDirIn reports an error wrapping [ErrLinkInRoot] when dir lies inside
// root and one of its components below root that exists is a symbolic link
// (for a directory tollgate is about to create or use by name, such as a
// state directory); components that do not exist yet are fine.
func CheckDirIn(root, dir string) error {
	rel, ok := below(root, dir)
	if !ok {
		return nil
	}
	cur := filepath.Clean(root)
	for _, c := range strings.Split(rel, string(filepath.Separator)) {
		cur = filepath.Join(cur, c)
		fi, err := os.Lstat(cur)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("%s: %w %s (%s); tollgate does not follow links there (a tool could have planted one); name the real path", dir, ErrLinkInRoot, root, cur)
		}
	}
	return nil
}

// Within reports whether path lies strictly inside the directory root,
// however either is spelled: by name, through links above root, or with
// root named through a link (see [OpenFileIn]); links inside root are not
// followed to decide it. Both paths must be absolute.
func Within(root, path string) bool {
	_, _, ok := locate(root, path)
	return ok
}
