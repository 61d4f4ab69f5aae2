// Package storetest is the test suite every [store.Store] implementation must
// pass, in the spirit of testing/slogtest: an implementation's tests call
// [Run] with a constructor, and the suite checks the run and approval life
// cycles, the status machine, single use, digest binding, expiry, that
// Decide, Consume, ClaimRun and UpdateRun stay atomic under concurrent
// callers, the event log (order, atomicity, waiting), leases and fencing,
// pagination, tenant scoping and pruning. A store that several processes
// share also calls [RunShared] with a constructor of two handles on one
// store.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tollgate-dev/tollgate/internal/storeimpl"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// NewFunc returns a new, empty store that uses opts (in particular its clock).
// The suite closes it; the constructor should register any other clean-up
// with t.Cleanup.
type NewFunc func(t *testing.T, opts *store.Options) store.Store

// clock is a settable clock for the suite's stores.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

// Now returns the clock's time.
func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Run runs the whole suite against the stores newStore makes, each in its own
// subtest with its own store.
func Run(t *testing.T, newStore NewFunc) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store, c *clock)
	}{
		{"RunLifecycle", testRunLifecycle},
		{"WritesReturnWhatReadsReturn", testWritesReturnWhatReadsReturn},
		{"ApprovalsStoredWithRun", testApprovalsStoredWithRun},
		{"CreateIsAtomic", testCreateIsAtomic},
		{"SameRequestIDInTwoRuns", testSameRequestIDInTwoRuns},
		{"DecideApprove", testDecideApprove},
		{"DecideDeny", testDecideDeny},
		{"DecideExpired", testDecideExpired},
		{"DecideActor", testDecideActor},
		{"DecideInvalidPrincipal", testDecideInvalidPrincipal},
		{"ConsumeOnce", testConsumeOnce},
		{"ConsumeRefusals", testConsumeRefusals},
		{"ConsumeRedactsInput", testConsumeRedactsInput},
		{"ConcurrentDecide", testConcurrentDecide},
		{"ConcurrentConsume", testConcurrentConsume},
		{"ConcurrentUpdateRun", testConcurrentUpdateRun},
	}
	for _, tt := range append(append(tests, hostTests...), layerTests...) {
		t.Run(tt.name, func(t *testing.T) {
			// A zone other than UTC: a store gives back every time in UTC, from a
			// write as from a read.
			c := &clock{t: time.Date(2030, 1, 2, 3, 4, 5, 600_000_000, time.FixedZone("EST", -5*3600))}
			s := newStore(t, &store.Options{Now: c.Now})
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tt.fn(t, s, c)
		})
	}
}

var ctx = context.Background()

func mustErr(t *testing.T, err, want error, what string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: err = %v, want %v", what, err, want)
	}
}

