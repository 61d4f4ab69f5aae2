//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"slices"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// readRules returns the Landlock rules that let a command read and
// execute the trees and files of read, except the files of hidden (real
// paths): a tree that holds one of them is granted entry by entry, down
// to its directory, whose listing stays readable (READ_DIR) while the file
// itself gets no right at all, so that it can be neither run, read by an
// interpreter or a dynamic loader, nor copied. Landlock judges a file by
// where it really lies, so a link elsewhere does not reach it; another
// hard link to it inside a granted tree does.
func readRules(read, hidden []string) []landlock.Rule {
	var dirs, files []string
	c := carver{hidden: hidden, done: map[string]bool{}}
	for _, p := range read {
		fi, err := os.Stat(p)
		if err != nil {
			continue // missing: nothing to grant
		}
		real := realpath(p)
		switch {
		case slices.Contains(hidden, real):
		case fi.IsDir() && c.holdsHidden(real):
			c.carve(real)
		case fi.IsDir():
			dirs = append(dirs, p)
		default:
			files = append(files, p)
		}
	}
	dirs, files = append(dirs, c.dirs...), append(files, c.files...)
	var rules []landlock.Rule
	if len(dirs) > 0 {
		rules = append(rules, landlock.RODirs(dirs...).IgnoreIfMissing())
	}
	if len(files) > 0 {
		rules = append(rules, landlock.ROFiles(files...).IgnoreIfMissing())
	}
	if len(c.listed) > 0 {
		rules = append(rules, landlock.PathAccess(llsys.AccessFSReadDir, c.listed...).IgnoreIfMissing())
	}
	return rules
}

// carver grants a tree but its hidden files.
type carver struct {
	hidden              []string
	done                map[string]bool
	dirs, files, listed []string
}

// holdsHidden reports whether the directory real holds a hidden file.
func (c *carver) holdsHidden(real string) bool {
	return slices.ContainsFunc(c.hidden, func(h string) bool { return within(h, real) })
}

// carve grants the directory real (a real path that holds a hidden file)
// entry by entry.
func (c *carver) carve(real string) {
	if c.done[real] {
		return
	}
	c.done[real] = true
	c.listed = append(c.listed, real)
	ents, err := os.ReadDir(real)
	if err != nil {
		return // unreadable: nothing granted below it
	}
	for _, e := range ents {
		p := filepath.Join(real, e.Name())
		fi, err := os.Stat(p)
		if err != nil {
			continue // a dangling link
		}
		r := realpath(p)
		switch {
		case slices.Contains(c.hidden, r):
		case fi.IsDir() && c.holdsHidden(r):
			c.carve(r)
		case fi.IsDir():
			c.dirs = append(c.dirs, r)
		default:
			c.files = append(c.files, r)
		}
	}
}
