package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tollgate-dev/tollgate/internal/storeimpl"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// hostTests are the parts of the suite about what hosts need beyond
// approvals: the event log, leases, pagination, tenants and pruning.
var hostTests = []struct {
	name string
	fn   func(t *testing.T, s store.Store, c *clock)
}{
	{"Events", testEvents},
	{"EventsAreAtomic", testEventsAreAtomic},
	{"EventsWithRuns", testEventsWithRuns},
	{"EventsOfApprovals", testEventsOfApprovals},
	{"ExpireApprovals", testExpireApprovals},
	{"ConcurrentEvents", func(t *testing.T, s store.Store, c *clock) { concurrentEvents(t, s, s) }},
	{"WaitEvents", func(t *testing.T, s store.Store, c *clock) { waitEvents(t, s, s) }},
	{"Leases", testLeases},
	{"LeaseAtCreation", testLeaseAtCreation},
	{"CreateRefusals", testCreateRefusals},
	{"ClaimUses", testClaimUses},
	{"ClaimUsesAtomic", testClaimUsesAtomic},
	{"ConcurrentClaim", func(t *testing.T, s store.Store, c *clock) { concurrentClaim(t, s, s) }},
	{"Pagination", testPagination},
	{"PaginationUnderInserts", func(t *testing.T, s store.Store, c *clock) { paginationUnderInserts(t, s, s) }},
	{"BadCursors", testBadCursors},
	{"Tenants", testTenants},
	{"Owners", testOwners},
	{"Prune", testPrune},
}

// PairFunc returns two handles on one new, empty store, as two processes
// would open it (for SQLite, two opens of one file; for a server database,
// two connections). The suite closes both.
type PairFunc func(t *testing.T, opts *store.Options) (store.Store, store.Store)

// RunShared runs the suite's concurrency tests across two handles on one
// store: claims, event order, waiting for events written through the other
// handle, and pagination under inserts.
func RunShared(t *testing.T, newPair PairFunc) {
	for _, tt := range []struct {
		name string
		fn   func(t *testing.T, a, b store.Store)
	}{
		{"ConcurrentClaim", concurrentClaim},
		{"ConcurrentEvents", concurrentEvents},
		{"WaitEvents", waitEvents},
		{"PaginationUnderInserts", paginationUnderInserts},
		{"DecideSeenByOther", decideSeenByOther},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &clock{t: time.Date(2030, 1, 2, 3, 4, 5, 600_000_000, time.UTC)}
			a, b := newPair(t, &store.Options{Now: c.Now})
			t.Cleanup(func() {
				if err := errors.Join(a.Close(), b.Close()); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tt.fn(t, a, b)
		})
	}
}

func appendEvents(t *testing.T, s store.Store, evs ...store.Event) []int64 {
	t.Helper()
	seqs, err := s.AppendEvents(ctx, evs...)
	check(t, err, "AppendEvents")
	if len(seqs) != len(evs) {
		t.Fatalf("AppendEvents of %d events returned %d seqs", len(evs), len(seqs))
	}
	return seqs
}

func listEvents(t *testing.T, s store.Store, f store.EventFilter) []store.Event {
	t.Helper()
	evs, err := s.ListEvents(ctx, f)
	check(t, err, "ListEvents")
	return evs
}

// eventKeys returns "runID/type" of each event.
func eventKeys(evs []store.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.RunID+"/"+e.Type)
	}
	return out
}

func testEvents(t *testing.T, s store.Store, c *clock) {
	if evs := listEvents(t, s, store.EventFilter{AllTenants: true}); len(evs) != 0 {
		t.Fatalf("a new store has events: %+v", evs)
	}
	given := c.Now().Add(-time.Hour)
	seqs := appendEvents(t, s,
		store.Event{Type: "store.opened", Data: json.RawMessage(`{"by":"test"}`)},
		store.Event{Type: "note", Time: given},
	)
	c.Advance(time.Second)
	seqs = append(seqs, appendEvents(t, s, store.Event{Type: "note", Tenant: "acme", Data: json.RawMessage(`[1,2]`)})...)
	if seqs[0] <= 0 || !slices.IsSorted(seqs) || seqs[0] == seqs[1] || seqs[1] == seqs[2] {
		t.Fatalf("seqs %v: want positive and strictly increasing", seqs)
	}
	all := listEvents(t, s, store.EventFilter{AllTenants: true})
	want := []store.Event{
		{Seq: seqs[0], Type: "store.opened", Time: c.Now().Add(-time.Second), Data: json.RawMessage(`{"by":"test"}`)},
		{Seq: seqs[1], Type: "note", Time: given},
		{Seq: seqs[2], Tenant: "acme", Type: "note", Time: c.Now(), Data: json.RawMessage(`[1,2]`)},
	}
	if d := cmp.Diff(want, all); d != "" {
		t.Fatalf("ListEvents (-want +got); the store sets Seq, and Time when zero:\n%s", d)
	}
	if d := cmp.Diff(want[:2], listEvents(t, s, store.EventFilter{})); d != "" {
		t.Errorf("ListEvents of the default tenant (-want +got):\n%s", d)
	}
	if d := cmp.Diff(want[2:], listEvents(t, s, store.EventFilter{Tenant: "acme"})); d != "" {
		t.Errorf("ListEvents of tenant acme (-want +got):\n%s", d)
	}
	if d := cmp.Diff(want[1:], listEvents(t, s, store.EventFilter{AllTenants: true, AfterSeq: seqs[0]})); d != "" {
		t.Errorf("ListEvents after the first (-want +got):\n%s", d)
	}
	if d := cmp.Diff(want[:1], listEvents(t, s, store.EventFilter{AllTenants: true, Limit: 1})); d != "" {
		t.Errorf("ListEvents with limit 1 (-want +got):\n%s", d)
	}
	if evs := listEvents(t, s, store.EventFilter{AllTenants: true, AfterSeq: seqs[2]}); len(evs) != 0 {
		t.Errorf("ListEvents after the last: %+v", evs)
	}
	_, err := s.ListEvents(ctx, store.EventFilter{Limit: -1})
	mustErr(t, err, store.ErrInvalid, "ListEvents with a negative limit")

	for _, tt := range []struct {
		ev   store.Event
		want error
	}{
		{store.Event{}, store.ErrInvalid},
		{store.Event{Type: strings.Repeat("x", storeimpl.MaxEventType+1)}, store.ErrInvalid},
		{store.Event{Type: "note", Data: json.RawMessage(`{"a":`)}, store.ErrInvalid},
		{store.Event{Type: "note", Data: json.RawMessage(`"` + strings.Repeat("x", storeimpl.MaxEventData) + `"`)}, store.ErrInvalid},
		{store.Event{Type: "note", RunID: "run_nope"}, store.ErrNotFound},
	} {
		_, err := s.AppendEvents(ctx, tt.ev)
		mustErr(t, err, tt.want, fmt.Sprintf("AppendEvents(type %.20q, run %q)", tt.ev.Type, tt.ev.RunID))
	}
	if n := len(listEvents(t, s, store.EventFilter{AllTenants: true})); n != 3 {
		t.Fatalf("refused appends left %d events, want 3", n)
	}
}

