package storeimpl_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/storeimpl"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

func testKey(b byte) []byte {
	k := make([]byte, 32)
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
	s, err := storeimpl.NewSealer(&store.Options{DecisionKey: testKey(1)})
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
		if !ok || ans.OK || ans.Principal.Kind != tool.PrincipalRuntime || !strings.Contains(ans.Reason, "was not made through tollgate") {
			t.Errorf("%s changed: answer %+v, %v", name, ans, ok)
		}
		if _, err := storeimpl.ApplyConsume(b, b.Digest, time.Now()); !errors.Is(err, store.ErrUnverified) {
			t.Errorf("%s changed: Consume: %v", name, err)
		}
	}
	other, _ := storeimpl.NewSealer(&store.Options{DecisionKey: testKey(2)})
	if !other.Check(a).Unverified {
		t.Error("a decision sealed with another key checks")
	}
	// A pending approval needs no MAC.
	if s.Check(pending).Unverified {
		t.Error("a pending approval is unverified")
	}
	// An expiry of an unverified decision stays unverified.
	forged := s.Check(func() store.Approval { b := a; b.DecidedBy.Name = "mallory"; return b }())
	exp := s.Seal(forged, storeimpl.ExpireApproval(forged, time.Now()))
	if !exp.Unverified || !s.Check(exp).Unverified {
		t.Error("sealing an expiry made a forged decision valid")
	}
	if _, err := storeimpl.NewSealer(&store.Options{DecisionKey: []byte("short")}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("short key: %v", err)
	}
}

// The key file is made once, mode 0600, and read back the same by every
// process that starts at once; a file others may read, a link or garbage is
// refused.