func check(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// pendingApproval returns an approval record for request id of a call.
// person is the principal of a person named name.
func person(name string) tool.Principal {
	return tool.Principal{Kind: tool.PrincipalPerson, Name: name}
}

func pendingApproval(id string, exp *time.Time) store.Approval {
	args := json.RawMessage(`{"to":"bob","amount":10}`)
	data, _ := json.Marshal(map[string]any{"tool": "transfer_funds", "callId": "call_" + id, "args": args, "digest": "sha256:" + id})
	req := tool.Request{ID: id, Kind: tool.KindApproval, Prompt: "Allow transfer_funds?", Data: data, ExpiresAt: exp}
	return store.Approval{ID: id, CallID: "call_" + id, Tool: "transfer_funds", Digest: "sha256:" + id, Kind: req.Kind, Prompt: req.Prompt, Request: req, ExpiresAt: exp}
}

// create stores run with approvals, as CreateRun does, and returns its error.
func create(s store.Store, run store.Run, approvals ...store.Approval) error {
	_, err := s.CreateRun(ctx, store.CreateRunRequest{Run: run, Approvals: approvals})
	return err
}

// update applies u to run id and returns its error.
func update(s store.Store, id string, u store.RunUpdate) error {
	_, err := s.UpdateRun(ctx, id, u)
	return err
}

// runIDs returns the IDs of the runs of every page f selects.
func runIDs(t *testing.T, s store.Store, f store.RunFilter) []string {
	t.Helper()
	var out []string
	for r, err := range store.AllRuns(ctx, s, f) {
		check(t, err, "ListRuns")
		out = append(out, r.ID)
	}
	return out
}

func newRun(id string) store.Run {
	return store.Run{
		ID: id, Status: store.RunPending, Owner: "person:alice",
		State:  json.RawMessage(`{"version":1,"runId":"` + id + `"}`),
		Result: json.RawMessage(`{"status":"pending"}`),
		Config: json.RawMessage(`{"args":["run","--policy","p.yaml"]}`),
	}
}

// A write returns the run exactly as a read of it returns it (times in
// UTC, with no monotonic reading, whatever the clock's zone): a host that
// answers with a run its write returned answers what a read would.
func testWritesReturnWhatReadsReturn(t *testing.T, s store.Store, c *clock) {
	same := func(what string, wrote store.Run) {
		t.Helper()
		read, err := s.GetRun(ctx, wrote.ID)
		check(t, err, "GetRun after "+what)
		if !reflect.DeepEqual(wrote, read) {
			t.Fatalf("%s returned a run other than a read returns:\nwrote %#v\nread  %#v", what, wrote, read)
		}
	}
	r := newRun("run_1")
	r.Status = store.RunRunning
	created, err := s.CreateRun(ctx, store.CreateRunRequest{Run: r, Events: []store.Event{{Type: "run.started"}}})
	check(t, err, "CreateRun")
	same("CreateRun", created)
	c.Advance(time.Second)
	updated, err := s.UpdateRun(ctx, "run_1", store.RunUpdate{Status: store.RunDone, Result: json.RawMessage(`{"text":"done"}`), Events: []store.Event{{Type: "run.finished"}}})
	check(t, err, "UpdateRun")
	same("UpdateRun", updated)
}

func testRunLifecycle(t *testing.T, s store.Store, c *clock) {
	created := c.Now()
	r := newRun("run_1")
	check(t, create(s, r), "CreateRun")
	mustErr(t, create(s, r), store.ErrExists, "CreateRun twice")
	_, err := s.GetRun(ctx, "run_nope")
	mustErr(t, err, store.ErrNotFound, "GetRun unknown")

	got, err := s.GetRun(ctx, "run_1")
	check(t, err, "GetRun")
	want := r
	want.CreatedAt, want.UpdatedAt, want.Version = created, created, 1
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("GetRun (-want +got):\n%s", d)
	}

	c.Advance(time.Minute)
	upd := store.RunUpdate{Status: store.RunResuming, State: json.RawMessage(`{"v":2}`), Result: json.RawMessage(`null`)}
	upd.From = store.RunRunning
	mustErr(t, update(s, "run_1", upd), store.ErrConflict, "UpdateRun from the wrong status")
	mustErr(t, update(s, "run_nope", store.RunUpdate{Status: store.RunDone}), store.ErrNotFound, "UpdateRun unknown")
	upd.From = store.RunPending
	got, err = s.UpdateRun(ctx, "run_1", upd)
	check(t, err, "UpdateRun")
	want = store.Run{ID: "run_1", Owner: r.Owner, Status: store.RunResuming, State: json.RawMessage(`{"v":2}`), Config: r.Config, Version: 2, CreatedAt: created, UpdatedAt: created.Add(time.Minute)}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("UpdateRun returned (-want +got); Config and CreatedAt must be kept, Result cleared by null:\n%s", d)
	}
	got, err = s.GetRun(ctx, "run_1")
	check(t, err, "GetRun")
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("after UpdateRun (-want +got); Config and CreatedAt must be kept, Result cleared by null:\n%s", d)
	}
	got, err = s.UpdateRun(ctx, "run_1", store.RunUpdate{Result: json.RawMessage(`{"n":1}`)})
	check(t, err, "UpdateRun of the result only")
	want.Result, want.Version = json.RawMessage(`{"n":1}`), 3
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("UpdateRun of the result only (-want +got); status and state must be kept:\n%s", d)
	}

	r2 := newRun("run_2")
	r2.Status = store.RunDone
	check(t, create(s, r2), "CreateRun 2")
	r3 := newRun("run_3")
	check(t, create(s, r3), "CreateRun 3")
	ids := func(f store.RunFilter) []string { return runIDs(t, s, f) }
	if d := cmp.Diff([]string{"run_1", "run_2", "run_3"}, ids(store.RunFilter{})); d != "" {
		t.Errorf("ListRuns all (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"run_3"}, ids(store.RunFilter{Status: store.RunPending})); d != "" {
		t.Errorf("ListRuns pending (-want +got):\n%s", d)
	}
}

