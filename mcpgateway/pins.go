package mcpgateway

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/tollgate-dev/tollgate/mcptool"
	"github.com/tollgate-dev/tollgate/tool"
)

// maxPinsBytes bounds a pins file.
const maxPinsBytes = 4 << 20

// pins holds the digest of every tool's definition as first seen (its
// description and input schema): the "rug pull" guard. A tool whose
// definition changes later is refused until its pin is removed (from the
// pins file, or by starting the gateway again when there is none), since
// what a person or a policy approved is no longer what runs.
type pins struct {
	mu   sync.Mutex
	file string            // "" keeps them in memory
	m    map[string]string // mcp__SERVER__TOOL -> digest
	// digests caches each tool's digest by name, for the *mcptool.Tool it
	// was made of (a listing makes new ones).
	digests map[string]cachedDigest
}

type cachedDigest struct {
	t      *mcptool.Tool
	digest string
}

// loadPins reads file (a JSON object of tool names to digests), or starts
// empty when file is "" or does not exist yet.
func loadPins(file string) (*pins, error) {
	p := &pins{file: file, m: map[string]string{}, digests: map[string]cachedDigest{}}
	if file == "" {
		return p, nil
	}
	b, err := os.ReadFile(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return p, nil
	case err != nil:
		return nil, fmt.Errorf("pins: %w", err)
	case len(b) > maxPinsBytes:
		return nil, fmt.Errorf("pins: %s is over %d bytes", file, maxPinsBytes)
	}
	if err := json.Unmarshal(b, &p.m); err != nil {
		return nil, fmt.Errorf("pins: %s: %w", file, err)
	}
	if p.m == nil {
		p.m = map[string]string{}
	}
	return p, nil
}

// check pins t when it is new and reports whether its definition is the
// pinned one, with both digests. A gateway's own tool (not an upstream's)
// is not pinned: its definition is the gateway's.
func (p *pins) check(tt tool.Tool) (ok bool, pinned, now string, err error) {
	t, isMCP := tt.(*mcptool.Tool)
	if !isMCP {
		return true, "", "", nil
	}
	name := t.Spec().Name
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.digests[name]; ok && c.t == t {
		now = c.digest
	} else {
		now = definitionDigest(t)
		p.digests[name] = cachedDigest{t, now}
	}
	pinned, seen := p.m[name]
	if seen {
		return pinned == now, pinned, now, nil
	}
	p.m[name] = now
	return true, now, now, p.save()
}

// save writes the pins file (0600, replaced whole); p.mu is held.
func (p *pins) save() error {
	if p.file == "" {
		return nil
	}
	b, err := json.MarshalIndent(p.m, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p.file), ".pins-*")
	if err != nil {
		return fmt.Errorf("pins: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("pins: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("pins: %w", err)
	}
	return os.Rename(tmp.Name(), p.file)
}

// definitionDigest is the SHA-256 of what a tool tells a model: its
// description and input schema (JSON), hex.
func definitionDigest(t *mcptool.Tool) string {
	l := t.Listed()
	raw, _ := json.Marshal(struct {
		Description string `json:"description"`
		InputSchema any    `json:"inputSchema"`
	}{l.Description, l.InputSchema})
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}