func testEventsAreAtomic(t *testing.T, s store.Store, c *clock) {
	_, err := s.AppendEvents(ctx, store.Event{Type: "a"}, store.Event{Type: "b"}, store.Event{})
	mustErr(t, err, store.ErrInvalid, "AppendEvents with a bad third event")
	if evs := listEvents(t, s, store.EventFilter{AllTenants: true}); len(evs) != 0 {
		t.Fatalf("a refused batch appended %v", eventKeys(evs))
	}
	seqs := appendEvents(t, s, store.Event{Type: "a"})
	// A refused append does not leave a hole that a later event fills
	// behind a reader: the next event follows the last one.
	more := appendEvents(t, s, store.Event{Type: "b"})
	if more[0] <= seqs[0] {
		t.Fatalf("seq %d after %d", more[0], seqs[0])
	}
}

func testEventsWithRuns(t *testing.T, s store.Store, c *clock) {
	run := newRun("run_1")
	run.Tenant = "acme"
	_, err := s.CreateRun(ctx, store.CreateRunRequest{Run: run, Events: []store.Event{
		{Type: "run.started", RunID: "ignored", Data: json.RawMessage(`{"n":1}`)},
	}})
	check(t, err, "CreateRun with an event")
	_, err = s.UpdateRun(ctx, "run_1", store.RunUpdate{From: store.RunRunning, Events: []store.Event{{Type: "lost"}}})
	mustErr(t, err, store.ErrConflict, "UpdateRun with an event from the wrong status")
	_, err = s.UpdateRun(ctx, "run_1", store.RunUpdate{Status: store.RunDone, Events: []store.Event{{Type: "bad", Data: json.RawMessage(`nope`)}}})
	mustErr(t, err, store.ErrInvalid, "UpdateRun with a bad event")
	if r, _ := s.GetRun(ctx, "run_1"); r.Status != store.RunPending {
		t.Fatalf("UpdateRun with a bad event changed the status to %s", r.Status)
	}
	_, err = s.UpdateRun(ctx, "run_1", store.RunUpdate{From: store.RunPending, Status: store.RunResuming, Events: []store.Event{{Type: "run.resumed"}, {Type: "turn.done"}}})
	check(t, err, "UpdateRun with events")
	_, err = s.AppendEvents(ctx, store.Event{Type: "x", RunID: "run_1", Tenant: "globex"})
	mustErr(t, err, store.ErrInvalid, "an event of an acme run in tenant globex")
	appendEvents(t, s, store.Event{Type: "tool.called", RunID: "run_1"})
	check(t, create(s, newRun("run_2")), "CreateRun 2")
	appendEvents(t, s, store.Event{Type: "run.started", RunID: "run_2"})

	got := listEvents(t, s, store.EventFilter{Tenant: "acme", RunID: "run_1"})
	if d := cmp.Diff([]string{"run_1/run.started", "run_1/run.resumed", "run_1/turn.done", "run_1/tool.called"}, eventKeys(got)); d != "" {
		t.Fatalf("events of run_1 (-want +got):\n%s", d)
	}
	for _, e := range got {
		if e.Tenant != "acme" {
			t.Errorf("event %d of an acme run has tenant %q", e.Seq, e.Tenant)
		}
	}
	if evs := listEvents(t, s, store.EventFilter{RunID: "run_1"}); len(evs) != 0 {
		t.Errorf("the default tenant sees acme's run_1 events: %v", eventKeys(evs))
	}
	if d := cmp.Diff([]string{"run_2/run.started"}, eventKeys(listEvents(t, s, store.EventFilter{}))); d != "" {
		t.Errorf("events of the default tenant (-want +got):\n%s", d)
	}
}

func testEventsOfApprovals(t *testing.T, s store.Store, c *clock) {
	exp := c.Now().Add(time.Minute)
	run := newRun("run_1")
	run.Tenant = "acme"
	_, err := s.CreateRun(ctx, store.CreateRunRequest{Run: run, Approvals: []store.Approval{pendingApproval("req_a", nil), pendingApproval("req_b", &exp), pendingApproval("req_c", &exp)}})
	check(t, err, "CreateRun")
	f := store.EventFilter{Tenant: "acme"}
	_, err = s.Decide(ctx, "run_1", "req_a", store.Answer{Approve: false, By: person("alice"), Reason: "too much", Data: json.RawMessage(`{"secret":1}`)})
	check(t, err, "Decide")
	_, err = s.Decide(ctx, "run_1", "req_c", store.Answer{Approve: true, By: person("bob"), Data: json.RawMessage(`{"amount":5}`)})
	check(t, err, "Decide req_c")
	_, err = s.Decide(ctx, "run_1", "req_a", store.Answer{Approve: true, By: person("mallory")})
	mustErr(t, err, store.ErrDecided, "Decide twice")
	c.Advance(time.Minute)
	_, err = s.Decide(ctx, "run_1", "req_b", store.Answer{Approve: true, By: person("alice")})
	mustErr(t, err, store.ErrExpired, "Decide at expiry")
	_, err = s.Consume(ctx, "run_1", "req_c", "sha256:req_c")
	mustErr(t, err, store.ErrExpired, "Consume at expiry")
	evs := listEvents(t, s, f)
	if d := cmp.Diff([]string{"run_1/approval.decided", "run_1/approval.decided", "run_1/approval.expired", "run_1/approval.expired"}, eventKeys(evs)); d != "" {
		t.Fatalf("events of decisions (-want +got); a refused decision appends nothing:\n%s", d)
	}
	var data []store.ApprovalEvent
	for _, e := range evs {
		var d store.ApprovalEvent
		check(t, json.Unmarshal(e.Data, &d), "event data")
		data = append(data, d)
		if e.Tenant != "acme" {
			t.Errorf("approval event in tenant %q, want the run's", e.Tenant)
		}
	}
	want := []store.ApprovalEvent{
		{ApprovalID: "req_a", CallID: "call_req_a", Tool: "transfer_funds", Status: store.StatusDenied, DecidedBy: person("alice"), Reason: "too much"},
		{ApprovalID: "req_c", CallID: "call_req_c", Tool: "transfer_funds", Status: store.StatusApproved, DecidedBy: person("bob")},
		{ApprovalID: "req_b", CallID: "call_req_b", Tool: "transfer_funds", Status: store.StatusExpired},
		{ApprovalID: "req_c", CallID: "call_req_c", Tool: "transfer_funds", Status: store.StatusExpired, DecidedBy: person("bob")},
	}
	if d := cmp.Diff(want, data); d != "" {
		t.Fatalf("approval event data (-want +got); never the answer's data:\n%s", d)
	}
}

