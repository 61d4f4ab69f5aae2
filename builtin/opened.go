package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tollgate-dev/tollgate/internal/realpath"
	"github.com/tollgate-dev/tollgate/tool"
)

// FileUse is a file a file tool has opened (or, for a file about to be
// created, whose directory it has opened) and is about to read or write,
// as [Options].CheckFile sees it. The path that was judged when the call
// was authorized may have led elsewhere then (a symbolic link changed in
// between): Real is the file that is actually used.
type FileUse struct {
	// Tool is the builtin's name: read, write, edit, grep, glob or
	// apply_patch.
	Tool string
	// Path is the path as the model wrote it; for a file grep or glob found
	// under a directory, its slash-separated path relative to the
	// workspace root.
	Path string
	// Real is the absolute path of the file the tool holds open, as the
	// kernel names the open file descriptor (Linux: /proc/self/fd); for a
	// file not yet created, and for what write, edit and apply_patch
	// replace, the real path of its opened parent directory joined with its
	// name. Elsewhere than Linux it is the path with its symbolic links
	// resolved at the time of the call.
	Real string
	// Links is the opened file's number of hard links (0 for a directory
	// or a file not yet created): a file with more than one has other
	// names, which Real does not show.
	Links uint64
	// Write reports whether the tool is about to change the file (write,
	// edit, apply_patch).
	Write bool
	// Args are the call's arguments with its path argument ("path")
	// replaced by Real: a policy judging them judges the file used. For
	// apply_patch, whose files are in its patch, they are {"path": Real}.
	Args json.RawMessage
	// Hints are the tool's hints.
	Hints *tool.Hints
}

// fileRefusal is a use of a file that Options.CheckFile or Options.Protect
// refused; its text is what the model sees.
type fileRefusal struct {
	path, shown string // as written, and the file used (workspace-relative when inside)
	err         error
}

func (e *fileRefusal) Error() string {
	if e.shown == spellPath(filepath.ToSlash(filepath.Clean(e.path))) {
		return fmt.Sprintf("refused: %s: %v", spellPath(e.path), e.err)
	}
	return fmt.Sprintf("refused: %s leads to %s: %v", spellPath(e.path), e.shown, e.err)
}

func (e *fileRefusal) Unwrap() error { return e.err }

// show returns how a refusal names the real path p: relative to the
// workspace root when it lies inside, else absolute.
func (w *workspace) show(p string) string {
	if r, err := filepath.Rel(w.real, p); err == nil && filepath.IsLocal(r) {
		return spellPath(filepath.ToSlash(r))
	}
	return spellPath(p)
}

// protectedReal refuses the real path p when it is, or lies under, a
// protected path (Options.Protect).
func (w *workspace) protectedReal(p string) error {
	for _, pr := range w.protect {
		if p == pr || strings.HasPrefix(p, pr+string(filepath.Separator)) {
			return errors.New("it is one of the files that govern this agent (its policy, hooks, settings, state or records); no tool may change it")
		}
	}
	return nil
}

// checkUse judges a file a tool is about to use: a write must not reach a
// protected file, and Options.CheckFile, when set, must let the use
// through. args makes the call's arguments with the path replaced by the
// real one. The error is a *fileRefusal.
func (b *builtins) checkUse(ctx context.Context, u FileUse, args func(real string) any) error {
	if u.Write {
		if err := b.ws.protectedReal(u.Real); err != nil {
			return &fileRefusal{path: u.Path, shown: b.ws.show(u.Real), err: err}
		}
	}
	if b.opts.CheckFile == nil {
		return nil
	}
	raw, err := json.Marshal(args(u.Real))
	if err != nil {
		return &fileRefusal{path: u.Path, shown: b.ws.show(u.Real), err: err}
	}
	u.Args = raw
	if err := b.opts.CheckFile(ctx, u); err != nil {
		return &fileRefusal{path: u.Path, shown: b.ws.show(u.Real), err: err}
	}
	return nil
}

// pathArgs returns the args function of a tool whose only path argument is
// "path": in, with Path set to the real path by set.
func pathArgs[T any](in T, set func(*T, string)) func(string) any {
	return func(real string) any {
		c := in
		set(&c, real)
		return c
	}
}

// realOf returns the real path of f, open on the workspace-relative rel:
// the path of its descriptor where the system tells it (fdPath), else rel
// with its links resolved now.
func (w *workspace) realOf(f *os.File, rel string) (string, error) {
	p, err := fdPath(f)
	if errors.Is(err, errNoFdPath) {
		return realpath.Resolve(filepath.Join(w.real, rel)), nil
	}
	return p, err
}

// dirReal returns the real path of the directory dir holds open.
func (w *workspace) dirReal(dir *os.Root, rel string) (string, error) {
	f, err := dir.Open(".")
	if err != nil {
		return "", err
	}
	defer f.Close()
	return w.realOf(f, rel)
}

