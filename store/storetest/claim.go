package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/store"
)

// resumeClaim is a claim of a halted run to resume it, using uses and
// appending one run.resumed event, made on the run at version.
func resumeClaim(version int64, uses ...store.Use) store.Claim {
	return store.Claim{Holder: "w1", TTL: time.Minute, From: []store.RunStatus{store.RunPending}, To: store.RunResuming,
		Version: version, Use: uses, Events: []store.Event{{Type: "run.resumed", Data: json.RawMessage(`{"from":"pending"}`)}}}
}

// testClaimUses: a claim uses its approvals once and appends its events
// with the run's ID and tenant, in one write; an approval past its expiry
// is stored expired, and the claim holds.
func testClaimUses(t *testing.T, s store.Store, c *clock) {
	exp := c.Now().Add(time.Minute)
	check(t, create(s, newRun("run_1"), pendingApproval("req_a", nil), pendingApproval("req_b", &exp)), "CreateRun")
	for _, id := range []string{"req_a", "req_b"} {
		_, err := s.Decide(ctx, "run_1", id, store.Answer{Approve: true, By: person("alice"), Data: json.RawMessage(`{"to":"carol","amount":10}`)})
		check(t, err, "Decide "+id)
	}
	c.Advance(time.Minute) // req_b expires
	run, err := s.GetRun(ctx, "run_1")
	check(t, err, "GetRun")
	evs, err := s.ListEvents(ctx, store.EventFilter{AllTenants: true})
	check(t, err, "ListEvents")
	after := evs[len(evs)-1].Seq
	r, used, err := s.ClaimRun(ctx, "run_1", resumeClaim(run.Version, store.Use{ID: "req_a", Digest: "sha256:req_a"}, store.Use{ID: "req_b", Digest: "sha256:req_b"}))
	check(t, err, "ClaimRun with uses")
	if r.Status != store.RunResuming || r.Lease == nil || r.Lease.Holder != "w1" {
		t.Fatalf("claimed run = %+v", r)
	}
	if len(used) != 2 || used[0].Status != store.StatusUsed || used[1].Status != store.StatusExpired {
		t.Fatalf("used = %+v, want req_a used and req_b expired", used)
	}
	if ans, ok := used[0].Answer(); !ok || !ans.OK || string(used[0].Data) != `{"to":"carol","amount":10}` {
		t.Fatalf("req_a's answer = %+v, %v, data %s; want the approval with its edited arguments", ans, ok, used[0].Data)
	}
	for id, want := range map[string]store.Status{"req_a": store.StatusUsed, "req_b": store.StatusExpired} {
		a, err := s.GetApproval(ctx, "run_1", id)
		check(t, err, "GetApproval "+id)
		if a.Status != want || a.Unverified {
			t.Errorf("%s stored %s (unverified %v), want %s", id, a.Status, a.Unverified, want)
		}
	}
	evs, err = s.ListEvents(ctx, store.EventFilter{AllTenants: true, AfterSeq: after})
	check(t, err, "ListEvents")
	var types []string
	for _, e := range evs {
		if e.RunID != "run_1" || e.Tenant != run.Tenant {
			t.Errorf("event %s of run %q, tenant %q", e.Type, e.RunID, e.Tenant)
		}
		types = append(types, e.Type)
	}
	if len(types) != 2 || types[0] != store.EventApprovalExpired || types[1] != "run.resumed" {
		t.Fatalf("events appended by the claim = %v, want the expiry, then run.resumed", types)
	}
	_, err = s.Consume(ctx, "run_1", "req_a", "sha256:req_a")
	mustErr(t, err, store.ErrUsed, "Consume of an approval a claim used")
}

// testClaimUsesAtomic: a claim whose use fails, or made on another version
// of the run, changes nothing: no lease, no approval used, no event.
func testClaimUsesAtomic(t *testing.T, s store.Store, c *clock) {
	check(t, create(s, newRun("run_1"), pendingApproval("req_a", nil), pendingApproval("req_b", nil)), "CreateRun")
	_, err := s.Decide(ctx, "run_1", "req_a", store.Answer{Approve: true, By: person("alice")})
	check(t, err, "Decide")
	run, err := s.GetRun(ctx, "run_1")
	check(t, err, "GetRun")
	evs, err := s.ListEvents(ctx, store.EventFilter{AllTenants: true})
	check(t, err, "ListEvents")
	after := evs[len(evs)-1].Seq
	a := store.Use{ID: "req_a", Digest: "sha256:req_a"}
	for _, tt := range []struct {
		what  string
		claim store.Claim
		want  error
	}{
		{"a pending approval", resumeClaim(run.Version, a, store.Use{ID: "req_b", Digest: "sha256:req_b"}), store.ErrNotApproved},
		{"another digest", resumeClaim(run.Version, store.Use{ID: "req_a", Digest: "sha256:other"}), store.ErrDigestMismatch},
		{"an unknown approval", resumeClaim(run.Version, a, store.Use{ID: "req_nope", Digest: "x"}), store.ErrNotFound},
		{"another version", resumeClaim(run.Version+1, a), store.ErrConflict},
		{"a use without digest", resumeClaim(run.Version, store.Use{ID: "req_a"}), store.ErrInvalid},
	} {
		_, _, err := s.ClaimRun(ctx, "run_1", tt.claim)
		mustErr(t, err, tt.want, "ClaimRun using "+tt.what)
	}
	got, err := s.GetRun(ctx, "run_1")
	check(t, err, "GetRun")
	if got.Lease != nil || got.Status != store.RunPending || got.Version != run.Version {
		t.Fatalf("refused claims changed the run: %+v", got)
	}
	if ap, _ := s.GetApproval(ctx, "run_1", "req_a"); ap.Status != store.StatusApproved {
		t.Fatalf("refused claims left req_a %s", ap.Status)
	}
	if evs, _ := s.ListEvents(ctx, store.EventFilter{AllTenants: true, AfterSeq: after}); len(evs) != 0 {
		t.Fatalf("refused claims appended %d events", len(evs))
	}
}