func testExpireApprovals(t *testing.T, s store.Store, c *clock) {
	soon, later := c.Now().Add(time.Minute), c.Now().Add(time.Hour)
	check(t, create(s, newRun("run_1"), pendingApproval("req_soon", &soon), pendingApproval("req_later", &later), pendingApproval("req_never", nil), pendingApproval("req_approved", &soon), pendingApproval("req_denied", &soon)), "CreateRun")
	_, err := s.Decide(ctx, "run_1", "req_approved", store.Answer{Approve: true, By: person("alice")})
	check(t, err, "Decide")
	_, err = s.Decide(ctx, "run_1", "req_denied", store.Answer{Approve: false, By: person("alice")})
	check(t, err, "Decide")
	got, err := s.ExpireApprovals(ctx)
	check(t, err, "ExpireApprovals before any expiry")
	if len(got) != 0 {
		t.Fatalf("ExpireApprovals expired %d approvals before their time", len(got))
	}
	c.Advance(time.Minute)
	got, err = s.ExpireApprovals(ctx)
	check(t, err, "ExpireApprovals")
	var ids []string
	for _, a := range got {
		ids = append(ids, a.ID+":"+string(a.Status))
	}
	if d := cmp.Diff([]string{"req_soon:expired", "req_approved:expired"}, ids); d != "" {
		t.Fatalf("ExpireApprovals (-want +got):\n%s", d)
	}
	if a, _ := s.GetApproval(ctx, "run_1", "req_soon"); a.Status != store.StatusExpired || !a.UpdatedAt.Equal(c.Now()) {
		t.Errorf("stored after ExpireApprovals: %s at %s", a.Status, a.UpdatedAt)
	}
	evs := listEvents(t, s, store.EventFilter{Limit: store.MaxLimit})
	if d := cmp.Diff([]string{"run_1/approval.decided", "run_1/approval.decided", "run_1/approval.expired", "run_1/approval.expired"}, eventKeys(evs)); d != "" {
		t.Fatalf("events (-want +got):\n%s", d)
	}
	if got, _ := s.ExpireApprovals(ctx); len(got) != 0 {
		t.Fatalf("ExpireApprovals twice expired %d again", len(got))
	}
}

// concurrentEvents appends from many goroutines through a and b while a
// reader follows the log through b: every seq is returned once, and the
// reader never sees an event appear behind a position it has read past.
func concurrentEvents(t *testing.T, a, b store.Store) {
	const per = 8
	done, stop := make(chan struct{}), make(chan struct{})
	var seen []int64
	var readErr error
	go func() {
		defer close(done)
		var after int64
		for {
			// Whether the appenders are done, taken before the read, so that
			// a read that finds nothing after they are done is the last.
			stopped := false
			select {
			case <-stop:
				stopped = true
			default:
			}
			evs, err := b.ListEvents(ctx, store.EventFilter{AfterSeq: after, Limit: store.MaxLimit})
			if err != nil {
				readErr = err
				return
			}
			for _, e := range evs {
				seen = append(seen, e.Seq)
				after = e.Seq
			}
			if len(evs) == 0 && stopped {
				return
			}
		}
	}()
	var mu sync.Mutex
	var returned []int64
	n := race(t, func(i int) error {
		s := a
		if i%2 == 1 {
			s = b
		}
		for j := range per / 2 {
			seqs, err := s.AppendEvents(ctx, store.Event{Type: "tick", Data: json.RawMessage(fmt.Sprintf(`[%d,%d,0]`, i, j))}, store.Event{Type: "tick", Data: json.RawMessage(fmt.Sprintf(`[%d,%d,1]`, i, j))})
			if err != nil {
				return err
			}
			if seqs[1] <= seqs[0] {
				return fmt.Errorf("one batch got seqs %v", seqs)
			}
			mu.Lock()
			returned = append(returned, seqs...)
			mu.Unlock()
		}
		return nil
	})
	close(stop)
	<-done
	if n != racers {
		t.Fatalf("%d of %d appenders succeeded", n, racers)
	}
	check(t, readErr, "ListEvents while appending")
	slices.Sort(returned)
	if len(slices.Compact(slices.Clone(returned))) != len(returned) {
		t.Fatalf("AppendEvents returned a seq twice: %v", returned)
	}
	var all []int64
	for _, e := range listEvents(t, a, store.EventFilter{Limit: store.MaxLimit}) {
		all = append(all, e.Seq)
	}
	if d := cmp.Diff(returned, all); d != "" {
		t.Fatalf("the log holds other seqs than the appends returned (-returned +log):\n%s", d)
	}
	if d := cmp.Diff(all, seen); d != "" {
		t.Fatalf("a reader following the log missed events that appeared behind it (-log +seen):\n%s", d)
	}
}

