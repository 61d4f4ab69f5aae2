//go:build linux

package sandbox

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/tollgate-dev/tollgate/internal/glob"
)

// systemPath are the program directories searched for denied programs
// besides those of the command's PATH.
var systemPath = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// fileID is a file's identity: its device and inode numbers.
type fileID struct{ dev, ino uint64 }

// deniedFiles is what the exec supervisor refuses: the programs whose base
// name matches one of globs, found on the command's PATH and in
// [systemPath], by identity and by content; see [deniedFiles.refuses].
type deniedFiles struct {
	globs []string
	// ids maps each denied file (and every link to it) to the path it was
	// found at.
	ids map[fileID]string
	// bySize maps a size in bytes to the denied files of that size: an
	// executable of one of these sizes is compared with them by content,
	// so that a copy is refused too.
	bySize map[int64][]string
	// sums caches the SHA-256 sums of denied files, by path: they are
	// computed when first needed.
	sums map[string][sha256.Size]byte
	// scripts are the denied files that start with "#!": their exec is the
	// interpreter's, with the script's path as an argument.
	scripts map[fileID]string
}

// resolveDenied finds the files of the programs matching globs on the
// directories of path (a PATH value; relative entries are skipped) and of
// [systemPath]. A directory that cannot be read is skipped: what it holds
// cannot be found by name, and is still refused by content when run from
// elsewhere.
func resolveDenied(globs []string, path string) *deniedFiles {
	d := &deniedFiles{globs: globs, ids: map[fileID]string{}, bySize: map[int64][]string{},
		sums: map[string][sha256.Size]byte{}, scripts: map[fileID]string{}}
	dirs := slices.Clone(systemPath)
	for _, dir := range filepath.SplitList(path) {
		if filepath.IsAbs(dir) && !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	for _, dir := range dirs {
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if !d.nameDenied(e.Name()) {
				continue
			}
			d.add(filepath.Join(dir, e.Name()))
		}
	}
	return d
}

// add records the file at p (links followed) when it is a regular file.
func (d *deniedFiles) add(p string) {
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return // a dangling link, a directory: nothing to run
	}
	id := idOf(fi)
	if _, ok := d.ids[id]; ok {
		return
	}
	// A file this process cannot read is no script it could feed to an
	// interpreter, nor one the command could copy: its identity suffices.
	script, _ := isScript(p)
	d.ids[id] = p
	d.bySize[fi.Size()] = append(d.bySize[fi.Size()], p)
	if script {
		d.scripts[id] = p
	}
}

// hidden returns the real paths of the denied files but own's (the
// command's own program, which must stay executable).
func (d *deniedFiles) hidden(own string) []string {
	ownReal := realpath(own)
	var out []string
	for _, p := range d.ids {
		if r := realpath(p); r != ownReal && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

// nameDenied reports whether a program's base name matches a denied glob
// (case ignored, as the policy's program conditions match).
func (d *deniedFiles) nameDenied(name string) bool {
	return slices.ContainsFunc(d.globs, func(g string) bool { return glob.Match(g, name) })
}

func idOf(fi os.FileInfo) fileID {
	st, _ := fi.Sys().(*syscall.Stat_t)
	if st == nil {
		return fileID{}
	}
	return fileID{dev: st.Dev, ino: st.Ino}
}

// copyOf says whether the file exe, of size bytes, has the content of a
// denied file ("it is a copy of PATH"), or "" when it has not; a file that
// cannot be read is refused.
func (d *deniedFiles) copyOf(exe string, size int64) string {
	cands := d.bySize[size]
	if len(cands) == 0 {
		return ""
	}
	sum, err := digest(exe)
	if err != nil {
		return fmt.Sprintf("its executable cannot be checked: %v", err)
	}
	for _, p := range cands {
		ps, ok := d.sums[p]
		if !ok {
			if ps, err = digest(p); err != nil {
				continue // unreadable here, so never copied by the command
			}
			d.sums[p] = ps
		}
		if ps == sum {
			return "it is a copy of " + p
		}
	}
	return ""
}

// digest returns the SHA-256 sum of the file at p.
func digest(p string) (sum [sha256.Size]byte, err error) {
	f, err := os.Open(p)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return sum, err
	}
	copy(sum[:], h.Sum(nil))
	return sum, nil
}

// isScript reports whether the file at p starts with "#!".
func isScript(p string) (bool, error) {
	f, err := os.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	head := make([]byte, 2)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false, err
	}
	return bytes.Equal(head[:n], []byte("#!")), nil
}

// execImage is what a process runs right after an exec: its executable
// (exe, a path whose open yields the very file, such as /proc/PID/exe),
// the executable's path as the kernel names it, its arguments, and its
// working directory (for relative script paths).
type execImage struct {
	exe, exePath string
	args         []string
	cwd          string
}

// refuses says why the process described by img must not run, or "" when
// it may: its executable is a denied file (by identity or content), has a
// denied name, is a dynamic loader run as a program (it would load a
// denied program without an exec), or is an interpreter whose first or
// second argument is a denied script; or its argv[0] names a denied
// program, or it is busybox or toybox and its first argument does. An
// executable that cannot be read is refused.
func (d *deniedFiles) refuses(img execImage) string {
	fi, err := os.Stat(img.exe)
	if err != nil {
		return fmt.Sprintf("its executable cannot be checked: %v", err)
	}
	if p, ok := d.ids[idOf(fi)]; ok {
		return "it is " + p
	}
	if why := d.copyOf(img.exe, fi.Size()); why != "" {
		return why
	}
	base := filepath.Base(strings.TrimSuffix(img.exePath, " (deleted)"))
	if d.nameDenied(base) {
		return "its program is named " + strconv.Quote(base)
	}
	if isLoader(base) {
		return "it runs the dynamic loader " + strconv.Quote(base) + " as a program, which loads programs without executing them"
	}
	if len(img.args) > 0 && d.nameDenied(filepath.Base(img.args[0])) {
		return "it is called " + strconv.Quote(img.args[0])
	}
	if (base == "busybox" || base == "toybox") && len(img.args) > 1 && d.nameDenied(img.args[1]) {
		return "it runs the applet " + strconv.Quote(img.args[1]) + " of " + strconv.Quote(base)
	}
	for _, a := range img.args[1:min(len(img.args), 3)] {
		if a == "" || strings.HasPrefix(a, "-") {
			continue
		}
		if !filepath.IsAbs(a) {
			a = filepath.Join(img.cwd, a)
		}
		if fi, err := os.Stat(a); err == nil {
			if p, ok := d.scripts[idOf(fi)]; ok {
				return "it runs the script " + p
			}
		}
	}
	return ""
}

// isLoader reports whether name is the file name of a dynamic loader
// (ld-linux-x86-64.so.2, ld-linux-aarch64.so.1, ld.so, ld-2.31.so,
// ld64.so.2, ld-musl-x86_64.so.1).
func isLoader(name string) bool {
	return name == "ld.so" || strings.HasPrefix(name, "ld-") && strings.Contains(name, ".so") ||
		strings.HasPrefix(name, "ld64.so")
}
