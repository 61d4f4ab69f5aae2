package builtin

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/tollgate-dev/tollgate/tool"
)

// grepInput is the input of the grep tool.
type grepInput struct {
	Pattern string `json:"pattern" jsonschema:"a regular expression in Go (RE2) syntax, matched against each line"`
	Path    string `json:"path,omitempty" jsonschema:"the file or directory to search, relative to the workspace root (default: the root)"`
	Include string `json:"include,omitempty" jsonschema:"only search files whose name matches this glob, e.g. *.go or *.{ts,tsx}; a glob containing / matches the path relative to path"`
}

// globInput is the input of the glob tool.
type globInput struct {
	Pattern string `json:"pattern" jsonschema:"a glob such as **/*.go or src/*.{ts,tsx}; * and ? do not cross /, ** matches any number of directories"`
	Path    string `json:"path,omitempty" jsonschema:"the directory to search, relative to the workspace root (default: the root)"`
}

// isVCSDir reports whether name is a version-control directory, which grep
// does not descend into unless asked to search inside it.
func isVCSDir(name string) bool {
	switch name {
	case ".git", ".hg", ".svn":
		return true
	}
	return false
}

// grepLineBytes is how much of each line grep matches against; the rest of a
// longer line (minified code, data) is not searched.
const grepLineBytes = 64 << 10

func (b *builtins) grepTool() (tool.Tool, error) {
	desc := fmt.Sprintf("Search the contents of the workspace's text files for a regular expression (Go RE2 "+
		"syntax). Prints each matching line as `path:line: text` (path relative to the workspace root), "+
		"at most %d matches. Skips binary files and .git, .hg and .svn directories. "+
		"Use include to restrict the file names searched.", b.opts.MaxGrepMatches)
	return tool.New(toolGrep, desc, b.grep, &tool.FuncOptions{Hints: readOnlyHints(), Source: source})
}

func (b *builtins) grep(ctx context.Context, in grepInput) (tool.Result, error) {
	re, err := regexp.Compile(in.Pattern)
	if err != nil {
		return tool.Errorf("invalid pattern: %v", err), nil
	}
	var include *globPattern
	if in.Include != "" {
		if include, err = compileGlob(in.Include); err != nil {
			return tool.Errorf("invalid include: %v", err), nil
		}
	}
	base := cmp.Or(in.Path, ".")
	root, rel, fi, fail := b.stat(base)
	if fail != nil {
		return *fail, nil
	}
	defer root.Close()
	g := &grepper{re: re, limit: b.opts.MaxGrepMatches, lineMax: b.opts.MaxLineBytes}
	args := pathArgs(in, func(c *grepInput, p string) { c.Path = p })
	// Every file is judged as it is opened (Options.CheckFile), with the
	// path its descriptor has.
	g.check = func(f *os.File, fi fs.FileInfo, wsRel, shown string) error {
		real, err := b.ws.realOf(f, wsRel)
		if err != nil {
			return err
		}
		return b.checkUse(ctx, FileUse{Tool: toolGrep, Path: shown, Real: real, Links: linkCount(fi), Hints: readOnlyHints()}, args)
	}
	start := filepath.ToSlash(rel)
	if !fi.IsDir() {
		if !fi.Mode().IsRegular() {
			return tool.Error((&notRegular{path: base, mode: fi.Mode()}).Error()), nil
		}
		// An explicitly named file is searched whatever include says.
		if err := g.file(ctx, root, rel, rel, start); err != nil {
			return tool.Error(describe(base, err)), nil
		}
	} else {
		// The walk goes through the directory opened once and judged, so
		// that a link changed on the way cannot lead it elsewhere.
		dir, err := root.OpenRoot(rel)
		if err != nil {
			return tool.Error(describe(base, err)), nil
		}
		defer dir.Close()
		dreal, err := b.ws.dirReal(dir, rel)
		if err != nil {
			return tool.Error(describe(base, err)), nil
		}
		if err := b.checkUse(ctx, FileUse{Tool: toolGrep, Path: base, Real: dreal, Hints: readOnlyHints()}, args); err != nil {
			return refused(base, dreal, err), nil
		}
		err = fs.WalkDir(rootFS{dir}, ".", func(p string, d fs.DirEntry, err error) error {
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			if err != nil {
				if p == "." {
					return err
				}
				return nil // unreadable entry: skip it
			}
			if d.IsDir() {
				if p != "." && isVCSDir(d.Name()) {
					return fs.SkipDir
				}
				return nil
			}
			if include != nil && !include.matchFile(p) {
				return nil
			}
			if !d.Type().IsRegular() && d.Type()&fs.ModeSymlink == 0 {
				return nil // a FIFO, a device or a socket: never opened
			}
			shown := path.Join(start, p)
			err = g.file(ctx, dir, filepath.FromSlash(p), filepath.FromSlash(shown), shown)
			var fr *fileRefusal
			switch {
			case errors.As(err, &fr):
				g.refused++
			case err != nil && ctx.Err() == nil:
				return nil // unreadable, not a regular file, a directory behind a symlink, or leading out: skip it
			}
			if g.full() {
				return fs.SkipAll
			}
			return ctx.Err()
		})
		if err != nil {
			return tool.Error(describe(base, err)), nil
		}
	}
	meta := map[string]any{"matches": len(g.out), "truncated": g.more}
	note := ""
	if g.refused > 0 {
		meta["refused"] = g.refused
		note = fmt.Sprintf("[%s not searched: refused by the checks on the files tools may read]\n", plural(g.refused, "file", "files"))
	}
	if len(g.out) == 0 {
		if note != "" {
			return tool.Result{Output: "no matches\n" + note, Metadata: meta}, nil
		}
		return tool.Result{Output: "no matches", Metadata: meta}, nil
	}
	out := strings.Join(g.out, "\n") + "\n"
	if g.more {
		out += fmt.Sprintf("[more matches not shown: the limit of %d was reached; narrow the pattern, path or include]\n", g.limit)
	}
	out += note
	return tool.Result{Output: out, Metadata: meta}, nil
}