func testApprovalsStoredWithRun(t *testing.T, s store.Store, c *clock) {
	exp := c.Now().Add(time.Hour)
	a, b := pendingApproval("req_a", &exp), pendingApproval("req_b", nil)
	a.Status, a.DecidedBy = store.StatusApproved, person("mallory") // the store resets both
	check(t, create(s, newRun("run_1"), a, b), "CreateRun")
	got, err := s.GetApproval(ctx, "run_1", "req_a")
	check(t, err, "GetApproval")
	want := pendingApproval("req_a", &exp)
	want.RunID, want.Status, want.CreatedAt, want.UpdatedAt = "run_1", store.StatusPending, c.Now(), c.Now()
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("GetApproval (-want +got):\n%s", d)
	}
	_, err = s.GetApproval(ctx, "run_1", "req_nope")
	mustErr(t, err, store.ErrNotFound, "GetApproval unknown")
	_, err = s.GetApproval(ctx, "run_2", "req_a")
	mustErr(t, err, store.ErrNotFound, "GetApproval of another run")

	c.Advance(time.Second)
	addC := store.RunUpdate{From: store.RunPending, Approvals: []store.Approval{pendingApproval("req_c", nil)}}
	check(t, update(s, "run_1", addC), "UpdateRun adding an approval")
	mustErr(t, update(s, "run_1", addC), store.ErrExists, "UpdateRun adding a taken ID")
	if r, _ := s.GetRun(ctx, "run_1"); r.Version != 2 {
		t.Errorf("a refused UpdateRun changed the run's version to %d", r.Version)
	}
	_, err = s.Decide(ctx, "run_1", "req_b", store.Answer{Approve: false, By: person("alice"), Reason: "no"})
	check(t, err, "Decide")

	list := func(f store.ApprovalFilter) []string {
		var out []string
		for a, err := range store.AllApprovals(ctx, s, f) {
			check(t, err, "ListApprovals")
			out = append(out, a.RunID+"/"+a.ID+":"+string(a.Status))
		}
		return out
	}
	check(t, create(s, newRun("run_2"), pendingApproval("req_z", nil)), "CreateRun 2")
	for _, tt := range []struct {
		f    store.ApprovalFilter
		want []string
	}{
		{store.ApprovalFilter{}, []string{"run_1/req_a:pending", "run_1/req_b:denied", "run_1/req_c:pending", "run_2/req_z:pending"}},
		{store.ApprovalFilter{RunID: "run_1"}, []string{"run_1/req_a:pending", "run_1/req_b:denied", "run_1/req_c:pending"}},
		{store.ApprovalFilter{Status: store.StatusPending}, []string{"run_1/req_a:pending", "run_1/req_c:pending", "run_2/req_z:pending"}},
		{store.ApprovalFilter{ID: "req_z"}, []string{"run_2/req_z:pending"}},
		{store.ApprovalFilter{RunID: "run_2", Status: store.StatusDenied}, nil},
	} {
		if d := cmp.Diff(tt.want, list(tt.f)); d != "" {
			t.Errorf("ListApprovals(%+v) (-want +got):\n%s", tt.f, d)
		}
	}
}

func testCreateIsAtomic(t *testing.T, s store.Store, c *clock) {
	err := create(s, newRun("run_1"), pendingApproval("req_a", nil), pendingApproval("req_a", nil))
	mustErr(t, err, store.ErrExists, "CreateRun with a duplicate approval ID")
	_, err = s.GetRun(ctx, "run_1")
	mustErr(t, err, store.ErrNotFound, "the run of a failed CreateRun")
	p, err := s.ListApprovals(ctx, store.ApprovalFilter{AllTenants: true})
	check(t, err, "ListApprovals")
	if len(p.Approvals) != 0 {
		t.Fatalf("a failed CreateRun left approvals: %+v", p.Approvals)
	}
}

func testSameRequestIDInTwoRuns(t *testing.T, s store.Store, c *clock) {
	check(t, create(s, newRun("run_1"), pendingApproval("approve-transfer", nil)), "CreateRun 1")
	check(t, create(s, newRun("run_2"), pendingApproval("approve-transfer", nil)), "CreateRun 2")
	_, err := s.Decide(ctx, "run_2", "approve-transfer", store.Answer{Approve: true, By: person("alice")})
	check(t, err, "Decide")
	a, err := s.GetApproval(ctx, "run_1", "approve-transfer")
	check(t, err, "GetApproval")
	if a.Status != store.StatusPending {
		t.Fatalf("deciding run_2's approval changed run_1's: %s", a.Status)
	}
}

