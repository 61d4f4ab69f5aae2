package mcpgateway

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoadPins: a pins file of any content loads or is an error; one that
// loads is written back and loads again the same.
func FuzzLoadPins(f *testing.F) {
	for _, seed := range []string{`{"mcp__a__b": "00ff"}`, `{}`, `null`, `[1]`, `{"a": 1}`, "\xff"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file := filepath.Join(t.TempDir(), "pins.json")
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := loadPins(file)
		if err != nil {
			return
		}
		p.mu.Lock()
		err = p.save()
		n := len(p.m)
		p.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		q, err := loadPins(file)
		if err != nil || len(q.m) != n {
			t.Fatalf("written back: %d pins, %v; want %d", len(q.m), err, n)
		}
	})
}