// waitFor starts WaitEvents(f) on s and returns a channel that gets its
// result.
func waitFor(s store.Store, f store.EventFilter) (<-chan error, context.CancelFunc) {
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	out := make(chan error, 1)
	go func() { out <- s.WaitEvents(wctx, f) }()
	return out, cancel
}

func waitEvents(t *testing.T, a, b store.Store) {
	check(t, create(a, newRun("run_1"), pendingApproval("req_a", nil)), "CreateRun")
	check(t, create(a, newRun("run_2")), "CreateRun 2")
	seqs := appendEvents(t, a, store.Event{Type: "run.started", RunID: "run_1"})

	// An event already there: at once.
	check(t, b.WaitEvents(ctx, store.EventFilter{RunID: "run_1"}), "WaitEvents with an event present")

	// Nothing yet: WaitEvents waits until ctx ends.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	err := b.WaitEvents(short, store.EventFilter{RunID: "run_1", AfterSeq: seqs[0]})
	cancel()
	mustErr(t, err, context.DeadlineExceeded, "WaitEvents with nothing to wait for")

	// Woken by an append through the other handle, not by another run's.
	got, stop := waitFor(b, store.EventFilter{RunID: "run_1", AfterSeq: seqs[0]})
	defer stop()
	appendEvents(t, a, store.Event{Type: "run.started", RunID: "run_2"})
	select {
	case err := <-got:
		t.Fatalf("WaitEvents for run_1 returned %v after an event of run_2", err)
	case <-time.After(500 * time.Millisecond): // longer than a poll
	}
	appendEvents(t, a, store.Event{Type: "turn.done", RunID: "run_1"})
	check(t, <-got, "WaitEvents woken by an append")

	// Woken by a decision: waiting for events covers waiting for answers.
	last := listEvents(t, a, store.EventFilter{Limit: store.MaxLimit})
	got, stop2 := waitFor(b, store.EventFilter{RunID: "run_1", AfterSeq: last[len(last)-1].Seq})
	defer stop2()
	_, err = a.Decide(ctx, "run_1", "req_a", store.Answer{Approve: true, By: person("alice")})
	check(t, err, "Decide")
	check(t, <-got, "WaitEvents woken by Decide")

	// Another tenant's events do not wake the default tenant's waiter.
	check(t, create(a, store.Run{ID: "run_3", Tenant: "acme", Status: store.RunRunning}), "CreateRun acme")
	last = listEvents(t, a, store.EventFilter{AllTenants: true, Limit: store.MaxLimit})
	short, cancel = context.WithTimeout(ctx, 50*time.Millisecond)
	appended := make(chan error, 1)
	go func() {
		_, err := a.AppendEvents(ctx, store.Event{Type: "run.started", RunID: "run_3"})
		appended <- err
	}()
	err = b.WaitEvents(short, store.EventFilter{AfterSeq: last[len(last)-1].Seq})
	cancel()
	check(t, <-appended, "AppendEvents of acme")
	mustErr(t, err, context.DeadlineExceeded, "WaitEvents of the default tenant after an acme event")
}

func decideSeenByOther(t *testing.T, a, b store.Store) {
	check(t, create(a, newRun("run_1"), pendingApproval("req_a", nil)), "CreateRun")
	_, err := b.Decide(ctx, "run_1", "req_a", store.Answer{Approve: true, By: person("alice")})
	check(t, err, "Decide through b")
	got, err := a.GetApproval(ctx, "run_1", "req_a")
	check(t, err, "GetApproval through a")
	if got.Status != store.StatusApproved {
		t.Fatalf("a sees %s after b approved", got.Status)
	}
	n := race(t, func(i int) error {
		s := a
		if i%2 == 1 {
			s = b
		}
		_, err := s.Consume(ctx, "run_1", "req_a", "sha256:req_a")
		return err
	}, store.ErrUsed)
	if n != 1 {
		t.Fatalf("%d uses through two handles succeeded, want exactly 1", n)
	}
}

func claim(holder string, ttl time.Duration, to store.RunStatus, from ...store.RunStatus) store.Claim {
	return store.Claim{Holder: holder, TTL: ttl, From: from, To: to}
}