func testDecideApprove(t *testing.T, s store.Store, c *clock) {
	check(t, create(s, newRun("run_1"), pendingApproval("req_a", nil)), "CreateRun")
	_, err := s.Decide(ctx, "run_1", "req_nope", store.Answer{Approve: true})
	mustErr(t, err, store.ErrNotFound, "Decide unknown")
	c.Advance(time.Minute)
	edited := json.RawMessage(`{"to":"bob","amount":5}`)
	got, err := s.Decide(ctx, "run_1", "req_a", store.Answer{Approve: true, By: person("alice"), Reason: "fine", Data: edited})
	check(t, err, "Decide")
	now := c.Now()
	want := pendingApproval("req_a", nil)
	want.RunID, want.Status, want.DecidedBy, want.Reason, want.Data = "run_1", store.StatusApproved, person("alice"), "fine", edited
	want.CreatedAt, want.UpdatedAt, want.DecidedAt = now.Add(-time.Minute), now, &now
	if got.MAC == "" || got.Unverified {
		t.Fatalf("Decide: the decision is not sealed (MAC %q, unverified %v)", got.MAC, got.Unverified)
	}
	want.MAC = got.MAC
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("Decide (-want +got):\n%s", d)
	}
	stored, err := s.GetApproval(ctx, "run_1", "req_a")
	check(t, err, "GetApproval")
	if d := cmp.Diff(want, stored); d != "" {
		t.Fatalf("stored after Decide (-want +got):\n%s", d)
	}
	ans, ok := stored.Answer()
	if !ok || !ans.OK || string(ans.Data) != string(edited) || ans.Who() != person("alice") || ans.ID != "req_a" {
		t.Errorf("Answer() = %+v, %v", ans, ok)
	}
	for _, d := range []store.Answer{{Approve: true, By: person("alice")}, {Approve: false, By: person("bob"), Reason: "changed my mind"}} {
		_, err := s.Decide(ctx, "run_1", "req_a", d)
		mustErr(t, err, store.ErrDecided, "Decide twice")
	}
	stored, _ = s.GetApproval(ctx, "run_1", "req_a")
	if stored.Status != store.StatusApproved || stored.DecidedBy != person("alice") {
		t.Fatalf("a refused second decision changed the approval: %+v", stored)
	}
}

func testDecideDeny(t *testing.T, s store.Store, c *clock) {
	check(t, create(s, newRun("run_1"), pendingApproval("req_a", nil)), "CreateRun")
	got, err := s.Decide(ctx, "run_1", "req_a", store.Answer{Approve: false, By: person("alice"), Reason: "too much", Data: json.RawMessage(`{"x":1}`)})
	check(t, err, "Decide")
	if got.Status != store.StatusDenied || got.Reason != "too much" || got.Data != nil || got.DecidedAt == nil {
		t.Fatalf("denied approval = %+v", got)
	}
	ans, ok := got.Answer()
	if !ok || ans.OK || ans.Reason != "too much" {
		t.Errorf("Answer() = %+v, %v", ans, ok)
	}
	_, err = s.Decide(ctx, "run_1", "req_a", store.Answer{Approve: true, By: person("bob")})
	mustErr(t, err, store.ErrDecided, "approve after deny")
}

func testDecideExpired(t *testing.T, s store.Store, c *clock) {
	exp := c.Now().Add(time.Minute)
	check(t, create(s, newRun("run_1"), pendingApproval("req_a", &exp), pendingApproval("req_b", &exp)), "CreateRun")
	c.Advance(59 * time.Second)
	_, err := s.Decide(ctx, "run_1", "req_b", store.Answer{Approve: true, By: person("alice")})
	check(t, err, "Decide a second before expiry")
	c.Advance(time.Second) // exactly at ExpiresAt: expired
	_, err = s.Decide(ctx, "run_1", "req_a", store.Answer{Approve: true, By: person("alice")})
	mustErr(t, err, store.ErrExpired, "Decide at expiry")
	a, err := s.GetApproval(ctx, "run_1", "req_a")
	check(t, err, "GetApproval")
	if a.Status != store.StatusExpired || !a.DecidedBy.IsZero() {
		t.Fatalf("expired approval stored as %+v", a)
	}
	if ans, ok := a.Answer(); !ok || ans.OK {
		t.Errorf("expired Answer() = %+v, %v; want a decline", ans, ok)
	}
	_, err = s.Decide(ctx, "run_1", "req_a", store.Answer{Approve: true, By: person("alice")})
	mustErr(t, err, store.ErrDecided, "Decide after expiry was recorded")
}

