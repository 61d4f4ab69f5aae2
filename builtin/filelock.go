package builtin

import (
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// pathLocks serializes the read-modify-write tools (write, edit) per file:
// the tool calls of one turn run concurrently, and two edits of one file
// must not read the same old content and overwrite each other's change.
type pathLocks struct {
	mu    sync.Mutex
	locks map[string]*pathLock
}

type pathLock struct {
	sync.Mutex
	users int
}

// lock locks the file at rel (a workspace-relative, cleaned path) and returns
// the function that unlocks it. Entries are dropped when unused.
func (p *pathLocks) lock(rel string) (unlock func()) {
	p.mu.Lock()
	if p.locks == nil {
		p.locks = map[string]*pathLock{}
	}
	l := p.locks[rel]
	if l == nil {
		l = &pathLock{}
		p.locks[rel] = l
	}
	l.users++
	p.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		p.mu.Lock()
		if l.users--; l.users == 0 {
			delete(p.locks, rel)
		}
		p.mu.Unlock()
	}
}

// replaceFile writes data to rel inside root atomically: into a temporary
// file beside it, then renamed over it, so that a concurrent reader (read,
// grep) sees the old content or the new, never a truncated file.
func replaceFile(root *os.Root, rel string, data []byte, perm fs.FileMode) error {
	var b [6]byte
	_, _ = rand.Read(b[:])
	tmp := filepath.Join(filepath.Dir(rel), ".tollgate-"+hex.EncodeToString(b[:])+".tmp")
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = root.Chmod(tmp, perm) // the umask may have narrowed the bits
	}
	if werr == nil {
		werr = root.Rename(tmp, rel)
	}
	if werr != nil {
		_ = root.Remove(tmp)
	}
	return werr
}