func testLeases(t *testing.T, s store.Store, c *clock) {
	check(t, create(s, newRun("run_1")), "CreateRun")
	_, _, err := s.ClaimRun(ctx, "run_nope", claim("w1", time.Minute, store.RunResuming, store.RunPending))
	mustErr(t, err, store.ErrNotFound, "ClaimRun of an unknown run")
	for _, bad := range []store.Claim{
		claim("", time.Minute, store.RunResuming, store.RunPending),
		claim("w1", 0, store.RunResuming, store.RunPending),
		claim("w1", time.Minute, store.RunResuming),
	} {
		_, _, err := s.ClaimRun(ctx, "run_1", bad)
		mustErr(t, err, store.ErrInvalid, fmt.Sprintf("ClaimRun(%+v)", bad))
	}
	_, _, err = s.ClaimRun(ctx, "run_1", claim("w1", time.Minute, store.RunResuming, store.RunRunning))
	mustErr(t, err, store.ErrConflict, "ClaimRun from another status")

	c.Advance(time.Second)
	r, _, err := s.ClaimRun(ctx, "run_1", claim("w1", time.Minute, store.RunResuming, store.RunPending))
	check(t, err, "ClaimRun")
	want := &store.Lease{Holder: "w1", Token: 1, ExpiresAt: c.Now().Add(time.Minute)}
	if d := cmp.Diff(want, r.Lease); d != "" || r.Status != store.RunResuming || r.Version != 2 || !r.UpdatedAt.Equal(c.Now()) {
		t.Fatalf("claimed run: status %s, version %d, updated %s, lease (-want +got):\n%s", r.Status, r.Version, r.UpdatedAt, d)
	}
	stored, err := s.GetRun(ctx, "run_1")
	check(t, err, "GetRun")
	if d := cmp.Diff(r, stored); d != "" {
		t.Fatalf("stored claimed run (-returned +stored):\n%s", d)
	}

	_, _, err = s.ClaimRun(ctx, "run_1", claim("w2", time.Minute, store.RunResuming, store.RunResuming))
	mustErr(t, err, store.ErrLeased, "ClaimRun of a leased run")
	if msg, until := err.Error(), c.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano); !strings.Contains(msg, `"w1"`) || !strings.Contains(msg, "run_1") || !strings.Contains(msg, until) {
		t.Errorf("ErrLeased does not name the run, the holder and the expiry (%s): %v", until, err)
	}
	_, err = s.RenewLease(ctx, "run_1", "w2", 1, time.Minute)
	mustErr(t, err, store.ErrLeaseLost, "RenewLease by another holder")
	_, err = s.RenewLease(ctx, "run_1", "w1", 7, time.Minute)
	mustErr(t, err, store.ErrLeaseLost, "RenewLease with another token")
	_, err = s.RenewLease(ctx, "run_1", "w1", 1, 0)
	mustErr(t, err, store.ErrInvalid, "RenewLease with no TTL")
	_, err = s.RenewLease(ctx, "run_nope", "w1", 1, time.Minute)
	mustErr(t, err, store.ErrNotFound, "RenewLease of an unknown run")

	c.Advance(30 * time.Second)
	l, err := s.RenewLease(ctx, "run_1", "w1", 1, time.Minute)
	check(t, err, "RenewLease")
	if d := cmp.Diff(store.Lease{Holder: "w1", Token: 1, ExpiresAt: c.Now().Add(time.Minute)}, l); d != "" {
		t.Fatalf("renewed lease (-want +got):\n%s", d)
	}
	c.Advance(59 * time.Second)
	_, _, err = s.ClaimRun(ctx, "run_1", claim("w2", time.Minute, store.RunResuming, store.RunResuming))
	mustErr(t, err, store.ErrLeased, "ClaimRun a second before the renewed lease expires")

	// The holder checkpoints under its lease.
	r, err = s.UpdateRun(ctx, "run_1", store.RunUpdate{LeaseToken: 1, State: json.RawMessage(`{"turn":1}`)})
	check(t, err, "fenced UpdateRun by the holder")
	if r.Lease == nil || r.Lease.Token != 1 {
		t.Fatalf("a checkpoint changed the lease: %+v", r.Lease)
	}

	// w1 stalls; its lease expires, and w2 takes the run over.
	c.Advance(time.Second)
	r, _, err = s.ClaimRun(ctx, "run_1", claim("w2", time.Minute, "", store.RunResuming))
	check(t, err, "ClaimRun after expiry")
	if r.Lease.Holder != "w2" || r.Lease.Token != 2 || r.Status != store.RunResuming {
		t.Fatalf("taken over: status %s, lease %+v; want resuming, w2 with token 2", r.Status, r.Lease)
	}
	_, err = s.RenewLease(ctx, "run_1", "w1", 1, time.Minute)
	mustErr(t, err, store.ErrLeaseLost, "RenewLease after a takeover")
	_, err = s.UpdateRun(ctx, "run_1", store.RunUpdate{LeaseToken: 1, Status: store.RunDone, State: json.RawMessage(`{"turn":"stale"}`),
		Approvals: []store.Approval{pendingApproval("req_stale", nil)}, Events: []store.Event{{Type: "stale"}}})
	mustErr(t, err, store.ErrLeaseLost, "fenced UpdateRun after a takeover")
	after, err := s.GetRun(ctx, "run_1")
	check(t, err, "GetRun")
	if d := cmp.Diff(r, after); d != "" {
		t.Fatalf("a refused fenced update changed the run (-before +after):\n%s", d)
	}
	if _, err := s.GetApproval(ctx, "run_1", "req_stale"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused fenced update added an approval: %v", err)
	}
	if evs := listEvents(t, s, store.EventFilter{RunID: "run_1"}); len(evs) != 0 {
		t.Errorf("a refused fenced update appended %v", eventKeys(evs))
	}

	// The holder claims again: a new token. Then it releases the run.
	r, _, err = s.ClaimRun(ctx, "run_1", claim("w2", time.Minute, "", store.RunResuming))
	check(t, err, "ClaimRun by the holder")
	if r.Lease.Token != 3 {
		t.Fatalf("a holder's second claim got token %d, want 3", r.Lease.Token)
	}
	r, err = s.UpdateRun(ctx, "run_1", store.RunUpdate{LeaseToken: 3, Status: store.RunPending, ReleaseLease: true})
	check(t, err, "UpdateRun releasing the lease")
	if r.Lease != nil || r.Status != store.RunPending {
		t.Fatalf("released: status %s, lease %+v", r.Status, r.Lease)
	}
	_, err = s.RenewLease(ctx, "run_1", "w2", 3, time.Minute)
	mustErr(t, err, store.ErrLeaseLost, "RenewLease after release")
	_, err = s.UpdateRun(ctx, "run_1", store.RunUpdate{LeaseToken: 3, Status: store.RunDone})
	mustErr(t, err, store.ErrLeaseLost, "fenced UpdateRun after release")
	r, _, err = s.ClaimRun(ctx, "run_1", claim("w1", time.Minute, store.RunResuming, store.RunPending))
	check(t, err, "ClaimRun after release, before any expiry")
	if r.Lease.Token != 4 {
		t.Fatalf("a claim after release got token %d; tokens are never reused, want 4", r.Lease.Token)
	}

	// A lease that expired without a takeover is still the holder's.
	c.Advance(2 * time.Minute)
	_, err = s.RenewLease(ctx, "run_1", "w1", 4, time.Minute)
	check(t, err, "RenewLease of an expired lease nobody took over")
}

func testCreateRefusals(t *testing.T, s store.Store, c *clock) {
	for _, tt := range []struct {
		name string
		r    store.CreateRunRequest
	}{
		{"no ID", store.CreateRunRequest{Run: store.Run{Status: store.RunPending}}},
		{"no status", store.CreateRunRequest{Run: store.Run{ID: "run_1"}}},
		{"an approval with no ID", store.CreateRunRequest{Run: newRun("run_1"), Approvals: []store.Approval{{}}}},
		{"a bad event", store.CreateRunRequest{Run: newRun("run_1"), Events: []store.Event{{Type: "x", Data: json.RawMessage("{")}}}},
		{"a holder with no TTL", store.CreateRunRequest{Run: newRun("run_1"), Holder: "w1"}},
	} {
		_, err := s.CreateRun(ctx, tt.r)
		mustErr(t, err, store.ErrInvalid, "CreateRun with "+tt.name)
	}
	if ids := runIDs(t, s, store.RunFilter{AllTenants: true}); len(ids) != 0 {
		t.Fatalf("refused creations stored %v", ids)
	}
	check(t, create(s, newRun("run_1")), "CreateRun")
	_, err := s.UpdateRun(ctx, "run_1", store.RunUpdate{Approvals: []store.Approval{{}}})
	mustErr(t, err, store.ErrInvalid, "UpdateRun adding an approval with no ID")
}