// testDecideActor: an administrator's answer for someone keeps both
// principals, typed, in the approval, its answer, its event and listings.
func testDecideActor(t *testing.T, s store.Store, c *clock) {
	check(t, create(s, newRun("run_1"), pendingApproval("req_a", nil), pendingApproval("req_b", nil)), "CreateRun")
	alice, root := person("alice"), person("root")
	got, err := s.Decide(ctx, "run_1", "req_a", store.Answer{Approve: true, By: alice, Actor: root, Reason: "on call"})
	check(t, err, "Decide")
	if got.DecidedBy != alice || got.Actor != root {
		t.Fatalf("Decide returned by %+v actor %+v, want alice and root", got.DecidedBy, got.Actor)
	}
	_, err = s.Decide(ctx, "run_1", "req_b", store.Answer{Approve: false, By: person("bob"), Reason: "no"})
	check(t, err, "Decide req_b")
	stored, err := s.GetApproval(ctx, "run_1", "req_a")
	check(t, err, "GetApproval")
	if stored.DecidedBy != alice || stored.Actor != root {
		t.Fatalf("stored by %+v actor %+v, want alice and root", stored.DecidedBy, stored.Actor)
	}
	ans, ok := stored.Answer()
	if !ok || ans.Who() != alice || ans.Actor != root {
		t.Errorf("Answer() = %+v, %v; want by alice, actor root", ans, ok)
	}
	page, err := s.ListApprovals(ctx, store.ApprovalFilter{RunID: "run_1"})
	check(t, err, "ListApprovals")
	var actors []tool.Principal
	for _, a := range page.Approvals {
		actors = append(actors, a.Actor)
	}
	if d := cmp.Diff([]tool.Principal{root, {}}, actors); d != "" {
		t.Errorf("listed actors (-want +got); one who decided alone has none:\n%s", d)
	}
	evs := listEvents(t, s, store.EventFilter{RunID: "run_1"})
	if len(evs) != 2 {
		t.Fatalf("%d events, want 2", len(evs))
	}
	var ev store.ApprovalEvent
	check(t, json.Unmarshal(evs[0].Data, &ev), "event data")
	if ev.DecidedBy != alice || ev.Actor != root {
		t.Errorf("event names by %+v actor %+v, want alice and root", ev.DecidedBy, ev.Actor)
	}
	if !strings.Contains(string(evs[0].Data), `"actor":{"kind":"person","name":"root"}`) || strings.Contains(string(evs[1].Data), `"actor"`) {
		t.Errorf("event data: %s and %s; want an actor in the first only", evs[0].Data, evs[1].Data)
	}
}

// testDecideInvalidPrincipal: an answer that names no one, or a principal
// no store can keep or a terminal can show, is refused and changes nothing.
func testDecideInvalidPrincipal(t *testing.T, s store.Store, c *clock) {
	check(t, create(s, newRun("run_1"), pendingApproval("req_a", nil)), "CreateRun")
	for _, d := range []store.Answer{
		{Approve: true},
		{Approve: true, By: tool.Principal{Kind: "god", Name: "x"}},
		{Approve: true, By: tool.Principal{Name: "alice"}},
		{Approve: true, By: person("al\x1b[2Jice")},
		{Approve: true, By: person("al\x00ice")},
		{Approve: true, By: person("\xffalice")},
		{Approve: true, By: person(strings.Repeat("a", storeimpl.MaxPrincipalName+1))},
		{Approve: true, By: person("alice"), Actor: tool.Principal{Kind: "admin", Name: "root"}},
		{Approve: true, By: person("alice"), Actor: person("ro\not")},
	} {
		_, err := s.Decide(ctx, "run_1", "req_a", d)
		mustErr(t, err, store.ErrInvalid, fmt.Sprintf("Decide by %q actor %q", d.By, d.Actor))
	}
	a, err := s.GetApproval(ctx, "run_1", "req_a")
	check(t, err, "GetApproval")
	if a.Status != store.StatusPending || !a.DecidedBy.IsZero() || !a.Actor.IsZero() {
		t.Fatalf("a refused decision changed the approval: %+v", a)
	}
	if evs := listEvents(t, s, store.EventFilter{RunID: "run_1"}); len(evs) != 0 {
		t.Errorf("a refused decision appended %d events", len(evs))
	}
}

