package runcore

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// MaxPinnedFile is the largest file a run pins (64 MiB): every governing file
// is far smaller (their parsers refuse more), and hashing is bounded.
const MaxPinnedFile = 64 << 20

// ErrGoverningFileChanged is returned (wrapped, with the file's path) when
// a file that governs a run (its policy, hooks files, MCP configuration
// files, Claude Code settings files) is not what it was when the run
// started: it changed, appeared or vanished. The run's agent is then not
// built and nothing of the run runs.
var ErrGoverningFileChanged = errors.New("changed since the run started")

// Pin is the content of a file that governs a run, taken when the run
// started ([PinFiles]).
type Pin struct {
	// Path is the file's absolute path, as the configuration names it.
	Path string `json:"path"`
	// SHA256 is the hex SHA-256 of the file's content (64 digits), empty
	// when the file did not exist.
	SHA256 string `json:"sha256,omitempty"`
	// Absent records that the file did not exist when the run started (a
	// Claude Code project settings file the run would read if it appeared).
	Absent bool `json:"absent,omitempty"`
}

// GoverningFiles returns the absolute paths of the files that govern a run
// built from c, in a stable order without repeats: the policy file, the
// hooks files, the MCP configuration files, the Claude Code settings files
// and, when c.Claude.Project is set, the workspace's candidate project
// settings files .claude/settings.json and .claude/settings.local.json
// (whether they exist or not).
func GoverningFiles(c RunConfig) []string {
	var out []string
	add := func(ps ...string) {
		for _, p := range ps {
			if p != "" && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	add(c.PolicyFile)
	add(c.HooksFiles...)
	add(c.MCPFiles...)
	if c.Claude != nil {
		add(c.Claude.Files...)
		if c.Claude.Project && c.Workdir != "" {
			add(filepath.Join(c.Workdir, ".claude", "settings.json"), filepath.Join(c.Workdir, ".claude", "settings.local.json"))
		}
	}
	return out
}

// PinFiles returns a copy of c whose Pins hold the SHA-256 of every file of
// [GoverningFiles], or its absence, as it is now. A run pins its
// configuration when it starts ([Host.Start], [PrepareDurable]); every later
// build of its agent checks the pins first ([CheckPins]), so that
// a governing file rewritten while the run waited (by a tool of the run, or
// by swapping one of its directories) is never loaded. Errors: a file that
// exists but cannot be read, is not a regular file, or is larger than
// [MaxPinnedFile].
func PinFiles(c RunConfig) (RunConfig, error) {
	files := GoverningFiles(c)
	pins := make([]Pin, 0, len(files))
	for _, p := range files {
		sum, err := fileSHA256(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			pins = append(pins, Pin{Path: p, Absent: true})
		case err != nil:
			return c, fmt.Errorf("runs: pinning %s: %w", p, err)
		default:
			pins = append(pins, Pin{Path: p, SHA256: sum})
		}
	}
	c.Pins = pins
	return c, nil
}

// CheckPins reports whether every governing file of c is still as pinned: it
// fails, wrapping [ErrGoverningFileChanged] and naming the file, when a file
// changed, appeared or vanished, or when a governing file has no pin. A
// configuration without pins (stored before runs pinned them) is not
// checked.
func CheckPins(c RunConfig) error {
	if len(c.Pins) == 0 {
		return nil
	}
	byPath := make(map[string]Pin, len(c.Pins))
	for _, p := range c.Pins {
		byPath[p.Path] = p
	}
	for _, f := range GoverningFiles(c) {
		if _, ok := byPath[f]; !ok {
			return fmt.Errorf("runs: governing file %s was not pinned when the run started; refusing to build the run", f)
		}
	}
	for _, pin := range c.Pins {
		sum, err := fileSHA256(pin.Path)
		exists := err == nil
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("runs: governing file %s: %w; refusing to build the run", pin.Path, err)
		}
		switch {
		case pin.Absent && exists:
			return fmt.Errorf("runs: governing file %s appeared: %w; refusing to build the run", pin.Path, ErrGoverningFileChanged)
		case !pin.Absent && !exists:
			return fmt.Errorf("runs: governing file %s vanished: %w; refusing to build the run", pin.Path, ErrGoverningFileChanged)
		case exists && sum != pin.SHA256:
			return fmt.Errorf("runs: governing file %s %w (sha256 %s, now %s); refusing to build the run", pin.Path, ErrGoverningFileChanged, short(pin.SHA256), short(sum))
		}
	}
	return nil
}

func short(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	return sum
}

// fileSHA256 returns the hex SHA-256 of the regular file at p (following
// links, as the builder that reads it does).
func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("not a regular file (%s)", st.Mode().Type())
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, MaxPinnedFile+1))
	if err != nil {
		return "", err
	}
	if n > MaxPinnedFile {
		return "", fmt.Errorf("larger than %d bytes", MaxPinnedFile)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