func testLeaseAtCreation(t *testing.T, s store.Store, c *clock) {
	run := newRun("run_1")
	run.Status = store.RunRunning
	_, err := s.CreateRun(ctx, store.CreateRunRequest{Run: run, Holder: "w1"})
	mustErr(t, err, store.ErrInvalid, "CreateRun leased with no TTL")
	r, err := s.CreateRun(ctx, store.CreateRunRequest{Run: run, Holder: "w1", LeaseTTL: time.Minute})
	check(t, err, "CreateRun leased")
	if d := cmp.Diff(&store.Lease{Holder: "w1", Token: 1, ExpiresAt: c.Now().Add(time.Minute)}, r.Lease); d != "" || r.Version != 1 {
		t.Fatalf("created run: version %d, lease (-want +got):\n%s", r.Version, d)
	}
	_, _, err = s.ClaimRun(ctx, "run_1", claim("w2", time.Minute, "", store.RunRunning))
	mustErr(t, err, store.ErrLeased, "ClaimRun of a run created leased")
	c.Advance(time.Minute)
	r, _, err = s.ClaimRun(ctx, "run_1", claim("w2", time.Minute, "", store.RunRunning))
	check(t, err, "ClaimRun after the creator's lease expired")
	if r.Lease.Token != 2 {
		t.Fatalf("takeover token %d, want 2", r.Lease.Token)
	}
}

// concurrentClaim races claimants through a and b: exactly one wins, both
// when the claim changes the status (pending to resuming) and when only the
// lease tells the claimants apart (a takeover of a running run).
func concurrentClaim(t *testing.T, a, b store.Store) {
	check(t, create(a, newRun("run_1")), "CreateRun")
	r2 := newRun("run_2")
	r2.Status = store.RunRunning
	check(t, create(a, r2), "CreateRun 2")
	for _, tt := range []struct {
		id       string
		from, to store.RunStatus
	}{
		{"run_1", store.RunPending, store.RunResuming},
		{"run_2", store.RunRunning, store.RunRunning},
	} {
		var mu sync.Mutex
		var winner string
		n := race(t, func(i int) error {
			s := a
			if i%2 == 1 {
				s = b
			}
			r, _, err := s.ClaimRun(ctx, tt.id, claim(fmt.Sprintf("w%d", i), time.Minute, tt.to, tt.from))
			if err == nil {
				mu.Lock()
				winner = r.Lease.Holder
				mu.Unlock()
			}
			return err
		}, store.ErrLeased, store.ErrConflict)
		if n != 1 {
			t.Fatalf("%s: %d concurrent claims succeeded, want exactly 1", tt.id, n)
		}
		r, err := b.GetRun(ctx, tt.id)
		check(t, err, "GetRun")
		if r.Lease == nil || r.Lease.Holder != winner || r.Lease.Token != 1 || r.Status != tt.to {
			t.Fatalf("%s: stored %s with lease %+v, want %s and the winner %s's lease with token 1", tt.id, r.Status, r.Lease, tt.to, winner)
		}
	}
}

func testPagination(t *testing.T, s store.Store, c *clock) {
	var want []string
	for i := range 23 {
		id := fmt.Sprintf("run_%02d", i)
		want = append(want, id)
		check(t, create(s, newRun(id), pendingApproval("req_1", nil), pendingApproval("req_2", nil)), "CreateRun")
		c.Advance(time.Millisecond)
	}
	var got []string
	pages := 0
	f := store.RunFilter{Limit: 5}
	for {
		p, err := s.ListRuns(ctx, f)
		check(t, err, "ListRuns")
		pages++
		if len(p.Runs) > 5 {
			t.Fatalf("page of %d runs with limit 5", len(p.Runs))
		}
		for _, r := range p.Runs {
			got = append(got, r.ID)
		}
		if p.Next == "" {
			break
		}
		f.Cursor = p.Next
	}
	if d := cmp.Diff(want, got); d != "" || pages != 5 {
		t.Fatalf("%d pages; runs across pages (-want +got):\n%s", pages, d)
	}
	// Newest first, across pages: the same runs in reverse; a cursor of
	// one order is not one of the other.
	var newest []string
	nf := store.RunFilter{Limit: 5, Newest: true}
	for {
		p, err := s.ListRuns(ctx, nf)
		check(t, err, "ListRuns newest first")
		for _, r := range p.Runs {
			newest = append(newest, r.ID)
		}
		if p.Next == "" {
			break
		}
		if nf.Cursor == "" {
			_, err := s.ListRuns(ctx, store.RunFilter{Limit: 5, Cursor: p.Next})
			mustErr(t, err, store.ErrBadCursor, "ListRuns oldest first with a newest-first cursor")
		}
		nf.Cursor = p.Next
	}
	reversed := slices.Clone(want)
	slices.Reverse(reversed)
	if d := cmp.Diff(reversed, newest); d != "" {
		t.Fatalf("runs newest first (-want +got):\n%s", d)
	}
	p, err := s.ListRuns(ctx, store.RunFilter{Limit: 23})
	check(t, err, "ListRuns of exactly all")
	if len(p.Runs) != 23 || p.Next != "" {
		t.Errorf("a page holding the last run: %d runs, next %q; want 23 and no next", len(p.Runs), p.Next)
	}
	_, err = s.ListRuns(ctx, store.RunFilter{Limit: -1})
	mustErr(t, err, store.ErrInvalid, "ListRuns with a negative limit")

	var apps []string
	for a, err := range store.AllApprovals(ctx, s, store.ApprovalFilter{Limit: 4}) {
		check(t, err, "ListApprovals")
		apps = append(apps, a.RunID+"/"+a.ID)
	}
	if len(apps) != 46 || apps[0] != "run_00/req_1" || apps[45] != "run_22/req_2" || len(slices.Compact(slices.Clone(apps))) != 46 {
		t.Fatalf("approvals across pages: %d, first %v", len(apps), apps[:min(3, len(apps))])
	}
	p2, err := s.ListApprovals(ctx, store.ApprovalFilter{Status: store.StatusPending, RunID: "run_07", Limit: 1})
	check(t, err, "ListApprovals filtered")
	if len(p2.Approvals) != 1 || p2.Approvals[0].ID != "req_1" || p2.Next == "" {
		t.Fatalf("first filtered page: %+v", p2)
	}
	p2, err = s.ListApprovals(ctx, store.ApprovalFilter{Status: store.StatusPending, RunID: "run_07", Limit: 1, Cursor: p2.Next})
	check(t, err, "ListApprovals filtered, page 2")
	if len(p2.Approvals) != 1 || p2.Approvals[0].ID != "req_2" || p2.Next != "" {
		t.Fatalf("second filtered page: %d approvals, next %q", len(p2.Approvals), p2.Next)
	}
}