func testConsumeOnce(t *testing.T, s store.Store, c *clock) {
	check(t, create(s, newRun("run_1"), pendingApproval("req_a", nil)), "CreateRun")
	_, err := s.Consume(ctx, "run_1", "req_a", "sha256:req_a")
	mustErr(t, err, store.ErrNotApproved, "Consume pending")
	_, err = s.Decide(ctx, "run_1", "req_a", store.Answer{Approve: true, By: person("alice")})
	check(t, err, "Decide")
	_, err = s.Consume(ctx, "run_1", "req_a", "sha256:other")
	mustErr(t, err, store.ErrDigestMismatch, "Consume with another digest")
	if a, _ := s.GetApproval(ctx, "run_1", "req_a"); a.Status != store.StatusApproved {
		t.Fatalf("a digest mismatch changed the approval to %s", a.Status)
	}
	c.Advance(time.Second)
	got, err := s.Consume(ctx, "run_1", "req_a", "sha256:req_a")
	check(t, err, "Consume")
	if got.Status != store.StatusUsed || got.UsedAt == nil || !got.UsedAt.Equal(c.Now()) {
		t.Fatalf("consumed approval = %+v", got)
	}
	_, err = s.Consume(ctx, "run_1", "req_a", "sha256:req_a")
	mustErr(t, err, store.ErrUsed, "Consume twice")
	_, err = s.Consume(ctx, "run_1", "req_nope", "x")
	mustErr(t, err, store.ErrNotFound, "Consume unknown")
}

// An input request's or a question's answer (what a person typed into an
// MCP server's form: a token, say) is given to the call once, by Consume, and no
// longer kept: the stored approval is used, answered by the same person,
// its data a marker, and its seal verifies. An approval's edited
// arguments stay.
func testConsumeRedactsInput(t *testing.T, s store.Store, c *clock) {
	in := pendingApproval("req_in", nil)
	in.Kind, in.Request.Kind = tool.KindInput, tool.KindInput
	q := pendingApproval("req_q", nil)
	q.Kind, q.Request.Kind = tool.KindQuestion, tool.KindQuestion
	edit := pendingApproval("req_ap", nil)
	check(t, create(s, newRun("run_1"), in, q, edit), "CreateRun")
	_, err := s.Decide(ctx, "run_1", "req_q", store.Answer{Approve: true, By: person("alice"), Data: json.RawMessage(`{"answers":[["SECRET"]]}`)})
	check(t, err, "Decide question")
	_, err = s.Consume(ctx, "run_1", "req_q", "sha256:req_q")
	check(t, err, "Consume question")
	secret := json.RawMessage(`{"answers":[["ghp_SECRETSECRET"]]}`)
	_, err = s.Decide(ctx, "run_1", "req_in", store.Answer{Approve: true, By: person("alice"), Data: secret})
	check(t, err, "Decide input")
	edited := json.RawMessage(`{"to":"bob","amount":5}`)
	_, err = s.Decide(ctx, "run_1", "req_ap", store.Answer{Approve: true, By: person("alice"), Data: edited})
	check(t, err, "Decide approval")
	if a, _ := s.GetApproval(ctx, "run_1", "req_in"); string(a.Data) != string(secret) {
		t.Fatalf("before its use the answer is %s", a.Data)
	}
	got, err := s.Consume(ctx, "run_1", "req_in", "sha256:req_in")
	check(t, err, "Consume")
	if ans, ok := got.Answer(); !ok || !ans.OK || string(ans.Data) != string(secret) {
		t.Fatalf("Consume gave the answer %+v, %v; want the person's data", ans, ok)
	}
	a, err := s.GetApproval(ctx, "run_1", "req_in")
	check(t, err, "GetApproval")
	if strings.Contains(string(a.Data), "SECRET") || string(a.Data) != string(storeimpl.RedactedAnswer) {
		t.Errorf("the used answer is kept: %s", a.Data)
	}
	if a.Status != store.StatusUsed || a.DecidedBy != person("alice") || a.Unverified {
		t.Errorf("used input = status %s, by %v, unverified %v", a.Status, a.DecidedBy, a.Unverified)
	}
	for ap, err := range store.AllApprovals(ctx, s, store.ApprovalFilter{RunID: "run_1", AllTenants: true}) {
		check(t, err, "ListApprovals")
		if strings.Contains(string(ap.Data), "SECRET") || ap.Unverified {
			t.Errorf("listed %s: data %s, unverified %v", ap.ID, ap.Data, ap.Unverified)
		}
	}
	_, err = s.Consume(ctx, "run_1", "req_ap", "sha256:req_ap")
	check(t, err, "Consume approval")
	if a, _ := s.GetApproval(ctx, "run_1", "req_ap"); string(a.Data) != string(edited) || a.Unverified {
		t.Errorf("used approval's edited arguments = %s (unverified %v), want kept", a.Data, a.Unverified)
	}
}

