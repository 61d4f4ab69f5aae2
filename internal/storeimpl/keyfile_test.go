package storeimpl_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/storeimpl"
)

func TestLoadDecisionKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state", "decision.key")
	keys := make([][]byte, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			k, err := storeimpl.LoadDecisionKey(path)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		})
	}
	wg.Wait()
	for _, k := range keys {
		if len(k) != 32 || string(k) != string(keys[0]) {
			t.Fatalf("keys differ or have the wrong size: %x", keys)
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode: %v, %v", fi.Mode(), err)
	}
	if di, _ := os.Stat(filepath.Dir(path)); di.Mode().Perm() != 0o700 {
		t.Errorf("key directory mode %v", di.Mode())
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := storeimpl.LoadDecisionKey(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("group-readable key: %v", err)
	}
	link := filepath.Join(dir, "link.key")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if _, err := storeimpl.LoadDecisionKey(link); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("link: %v", err)
	}
	bad := filepath.Join(dir, "bad.key")
	if err := os.WriteFile(bad, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := storeimpl.LoadDecisionKey(bad); err == nil || !strings.Contains(err.Error(), "hexadecimal") {
		t.Errorf("garbage: %v", err)
	}
}

// Whatever a key file holds, LoadDecisionKey returns a key of the right
// size or an error, never a panic; a key is read back as written.
func FuzzLoadDecisionKey(f *testing.F) {
	f.Add([]byte("0101010101010101010101010101010101010101010101010101010101010101\n"))
	f.Add([]byte("zz"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, content []byte) {
		path := filepath.Join(t.TempDir(), "k")
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		k, err := storeimpl.LoadDecisionKey(path)
		if err == nil && len(k) != 32 {
			t.Fatalf("key of %d bytes from %q", len(k), content)
		}
	})
}
