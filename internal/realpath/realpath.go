// Package realpath names the file a path leads to: the one notion of a path
// that policy conditions, confinement and the command's own checks share
// (docs/architecture.md, "Containment").
package realpath

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// maxLinkHops bounds the symbolic links followed for one path (as Linux's
// MAXSYMLINKS does); a longer chain, a loop, is resolved no further.
const maxLinkHops = 40

// Resolve returns the absolute, cleaned path p with the symbolic links
// of its leading part that exists resolved, one segment at a time, as the
// kernel would follow them; the rest (a file that does not exist yet) is
// appended as written. Unlike filepath.EvalSymlinks it never fails. p must
// be absolute and use slashes (the Unix form); a chain of more than 40 links
// (a loop) is followed no further.
func Resolve(p string) string {
	rest := strings.Split(strings.TrimPrefix(p, "/"), "/")
	cur, hops := "/", 0
	for len(rest) > 0 {
		seg := rest[0]
		rest = rest[1:]
		switch seg {
		case "", ".":
			continue
		case "..":
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, seg)
		fi, err := os.Lstat(filepath.FromSlash(next))
		if err != nil {
			return path.Join(append([]string{next}, rest...)...)
		}
		if fi.Mode()&fs.ModeSymlink == 0 || hops == maxLinkHops {
			cur = next
			continue
		}
		hops++
		target, err := os.Readlink(filepath.FromSlash(next))
		if err != nil {
			cur = next
			continue
		}
		target = filepath.ToSlash(target)
		if path.IsAbs(target) {
			cur = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return cur
}