func testConsumeRefusals(t *testing.T, s store.Store, c *clock) {
	exp := c.Now().Add(time.Minute)
	check(t, create(s, newRun("run_1"), pendingApproval("req_denied", nil), pendingApproval("req_late", &exp)), "CreateRun")
	_, err := s.Decide(ctx, "run_1", "req_denied", store.Answer{Approve: false, By: person("alice"), Reason: "no"})
	check(t, err, "Decide deny")
	_, err = s.Consume(ctx, "run_1", "req_denied", "sha256:req_denied")
	mustErr(t, err, store.ErrNotApproved, "Consume denied")
	_, err = s.Decide(ctx, "run_1", "req_late", store.Answer{Approve: true, By: person("alice")})
	check(t, err, "Decide approve")
	c.Advance(2 * time.Minute)
	_, err = s.Consume(ctx, "run_1", "req_late", "sha256:req_late")
	mustErr(t, err, store.ErrExpired, "Consume after expiry")
	a, _ := s.GetApproval(ctx, "run_1", "req_late")
	if a.Status != store.StatusExpired {
		t.Fatalf("approval consumed after expiry stored as %s, want expired", a.Status)
	}
	_, err = s.Consume(ctx, "run_1", "req_late", "sha256:req_late")
	mustErr(t, err, store.ErrNotApproved, "Consume expired")
}

const racers = 12

// race runs fn from racers goroutines at once and returns how many succeeded;
// every failure must be one of allowed.
func race(t *testing.T, fn func(i int) error, allowed ...error) int {
	t.Helper()
	var ok atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, racers)
	for i := 0; i < racers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			err := fn(i)
			if err == nil {
				ok.Add(1)
				return
			}
			for _, a := range allowed {
				if errors.Is(err, a) {
					return
				}
			}
			errs <- err
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("unexpected error: %v", err)
	}
	return int(ok.Load())
}

func testConcurrentDecide(t *testing.T, s store.Store, c *clock) {
	check(t, create(s, newRun("run_1"), pendingApproval("req_a", nil)), "CreateRun")
	n := race(t, func(i int) error {
		_, err := s.Decide(ctx, "run_1", "req_a", store.Answer{Approve: i%2 == 0, By: person(fmt.Sprintf("p%d", i))})
		return err
	}, store.ErrDecided)
	if n != 1 {
		t.Fatalf("%d concurrent decisions succeeded, want exactly 1", n)
	}
}

func testConcurrentConsume(t *testing.T, s store.Store, c *clock) {
	check(t, create(s, newRun("run_1"), pendingApproval("req_a", nil)), "CreateRun")
	_, err := s.Decide(ctx, "run_1", "req_a", store.Answer{Approve: true, By: person("alice")})
	check(t, err, "Decide")
	n := race(t, func(int) error {
		_, err := s.Consume(ctx, "run_1", "req_a", "sha256:req_a")
		return err
	}, store.ErrUsed)
	if n != 1 {
		t.Fatalf("%d concurrent uses succeeded, want exactly 1", n)
	}
}

func testConcurrentUpdateRun(t *testing.T, s store.Store, c *clock) {
	check(t, create(s, newRun("run_1")), "CreateRun")
	n := race(t, func(i int) error {
		return update(s, "run_1", store.RunUpdate{From: store.RunPending, Status: store.RunResuming, State: json.RawMessage(fmt.Sprintf(`{"by":%d}`, i))})
	}, store.ErrConflict)
	if n != 1 {
		t.Fatalf("%d concurrent claims of one run succeeded, want exactly 1", n)
	}
}