// pinned is a file that write, edit or apply_patch is about to replace,
// with its parent directory held open: every later step (reading the old
// content, writing a temporary file beside it, renaming it over the file)
// goes through that descriptor, so the directory that was judged is the
// one written, whatever a symbolic link on the way now says.
type pinned struct {
	dir      *os.Root    // the parent directory
	dirRel   string      // its workspace-relative path
	base     string      // the file's name in dir
	real     string      // the real path of the file: dir's real path and base
	fi       fs.FileInfo // the existing file (its link followed inside the workspace); nil when new
	link     *os.File    // when base is a symbolic link: the file it leads to, open for reading
	linkReal string      // and that file's real path
}

// close releases what p holds.
func (p *pinned) close() {
	if p.link != nil {
		p.link.Close()
	}
	p.dir.Close()
}

// pin opens the directory of rel (spelled p by the model) and judges, with
// checkUse, the file that would be replaced, and the file a symbolic link
// named rel leads to. A missing parent directory is created when create is
// set, after the directory it would be created in has been judged. The
// existing file must be a regular file with one link (errors *notRegular,
// *hardLinked); a missing one is allowed when create is set. The caller
// closes the result.
func (b *builtins) pin(ctx context.Context, root *os.Root, toolName, rel, p string, create bool, args func(string) any) (*pinned, error) {
	dirRel, base := filepath.Dir(rel), filepath.Base(rel)
	dir, err := root.OpenRoot(dirRel)
	if errors.Is(err, fs.ErrNotExist) && create {
		dir, err = b.makeDir(ctx, root, toolName, dirRel, p, args)
	}
	if err != nil {
		return nil, err
	}
	pn := &pinned{dir: dir, dirRel: dirRel, base: base}
	fail := func(err error) (*pinned, error) {
		pn.close()
		return nil, err
	}
	dreal, err := b.ws.dirReal(dir, dirRel)
	if err != nil {
		return fail(err)
	}
	pn.real = filepath.Join(dreal, base)
	if err := b.checkUse(ctx, FileUse{Tool: toolName, Path: p, Real: pn.real, Write: true, Hints: writeHints()}, args); err != nil {
		return fail(err)
	}
	lfi, err := dir.Lstat(base)
	switch {
	case errors.Is(err, fs.ErrNotExist) && create:
		return pn, nil
	case err != nil:
		return fail(err)
	case lfi.Mode()&fs.ModeSymlink != 0:
		// The link is replaced, but what it leads to is read (edit keeps
		// its content and conventions): judge that file too. It is opened
		// through the workspace root, which refuses links that lead out.
		f, fi, err := openRegular(root, rel, p)
		if err != nil {
			return fail(err)
		}
		pn.link, pn.fi = f, fi
		if pn.linkReal, err = b.ws.realOf(f, rel); err != nil {
			return fail(err)
		}
		if err := b.checkUse(ctx, FileUse{Tool: toolName, Path: p, Real: pn.linkReal, Links: linkCount(fi), Write: true, Hints: writeHints()}, args); err != nil {
			return fail(err)
		}
	default:
		pn.fi = lfi
	}
	switch {
	case !pn.fi.Mode().IsRegular():
		return fail(&notRegular{path: p, mode: pn.fi.Mode()})
	case linkCount(pn.fi) > 1:
		return fail(&hardLinked{path: p, links: linkCount(pn.fi)})
	}
	return pn, nil
}

// readAll reads at most limit bytes of the existing file p pins: what its
// symbolic link leads to, or the file in the pinned directory.
func (p *pinned) readAll(spelled string, limit int64) ([]byte, error) {
	if p.link != nil {
		if _, err := p.link.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		return io.ReadAll(io.LimitReader(p.link, limit))
	}
	f, _, err := openRegular(p.dir, p.base, spelled)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

// makeDir creates the missing directory dirRel (and its missing parents)
// and returns it opened. The deepest existing directory on its way is
// opened first and judged with the path the new file will have, so that no
// directory is created where the file may not be written.
func (b *builtins) makeDir(ctx context.Context, root *os.Root, toolName, dirRel, p string, args func(string) any) (*os.Root, error) {
	anc, rest := dirRel, []string{}
	var top *os.Root
	for {
		r, err := root.OpenRoot(anc)
		if err == nil {
			top = r
			break
		}
		if !errors.Is(err, fs.ErrNotExist) || anc == "." {
			return nil, err
		}
		rest = append([]string{filepath.Base(anc)}, rest...)
		anc = filepath.Dir(anc)
	}
	defer top.Close()
	areal, err := b.ws.dirReal(top, anc)
	if err != nil {
		return nil, err
	}
	would := filepath.Join(append([]string{areal}, rest...)...)
	if err := b.checkUse(ctx, FileUse{Tool: toolName, Path: p, Real: would, Write: true, Hints: writeHints()}, args); err != nil {
		return nil, err
	}
	sub := filepath.Join(rest...)
	if err := top.MkdirAll(sub, dirPerm); err != nil {
		return nil, err
	}
	return top.OpenRoot(sub)
}

// writeHints are the hints of write, edit and apply_patch.
func writeHints() *tool.Hints { return &tool.Hints{Destructive: true} }

// refused is the error result of a refused use of the file at real (the
// model wrote p): its metadata records both paths.
func refused(p, real string, err error) tool.Result {
	r := tool.Error(describe(p, err))
	r.Metadata = map[string]any{"path": p, "realPath": real}
	return r
}
