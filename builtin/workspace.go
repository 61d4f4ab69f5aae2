package builtin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tollgate-dev/tollgate/internal/realpath"
)

// workspace is the root every builtin is confined to.
type workspace struct {
	abs     string   // the root as given, made absolute
	real    string   // abs with its symbolic links resolved
	protect []string // real paths that tools never write (Options.Protect)
}

// setProtected records the real paths of ps (relative ones against the root).
func (w *workspace) setProtected(ps []string) {
	for _, p := range ps {
		if p == "" {
			continue
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(w.abs, p)
		}
		w.protect = append(w.protect, realpath.Resolve(filepath.Clean(p)))
	}
}

// writable refuses a workspace-relative path whose real target is, or is
// under, a protected path.
func (w *workspace) writable(rel, spelled string) error {
	if len(w.protect) == 0 {
		return nil
	}
	target := realpath.Resolve(filepath.Join(w.real, rel))
	for _, p := range w.protect {
		if target == p || strings.HasPrefix(target, p+string(filepath.Separator)) {
			return fmt.Errorf("refused: %s is one of the files that govern this agent (its policy, hooks, settings, state or records); no tool may change it", spelled)
		}
	}
	return nil
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
	c := filepath.Clean(unspellPath(p))
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
	var fr *fileRefusal
	switch {
	case p == "":
		return err.Error()
	case errors.As(err, &ref):
		return ref.Error()
	case errors.As(err, &nr):
		return nr.Error()
	case errors.As(err, &hl):
		return hl.Error()
	case errors.As(err, &fr):
		return fr.Error()
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

// spellPath returns the spelling of the file path p (slash-separated) that
// the builtins show the model: p itself, unless p is not valid UTF-8, holds a
// control character, or holds text that reads as an escape. Then every
// byte that is not valid UTF-8, every control character (C0, DEL and C1) and
// every backslash is written \xNN (two lower-case hex digits). Every path
// argument of the builtins reads \xNN as the byte NN (see unspellPath), so the
// spelling leads back to the file: names that are not UTF-8 are reachable,
// and no raw control character reaches a model or a terminal.
func spellPath(p string) string {
	if utf8.ValidString(p) && !hasEscape(p) && strings.IndexFunc(p, isControl) < 0 {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRuneInString(p[i:])
		if (r == utf8.RuneError && size <= 1) || isControl(r) || r == '\\' {
			for _, c := range []byte(p[i : i+size]) {
				fmt.Fprintf(&b, "\\x%02x", c)
			}
		} else {
			b.WriteString(p[i : i+size])
		}
		i += size
	}
	return b.String()
}

// isControl reports whether r is a C0 or C1 control character or DEL.
func isControl(r rune) bool { return r < 0x20 || (r >= 0x7f && r <= 0x9f) }

// hasEscape reports whether p holds a backslash, "x" and two hex digits.
func hasEscape(p string) bool {
	for i := 0; i+3 < len(p); i++ {
		if p[i] == '\\' && p[i+1] == 'x' && isHex(p[i+2]) && isHex(p[i+3]) {
			return true
		}
	}
	return false
}

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

// unspellPath reads every \xNN (N a hex digit, either case) of a path
// argument as the byte NN: the inverse of spellPath. Any other backslash is
// kept.
func unspellPath(p string) string {
	if !hasEscape(p) {
		return p
	}
	b := make([]byte, 0, len(p))
	for i := 0; i < len(p); i++ {
		if i+3 < len(p) && p[i] == '\\' && p[i+1] == 'x' && isHex(p[i+2]) && isHex(p[i+3]) {
			v, _ := strconv.ParseUint(p[i+2:i+4], 16, 8)
			b = append(b, byte(v))
			i += 3
			continue
		}
		b = append(b, p[i])
	}
	return string(b)
}

// rootFS is an [fs.FS] over an [os.Root] that, unlike [os.Root.FS], also
// opens names that are not valid UTF-8 (fs.ValidPath refuses them), so that
// grep and glob walk every file. Names are slash-separated and relative.
type rootFS struct{ root *os.Root }

// Open implements [fs.FS]; the *os.File it returns is also an [fs.ReadDirFile].
func (r rootFS) Open(name string) (fs.File, error) {
	return r.root.Open(filepath.FromSlash(name))
}