// matchFile matches a file path relative to the search directory: a
// one-segment pattern (such as *.go) by the file's base name, any other by the
// whole relative path.
func (g *globPattern) matchFile(rel string) bool {
	segs := strings.Split(rel, "/")
	for _, p := range g.alts {
		name := segs
		if len(p) == 1 && p[0] != "**" {
			name = segs[len(segs)-1:]
		}
		if matchSegments(p, name, false) {
			return true
		}
	}
	return false
}

// grepper collects matching lines up to a limit.
type grepper struct {
	re      *regexp.Regexp
	limit   int
	lineMax int
	out     []string
	more    bool // a match beyond the limit was seen
	refused int  // files the check refused
	// check judges an opened file (wsRel: its workspace-relative path,
	// shown: as the output names it); an error refuses it.
	check func(f *os.File, fi fs.FileInfo, wsRel, shown string) error
}

func (g *grepper) full() bool { return g.more }

// file searches one file, p inside dir (wsRel inside the workspace root),
// named shown in the output; binary files are skipped silently. A FIFO or
// a device is refused without blocking, and so is a file g.check refuses.
func (g *grepper) file(ctx context.Context, dir *os.Root, p, wsRel, shown string) error {
	f, fi, err := openRegular(dir, p, shown)
	if err != nil {
		return err
	}
	defer f.Close()
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", shown)
	}
	if err := g.check(f, fi, wsRel, shown); err != nil {
		return err
	}
	head := make([]byte, sniffLen)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return err
	}
	if isBinary(head[:n]) {
		return nil
	}
	lr := newLineReader(io.MultiReader(bytes.NewReader(head[:n]), f), grepLineBytes)
	for lineNo := 1; ; lineNo++ {
		if lineNo%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		line, cut, err := lr.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if lineNo == 1 {
			line = bytes.TrimPrefix(line, []byte(utf8BOM))
		}
		if !g.re.Match(line) {
			continue
		}
		if len(g.out) == g.limit {
			g.more = true
			return nil
		}
		text, cut := clip(line, g.lineMax, cut)
		entry := fmt.Sprintf("%s:%d: %s", spellPath(shown), lineNo, text)
		if cut {
			entry += lineCutMarker
		}
		g.out = append(g.out, entry)
	}
}

func (b *builtins) globTool() (tool.Tool, error) {
	desc := fmt.Sprintf("Find files of the workspace by name with a glob pattern (** matches any number of "+
		"directories, {a,b} alternatives). Lists matching files (not directories) relative to the workspace "+
		"root, sorted by path, at most %d.", b.opts.MaxGlobResults)
	return tool.New(toolGlob, desc, b.glob, &tool.FuncOptions{Hints: readOnlyHints(), Source: source})
}