// paginationUnderInserts pages through runs through b while runs are created
// through a: every run that existed at the start is listed exactly once, and
// no run is listed twice.
func paginationUnderInserts(t *testing.T, a, b store.Store) {
	var before []string
	for i := range 20 {
		id := fmt.Sprintf("old_%02d", i)
		before = append(before, id)
		check(t, create(a, newRun(id)), "CreateRun")
	}
	stop := make(chan struct{})
	inserted := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				inserted <- nil
				return
			default:
			}
			if err := create(a, newRun(fmt.Sprintf("new_%03d", i))); err != nil {
				inserted <- err
				return
			}
		}
	}()
	var got []string
	f := store.RunFilter{Limit: 3}
	for {
		p, err := b.ListRuns(ctx, f)
		check(t, err, "ListRuns")
		for _, r := range p.Runs {
			got = append(got, r.ID)
		}
		if p.Next == "" || len(got) > 200 {
			break
		}
		f.Cursor = p.Next
	}
	close(stop)
	check(t, <-inserted, "CreateRun while paging")
	if len(got) < len(before) {
		t.Fatalf("listed %d runs, fewer than the %d present at the start", len(got), len(before))
	}
	if d := cmp.Diff(before, got[:len(before)]); d != "" {
		t.Fatalf("the runs present at the start, in order (-want +got):\n%s", d)
	}
	seen := map[string]bool{}
	for _, id := range got {
		if seen[id] {
			t.Fatalf("run %s listed twice", id)
		}
		seen[id] = true
	}
}

func testBadCursors(t *testing.T, s store.Store, c *clock) {
	for i := range 3 {
		check(t, create(s, newRun(fmt.Sprintf("run_%d", i)), pendingApproval("req", nil)), "CreateRun")
	}
	rp, err := s.ListRuns(ctx, store.RunFilter{Limit: 1})
	check(t, err, "ListRuns")
	ap, err := s.ListApprovals(ctx, store.ApprovalFilter{Limit: 1})
	check(t, err, "ListApprovals")
	if rp.Next == "" || ap.Next == "" {
		t.Fatal("no next cursor with more records")
	}
	for _, bad := range []string{"garbage!", "bm90IGEgY3Vyc29y", rp.Next[:len(rp.Next)-1] + "$", strings.Repeat("A", 4096), ap.Next} {
		_, err := s.ListRuns(ctx, store.RunFilter{Cursor: bad})
		mustErr(t, err, store.ErrBadCursor, fmt.Sprintf("ListRuns with cursor %.30q", bad))
	}
	_, err = s.ListApprovals(ctx, store.ApprovalFilter{Cursor: rp.Next})
	mustErr(t, err, store.ErrBadCursor, "ListApprovals with a cursor of runs")
}

// testOwners: a run's owner is kept as the text given, read typed with
// Run.OwnerPrincipal, rows of older hosts (a bare user name) included, and
// the Owner filter compares the text exactly.
func testOwners(t *testing.T, s store.Store, c *clock) {
	for _, r := range []store.Run{
		{ID: "run_typed", Owner: "person:alice", Status: store.RunPending},
		{ID: "run_bare", Owner: "alice", Status: store.RunPending},
		{ID: "run_flag", Owner: "flag:--approve=yes", Status: store.RunPending},
		{ID: "run_none", Status: store.RunPending},
	} {
		_, err := s.CreateRun(ctx, store.CreateRunRequest{Run: r})
		check(t, err, "CreateRun "+r.ID)
	}
	for id, want := range map[string]tool.Principal{
		"run_typed": {Kind: tool.PrincipalPerson, Name: "alice"},
		"run_bare":  {Kind: tool.PrincipalPerson, Name: "alice"},
		"run_flag":  {Kind: tool.PrincipalFlag, Name: "--approve=yes"},
		"run_none":  {},
	} {
		r, err := s.GetRun(ctx, id)
		check(t, err, "GetRun "+id)
		if got := r.OwnerPrincipal(); got != want {
			t.Errorf("%s: owner %q reads as %+v, want %+v", id, r.Owner, got, want)
		}
	}
	if d := cmp.Diff([]string{"run_typed"}, runIDs(t, s, store.RunFilter{Owner: "person:alice"})); d != "" {
		t.Errorf("ListRuns by owner person:alice (-want +got):\n%s", d)
	}
}

