package store_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

func testKey(b byte) []byte {
	k := make([]byte, store.DecisionKeySize)
	for i := range k {
		k[i] = b
	}
	return k
}

func decided() store.Approval {
	exp := time.Date(2030, 1, 1, 0, 0, 0, 123456789, time.UTC)
	return store.Approval{ID: "req_1", RunID: "run_1", Tenant: "acme", CallID: "call_1", Tool: "bash", Digest: "sha256:aa",
		Kind: tool.KindApproval, Status: store.StatusApproved, DecidedBy: tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"},
		Reason: "fine", Data: json.RawMessage(`{"command":"ls"}`), ExpiresAt: &exp}
}

// A sealed decision checks; changing any field a resume trusts, or checking
// with another key, makes it unverified, and an unverified approval
// declines its request in the runtime's name and cannot be consumed.
func TestSealerCheck(t *testing.T) {
	s, err := store.NewSealer(&store.Options{DecisionKey: testKey(1)})
	if err != nil {
		t.Fatal(err)
	}
	pending := decided()
	pending.Status, pending.DecidedBy, pending.Reason, pending.Data = store.StatusPending, tool.Principal{}, "", nil
	a := s.Seal(pending, decided())
	if a.MAC == "" || s.Check(a).Unverified {
		t.Fatalf("a sealed decision does not check: %+v", a)
	}
	later := a.ExpiresAt.Add(time.Hour)
	for name, change := range map[string]func(*store.Approval){
		"status":    func(a *store.Approval) { a.Status = store.StatusDenied },
		"decidedBy": func(a *store.Approval) { a.DecidedBy.Name = "mallory" },
		"actor":     func(a *store.Approval) { a.Actor = tool.Principal{Kind: tool.PrincipalPerson, Name: "root"} },
		"digest":    func(a *store.Approval) { a.Digest = "sha256:bb" },
		"data":      func(a *store.Approval) { a.Data = json.RawMessage(`{"command":"rm -rf /"}`) },
		"reason":    func(a *store.Approval) { a.Reason = "other" },
		"expiresAt": func(a *store.Approval) { a.ExpiresAt = &later },
		"noExpiry":  func(a *store.Approval) { a.ExpiresAt = nil },
		"id":        func(a *store.Approval) { a.ID = "req_2" },
		"run":       func(a *store.Approval) { a.RunID = "run_2" },
		"tenant":    func(a *store.Approval) { a.Tenant = "other" },
		"tool":      func(a *store.Approval) { a.Tool = "write" },
		"mac":       func(a *store.Approval) { a.MAC = "" },
	} {
		b := a
		change(&b)
		b = s.Check(b)
		if !b.Unverified {
			t.Errorf("%s changed: still verified", name)
			continue
		}
		ans, ok := b.Answer()
		if !ok || ans.OK || ans.Principal.Kind != tool.PrincipalRuntime || ans.Reason != store.UnverifiedReason {
			t.Errorf("%s changed: answer %+v, %v", name, ans, ok)
		}
		if _, err := store.ApplyConsume(b, b.Digest, time.Now()); !errors.Is(err, store.ErrUnverified) {
			t.Errorf("%s changed: Consume: %v", name, err)
		}
	}
	other, _ := store.NewSealer(&store.Options{DecisionKey: testKey(2)})
	if !other.Check(a).Unverified {
		t.Error("a decision sealed with another key checks")
	}
	// A pending approval needs no MAC.
	if s.Check(pending).Unverified {
		t.Error("a pending approval is unverified")
	}
	// An expiry of an unverified decision stays unverified.
	forged := s.Check(func() store.Approval { b := a; b.DecidedBy.Name = "mallory"; return b }())
	exp := s.Seal(forged, store.ExpireApproval(forged, time.Now()))
	if !exp.Unverified || !s.Check(exp).Unverified {
		t.Error("sealing an expiry made a forged decision valid")
	}
	if _, err := store.NewSealer(&store.Options{DecisionKey: []byte("short")}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("short key: %v", err)
	}
}

// The key file is made once, mode 0600, and read back the same by every
// process that starts at once; a file others may read, a link or garbage is
// refused.
func TestLoadDecisionKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state", store.DecisionKeyFile)
	keys := make([][]byte, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			k, err := store.LoadDecisionKey(path)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		})
	}
	wg.Wait()
	for _, k := range keys {
		if len(k) != store.DecisionKeySize || string(k) != string(keys[0]) {
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
	if _, err := store.LoadDecisionKey(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("group-readable key: %v", err)
	}
	link := filepath.Join(dir, "link.key")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if _, err := store.LoadDecisionKey(link); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("link: %v", err)
	}
	bad := filepath.Join(dir, "bad.key")
	if err := os.WriteFile(bad, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := store.LoadDecisionKey(bad); err == nil || !strings.Contains(err.Error(), "hexadecimal") {
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
		k, err := store.LoadDecisionKey(path)
		if err == nil && len(k) != store.DecisionKeySize {
			t.Fatalf("key of %d bytes from %q", len(k), content)
		}
	})
}