// stat resolves the path argument p inside the workspace, opens the root and
// stats p there. On failure it returns the error result the model sees; on
// success the caller closes root.
func (b *builtins) stat(p string) (root *os.Root, rel string, fi fs.FileInfo, fail *tool.Result) {
	rel, err := b.ws.rel(p)
	if err != nil {
		r := tool.Error(describe(p, err))
		return nil, "", nil, &r
	}
	if root, err = b.ws.open(); err != nil {
		r := tool.Error(err.Error())
		return nil, "", nil, &r
	}
	if fi, err = root.Stat(rel); err != nil {
		root.Close()
		r := tool.Error(describe(p, err))
		return nil, "", nil, &r
	}
	return root, rel, fi, nil
}

func (b *builtins) glob(ctx context.Context, in globInput) (tool.Result, error) {
	pat, err := compileGlob(in.Pattern)
	if err != nil {
		return tool.Errorf("invalid pattern: %v", err), nil
	}
	base := cmp.Or(in.Path, ".")
	root, rel, fi, fail := b.stat(base)
	if fail != nil {
		return *fail, nil
	}
	defer root.Close()
	if !fi.IsDir() {
		return tool.Errorf("%s is not a directory", base), nil
	}
	start := filepath.ToSlash(rel)
	// The walk goes through the directory opened once and judged; each
	// match is judged by its path under the directory's real one.
	dir, err := root.OpenRoot(rel)
	if err != nil {
		return tool.Error(describe(base, err)), nil
	}
	defer dir.Close()
	dreal, err := b.ws.dirReal(dir, rel)
	if err != nil {
		return tool.Error(describe(base, err)), nil
	}
	args := pathArgs(in, func(c *globInput, p string) { c.Path = p })
	if err := b.checkUse(ctx, FileUse{Tool: toolGlob, Path: base, Real: dreal, Hints: readOnlyHints()}, args); err != nil {
		return refused(base, dreal, err), nil
	}
	var found []string
	refusedN := 0
	err = fs.WalkDir(rootFS{dir}, ".", func(p string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			if p == "." {
				return err
			}
			return nil
		}
		if d.IsDir() {
			if p != "." && !pat.mayMatchUnder(p) {
				return fs.SkipDir
			}
			return nil
		}
		if p == "." || !pat.match(p) {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 && !linksToFile(dir, p) {
			return nil
		}
		shown := path.Join(start, p)
		if b.opts.CheckFile != nil {
			use := FileUse{Tool: toolGlob, Path: shown, Real: filepath.Join(dreal, filepath.FromSlash(p)), Hints: readOnlyHints()}
			if b.checkUse(ctx, use, args) != nil {
				refusedN++
				return nil
			}
		}
		found = append(found, shown)
		return nil
	})
	if err != nil {
		return tool.Error(describe(base, err)), nil
	}
	slices.Sort(found)
	meta := map[string]any{"files": len(found), "truncated": len(found) > b.opts.MaxGlobResults}
	note := ""
	if refusedN > 0 {
		meta["refused"] = refusedN
		note = fmt.Sprintf("[%s not listed: refused by the checks on the files tools may read]\n", plural(refusedN, "file", "files"))
	}
	if len(found) == 0 {
		if note != "" {
			return tool.Result{Output: "no files match\n" + note, Metadata: meta}, nil
		}
		return tool.Result{Output: "no files match", Metadata: meta}, nil
	}
	var out strings.Builder
	for _, f := range found[:min(len(found), b.opts.MaxGlobResults)] {
		out.WriteString(spellPath(f))
		out.WriteByte('\n')
	}
	if extra := len(found) - b.opts.MaxGlobResults; extra > 0 {
		fmt.Fprintf(&out, "[%d more files not shown; narrow the pattern or path]\n", extra)
	}
	out.WriteString(note)
	return tool.Result{Output: out.String(), Metadata: meta}, nil
}

// linksToFile reports whether the symbolic link p resolves, inside the root,
// to something that is not a directory.
func linksToFile(root *os.Root, p string) bool {
	fi, err := root.Stat(filepath.FromSlash(p))
	return err == nil && !fi.IsDir()
}
