package builtin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// workspace is the root every builtin is confined to.
type workspace struct {
	abs  string // the root as given, made absolute
	real string // abs with its symbolic links resolved
}

// refusal is a path that leaves the workspace; its text is what the model sees.
type refusal struct{ path string }

func (r *refusal) Error() string {
	return fmt.Sprintf("refused: path %q is outside the workspace", r.path)
}

// rel maps a path given by the model to a clean, local path relative to the
// root ("." for the root itself). It refuses, lexically, paths that leave the
// root; symbolic links are checked later by os.Root.
func (w *workspace) rel(p string) (string, error) {
	if p == "" {
		return "", errors.New("path must not be empty")
	}
	c := filepath.Clean(p)
	if !filepath.IsAbs(c) {
		if !filepath.IsLocal(c) {
			return "", &refusal{p}
		}
		return c, nil
	}
	for _, base := range []string{w.abs, w.real} {
		if r, err := filepath.Rel(base, c); err == nil && filepath.IsLocal(r) {
			return r, nil
		}
	}
	return "", &refusal{p}
}

// open opens the workspace root for one call; the caller closes it.
func (w *workspace) open() (*os.Root, error) {
	r, err := os.OpenRoot(w.real)
	if err != nil {
		return nil, fmt.Errorf("workspace root unavailable: %w", err)
	}
	return r, nil
}

// errPathEscapesText is the text of the os package's unexported error for a
// path that leaves an os.Root (through "..", an absolute or an outward
// symbolic link). TestEscapeText pins it.
const errPathEscapesText = "path escapes from parent"

// escapes reports whether err is os.Root's refusal of a path leaving the root.
func escapes(err error) bool {
	for err != nil {
		if err.Error() == errPathEscapesText {
			return true
		}
		err = errors.Unwrap(err)
	}
	return false
}

// describe turns an error from an os.Root operation on path p (as the model
// wrote it) into the text the model sees.
func describe(p string, err error) string {
	var ref *refusal
	var nr *notRegular
	var hl *hardLinked
	switch {
	case p == "":
		return err.Error()
	case errors.As(err, &ref):
		return ref.Error()
	case errors.As(err, &nr):
		return nr.Error()
	case errors.As(err, &hl):
		return hl.Error()
	case escapes(err):
		return fmt.Sprintf("refused: path %q leads outside the workspace through a symbolic link (links must be relative and stay inside)", p)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("%s: no such file or directory", p)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Sprintf("%s: %v", p, pe.Err)
	}
	return fmt.Sprintf("%s: %v", p, err)
}