func testTenants(t *testing.T, s store.Store, c *clock) {
	for _, r := range []store.Run{
		{ID: "run_a1", Tenant: "acme", Owner: "person:alice", Status: store.RunPending},
		{ID: "run_g1", Tenant: "globex", Owner: "person:gina", Status: store.RunPending},
		{ID: "run_d1", Status: store.RunDone},
		{ID: "run_a2", Tenant: "acme", Owner: "person:bob", Status: store.RunDone},
	} {
		a := pendingApproval("req_1", nil)
		a.Tenant = "mallory" // the store uses the run's
		_, err := s.CreateRun(ctx, store.CreateRunRequest{Run: r, Approvals: []store.Approval{a}})
		check(t, err, "CreateRun "+r.ID)
	}
	r, err := s.GetRun(ctx, "run_g1")
	check(t, err, "GetRun across tenants")
	if r.Tenant != "globex" || r.Owner != "person:gina" {
		t.Fatalf("GetRun: tenant %q, owner %q", r.Tenant, r.Owner)
	}
	a, err := s.GetApproval(ctx, "run_g1", "req_1")
	check(t, err, "GetApproval")
	if a.Tenant != "globex" {
		t.Fatalf("approval of a globex run has tenant %q", a.Tenant)
	}
	for _, tt := range []struct {
		f    store.RunFilter
		want []string
	}{
		{store.RunFilter{}, []string{"run_d1"}},
		{store.RunFilter{Tenant: "acme"}, []string{"run_a1", "run_a2"}},
		{store.RunFilter{Tenant: "acme", Status: store.RunDone}, []string{"run_a2"}},
		{store.RunFilter{Tenant: "acme", Owner: "person:alice"}, []string{"run_a1"}},
		{store.RunFilter{Tenant: "nobody"}, nil},
		{store.RunFilter{AllTenants: true}, []string{"run_a1", "run_g1", "run_d1", "run_a2"}},
		{store.RunFilter{AllTenants: true, Tenant: "ignored", Status: store.RunPending}, []string{"run_a1", "run_g1"}},
	} {
		if d := cmp.Diff(tt.want, runIDs(t, s, tt.f)); d != "" {
			t.Errorf("ListRuns(%+v) (-want +got):\n%s", tt.f, d)
		}
	}
	apps := func(f store.ApprovalFilter) []string {
		var out []string
		for a, err := range store.AllApprovals(ctx, s, f) {
			check(t, err, "ListApprovals")
			out = append(out, a.Tenant+":"+a.RunID)
		}
		return out
	}
	for _, tt := range []struct {
		f    store.ApprovalFilter
		want []string
	}{
		{store.ApprovalFilter{}, []string{":run_d1"}},
		{store.ApprovalFilter{Tenant: "acme"}, []string{"acme:run_a1", "acme:run_a2"}},
		{store.ApprovalFilter{Tenant: "acme", RunID: "run_g1"}, nil},
		{store.ApprovalFilter{AllTenants: true, ID: "req_1"}, []string{"acme:run_a1", "globex:run_g1", ":run_d1", "acme:run_a2"}},
	} {
		if d := cmp.Diff(tt.want, apps(tt.f)); d != "" {
			t.Errorf("ListApprovals(%+v) (-want +got):\n%s", tt.f, d)
		}
	}
	n, err := s.DeleteRuns(ctx, store.PruneFilter{Tenant: "acme"})
	check(t, err, "DeleteRuns of acme")
	if n != 1 {
		t.Fatalf("DeleteRuns of acme's finished runs deleted %d, want 1 (run_a2)", n)
	}
	if d := cmp.Diff([]string{"run_a1", "run_g1", "run_d1"}, runIDs(t, s, store.RunFilter{AllTenants: true})); d != "" {
		t.Errorf("after deleting acme's finished runs (-want +got):\n%s", d)
	}
}

func testPrune(t *testing.T, s store.Store, c *clock) {
	mk := func(id string, status store.RunStatus) {
		t.Helper()
		r := newRun(id)
		r.Status = status
		_, err := s.CreateRun(ctx, store.CreateRunRequest{Run: r, Approvals: []store.Approval{pendingApproval("req", nil)}, Events: []store.Event{{Type: "run.started"}}})
		check(t, err, "CreateRun "+id)
	}
	mk("old_done", store.RunDone)
	mk("old_error", store.RunError)
	mk("old_cancelled", store.RunCancelled)
	mk("old_pending", store.RunPending)
	mk("old_running", store.RunRunning)
	mk("old_leased", store.RunDone)
	_, _, err := s.ClaimRun(ctx, "old_running", claim("w1", time.Hour, "", store.RunRunning))
	check(t, err, "ClaimRun")
	_, _, err = s.ClaimRun(ctx, "old_leased", claim("w1", time.Hour, "", store.RunDone))
	check(t, err, "ClaimRun")
	c.Advance(time.Minute)
	cut := c.Now()
	c.Advance(time.Minute)
	mk("new_done", store.RunDone)
	appendEvents(t, s, store.Event{Type: "store.note"})

	n, err := s.DeleteRuns(ctx, store.PruneFilter{Before: cut})
	check(t, err, "DeleteRuns")
	if n != 3 {
		t.Errorf("DeleteRuns deleted %d runs, want 3 (done, error, cancelled, before the cut, not leased)", n)
	}
	if d := cmp.Diff([]string{"old_pending", "old_running", "old_leased", "new_done"}, runIDs(t, s, store.RunFilter{})); d != "" {
		t.Errorf("runs after pruning (-want +got):\n%s", d)
	}
	for _, id := range []string{"old_done", "old_error"} {
		if _, err := s.GetApproval(ctx, id, "req"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("approval of pruned %s: %v", id, err)
		}
		if evs := listEvents(t, s, store.EventFilter{RunID: id}); len(evs) != 0 {
			t.Errorf("events of pruned %s remain: %v", id, eventKeys(evs))
		}
	}
	if evs := listEvents(t, s, store.EventFilter{Limit: store.MaxLimit}); len(evs) != 5 {
		t.Errorf("%d events remain, want 5 (four runs' and the store's)", len(evs))
	}

	n, err = s.DeleteRuns(ctx, store.PruneFilter{Statuses: []store.RunStatus{store.RunPending, store.RunRunning, store.RunDone}, Before: cut})
	check(t, err, "DeleteRuns of pending and running runs")
	if n != 1 {
		t.Errorf("deleted %d, want 1: the pending run, not the running or done ones that hold live leases", n)
	}
	c.Advance(time.Hour)
	n, err = s.DeleteRuns(ctx, store.PruneFilter{Statuses: []store.RunStatus{store.RunRunning}})
	check(t, err, "DeleteRuns of running runs after their lease expired")
	if n != 1 {
		t.Errorf("deleted %d, want 1", n)
	}
	n, err = s.DeleteRuns(ctx, store.PruneFilter{})
	check(t, err, "DeleteRuns of every finished run")
	if n != 2 {
		t.Errorf("deleted %d, want 2", n)
	}
	if ids := runIDs(t, s, store.RunFilter{AllTenants: true}); len(ids) != 0 {
		t.Errorf("runs left: %v", ids)
	}
}
