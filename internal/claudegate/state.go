package claudegate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tollgate-dev/tollgate/gate"
)

// maxStateBytes bounds one saved call.
const maxStateBytes = 32 << 20

// saved is what PreToolUse leaves for PostToolUse about one call: the gate's
// Allowed value, or the Pending one when Claude Code's own prompt asks the
// person.
type saved struct {
	// ClaudeName is the tool's name as Claude Code gave it.
	ClaudeName string        `json:"claudeName"`
	Call       gate.Call     `json:"call"`
	Allowed    *gate.Allowed `json:"allowed,omitempty"`
	Pending    *gate.Pending `json:"pending,omitempty"`
}

// session keeps what one session's events pass on to the next in a
// directory of its own under the state directory: files named by the
// SHA-256 of the session's and the call's IDs (which come from the agent's
// side, so never part of a path as they are), mode 0600.
type session struct{ dir string }

// session returns the session id's state, under a directory of the
// bridge's source (claude-code, codex).
func (b *Bridge) session(id string) session {
	return session{dir: filepath.Join(b.opts.StateDir, string(b.opts.Source), hashName(id))}
}

func hashName(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:16])
}

func (s session) callFile(callID string) string {
	return filepath.Join(s.dir, "call-"+hashName(callID)+".json")
}

// save writes v as the file name, atomically (a temporary file renamed).
func (s session) save(name string, v any) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	f, err := os.CreateTemp(s.dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	_, werr := f.Write(b)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("state: %w", err)
	}
	if err := os.Rename(f.Name(), name); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("state: %w", err)
	}
	return nil
}

// take reads the file name into v and removes it: each saved call is
// completed once. found is false when there is no such file.
func (s session) take(name string, v any) (found bool, err error) {
	b, err := readBounded(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("state: %w", err)
	}
	if err := os.Remove(name); err != nil {
		return false, fmt.Errorf("state: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("state: %s: %w", name, err)
	}
	return true, nil
}

// read reads the file name into v; found is false when there is none.
func (s session) read(name string, v any) (found bool, err error) {
	b, err := readBounded(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("state: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("state: %s: %w", name, err)
	}
	return true, nil
}

// remove removes the session's directory.
func (s session) remove() error { return os.RemoveAll(s.dir) }

func readBounded(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxStateBytes {
		return nil, fmt.Errorf("%s is not a regular file of at most %d bytes", name, maxStateBytes)
	}
	return io.ReadAll(io.LimitReader(f, maxStateBytes))
}
