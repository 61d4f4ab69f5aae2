package inbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/approval/inbox"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/tool"
)

var (
	t0    = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	alice = tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}
	bob   = tool.Principal{Kind: tool.PrincipalPerson, Name: "bob"}
	root  = tool.Principal{Kind: tool.PrincipalPerson, Name: "root"}
)

// approvalOf is the request the agent stores for a call of transfer with
// args, its schema requiring an integer amount under 100.
func approvalOf(t *testing.T, id, args string) store.Approval {
	t.Helper()
	max := 99.0
	schema := &jsonschema.Schema{Type: "object", Required: []string{"amount"},
		Properties: map[string]*jsonschema.Schema{"amount": {Type: "integer", Maximum: &max}}}
	d := approval.RequestData{Tool: "transfer", CallID: "call_" + id, Args: json.RawMessage(args), Digest: approval.Digest(json.RawMessage(args)), Schema: schema}
	data, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	req := tool.Request{ID: id, Kind: tool.KindApproval, Prompt: "transfer?", Data: data}
	return store.Approval{ID: id, CallID: d.CallID, Tool: d.Tool, Digest: d.Digest, Kind: req.Kind, Prompt: req.Prompt, Request: req}
}

func questionOf(id string) store.Approval {
	req := tool.Request{ID: id, Kind: tool.KindQuestion, Prompt: "which?",
		Data: json.RawMessage(`{"questions":[{"question":"Which database?","options":[{"label":"postgres"},{"label":"sqlite"}]}]}`)}
	return store.Approval{ID: id, CallID: "call_" + id, Tool: "question", Kind: req.Kind, Prompt: req.Prompt, Request: req}
}

// newInbox stores run_1 of tenant acme with the requests as, and returns an
// inbox on it whose clock is *now.
func newInbox(t *testing.T, now *time.Time, as ...store.Approval) (*inbox.Inbox, store.Store) {
	t.Helper()
	s := memory.New(&store.Options{Now: func() time.Time { return *now }})
	t.Cleanup(func() { s.Close() })
	_, err := s.CreateRun(context.Background(), store.CreateRunRequest{
		Run:       store.Run{ID: "run_1", Tenant: "acme", Status: store.RunPending, State: json.RawMessage(`{}`)},
		Approvals: as,
	})
	if err != nil {
		t.Fatal(err)
	}
	return inbox.New(s, &inbox.Options{Now: func() time.Time { return *now }}), s
}

func find(t *testing.T, ib *inbox.Inbox, id string) store.Approval {
	t.Helper()
	a, err := ib.Find(context.Background(), inbox.Query{Tenant: "acme", ID: id})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestFind(t *testing.T) {
	ctx := context.Background()
	now := t0
	ib, s := newInbox(t, &now, approvalOf(t, "req_1", `{"amount":5}`))
	if _, err := s.CreateRun(ctx, store.CreateRunRequest{Run: store.Run{ID: "run_2", Tenant: "acme", Status: store.RunPending},
		Approvals: []store.Approval{approvalOf(t, "req_1", `{"amount":6}`), approvalOf(t, "req_2", `{"amount":7}`)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateRun(ctx, store.CreateRunRequest{Run: store.Run{ID: "run_3", Tenant: "other", Status: store.RunPending},
		Approvals: []store.Approval{approvalOf(t, "req_3", `{"amount":8}`)}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		q       inbox.Query
		wantRun string
		wantErr error
	}{
		{"one", inbox.Query{Tenant: "acme", ID: "req_2"}, "run_2", nil},
		{"by run", inbox.Query{Tenant: "acme", ID: "req_1", RunID: "run_2"}, "run_2", nil},
		{"in two runs", inbox.Query{Tenant: "acme", ID: "req_1"}, "", inbox.ErrAmbiguous},
		{"another tenant's", inbox.Query{Tenant: "acme", ID: "req_3"}, "", store.ErrNotFound},
		{"every tenant", inbox.Query{AllTenants: true, ID: "req_3"}, "run_3", nil},
		{"none", inbox.Query{Tenant: "acme", ID: "req_9"}, "", store.ErrNotFound},
		// An empty ID would select every request of the tenant.
		{"no ID", inbox.Query{Tenant: "other"}, "", inbox.ErrNoID},
	} {
		a, err := ib.Find(ctx, tc.q)
		if !errors.Is(err, tc.wantErr) || a.RunID != tc.wantRun {
			t.Errorf("%s: %s %v, want %q %v", tc.name, a.RunID, err, tc.wantRun, tc.wantErr)
		}
	}
}

// errData stands for any *inbox.DataError in a table's wanted errors.
var errData = errors.New("a *inbox.DataError")

func TestDecideRefuses(t *testing.T) {
	args := `{"amount":5}`
	digest := approval.Digest(json.RawMessage(args))
	for _, tc := range []struct {
		name string
		a    store.Approval
		d    inbox.Decision
		want error
	}{
		{"nobody", approvalOf(t, "req_1", args), inbox.Decision{Approve: true}, inbox.ErrNoPrincipal},
		{"an actor for a rule", approvalOf(t, "req_1", args), inbox.Decision{Approve: true, By: tool.Principal{Kind: tool.PrincipalRule, Name: "r"}, Actor: root}, inbox.ErrNotPerson},
		{"data on deny", approvalOf(t, "req_1", args), inbox.Decision{By: alice, Data: json.RawMessage(`{"amount":1}`)}, inbox.ErrDataOnDeny},
		{"another digest", approvalOf(t, "req_1", args), inbox.Decision{Approve: true, By: alice, Digest: "sha256:00"}, inbox.ErrDigestMismatch},
		{"an edit outside the schema", approvalOf(t, "req_1", args), inbox.Decision{Approve: true, By: alice, Digest: digest, Data: json.RawMessage(`{"amount":1000}`)}, errData},
		{"an edit not an object", approvalOf(t, "req_1", args), inbox.Decision{Approve: true, By: alice, Data: json.RawMessage(`[1]`)}, errData},
		{"an answer to no question", questionOf("req_1"), inbox.Decision{Approve: true, By: alice, Data: json.RawMessage(`["a","b"]`)}, errData},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := t0
			ib, _ := newInbox(t, &now, tc.a)
			_, err := ib.Decide(context.Background(), find(t, ib, "req_1"), tc.d)
			if ok := errors.Is(err, tc.want) || tc.want == errData && errors.As(err, new(*inbox.DataError)); !ok {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if a := find(t, ib, "req_1"); a.Status != store.StatusPending {
				t.Fatalf("a refused decision was stored: %s", a.Status)
			}
		})
	}
}

func TestDecideEditAndAnswer(t *testing.T) {
	ctx := context.Background()
	now := t0
	ib, _ := newInbox(t, &now, approvalOf(t, "req_1", `{"amount":5}`), questionOf("req_2"))
	got, err := ib.Decide(ctx, find(t, ib, "req_1"), inbox.Decision{Approve: true, By: alice, Data: json.RawMessage(`{"amount":7}`)})
	if err != nil || got.Status != store.StatusApproved || string(got.Data) != `{"amount":7}` || got.DecidedBy != alice {
		t.Fatalf("an edit: %+v %v", got, err)
	}
	got, err = ib.Decide(ctx, find(t, ib, "req_2"), inbox.Decision{Approve: true, By: alice, Data: json.RawMessage(`{"answers":[["sqlite"]]}`)})
	if err != nil || got.Status != store.StatusApproved || string(got.Data) != `{"answers":[["sqlite"]]}` {
		t.Fatalf("an answer: %+v %v", got, err)
	}
	var de *inbox.DataError
	unstored := approvalOf(t, "req_3", `{"amount":5}`)
	unstored.Status = store.StatusPending
	_, err = ib.Decide(ctx, unstored, inbox.Decision{Approve: true, By: alice, Data: json.RawMessage(`{}`)})
	if !errors.As(err, &de) || de.Kind != tool.KindApproval || !strings.Contains(de.Error(), "transfer's input schema") || len(de.Problems) == 0 {
		t.Fatalf("an edit without the required key: %v", err)
	}
}

// The same decision again is answered as the first; another is refused
// with who decided, and for whom.
func TestDecideTwice(t *testing.T) {
	ctx := context.Background()
	now := t0
	ib, _ := newInbox(t, &now, approvalOf(t, "req_1", `{"amount":5}`))
	first, err := ib.Decide(ctx, find(t, ib, "req_1"), inbox.Decision{Approve: true, By: alice, Actor: root, Data: json.RawMessage(`{"amount":7}`), Reason: "ok"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := ib.Decide(ctx, find(t, ib, "req_1"), inbox.Decision{Approve: true, By: alice, Actor: root, Data: json.RawMessage(`{ "amount": 7 }`)})
	if err != nil || again.DecidedAt == nil || !again.DecidedAt.Equal(*first.DecidedAt) {
		t.Fatalf("the same decision again: %+v %v", again, err)
	}
	// A retry read before the first was stored loses the store's race, and
	// is still the same decision.
	stale := approvalOf(t, "req_1", `{"amount":5}`)
	stale.RunID, stale.Status = "run_1", store.StatusPending
	if _, err := ib.Decide(ctx, stale, inbox.Decision{Approve: true, By: alice, Actor: root, Data: json.RawMessage(`{"amount":7}`)}); err != nil {
		t.Fatalf("a retry that lost the race: %v", err)
	}
	for _, d := range []inbox.Decision{
		{By: alice, Actor: root}, // deny
		{Approve: true, By: alice, Actor: root, Data: json.RawMessage(`{"amount":7.0}`)}, // other digits
		{Approve: true, By: alice, Data: json.RawMessage(`{"amount":7}`)},                // no actor
		{Approve: true, By: bob, Data: json.RawMessage(`{"amount":7}`)},
	} {
		for _, a := range []store.Approval{find(t, ib, "req_1"), stale} {
			_, err := ib.Decide(ctx, a, d)
			var de *inbox.DecidedError
			if !errors.As(err, &de) || !errors.Is(err, store.ErrDecided) || de.Approval.DecidedBy != alice || de.Approval.Actor != root {
				t.Fatalf("%+v on a %s request: %v", d, a.Status, err)
			}
			if want := "approval req_1 of run run_1 is approved (by person:alice; recorded by person:root: ok)"; !strings.HasSuffix(err.Error(), want) {
				t.Fatalf("%q, want it to end %q", err, want)
			}
		}
	}
}

func TestDecideExpired(t *testing.T) {
	ctx := context.Background()
	now := t0
	a := approvalOf(t, "req_1", `{"amount":5}`)
	exp := t0.Add(time.Minute)
	a.ExpiresAt = &exp
	_, s := newInbox(t, &now, a)
	answered := 0
	ib := inbox.New(s, &inbox.Options{Now: func() time.Time { return now }, Answer: func(ctx context.Context, runID, id string, ans store.Answer) (store.Approval, error) {
		answered++
		return s.Decide(ctx, runID, id, ans)
	}})
	now = exp
	if got, err := ib.List(ctx, store.ApprovalFilter{Tenant: "acme", ID: "req_1"}); err != nil || len(got) != 1 || got[0].Status != store.StatusExpired {
		t.Fatalf("status at the expiry: %+v %v", got, err)
	}
	// Refused by the inbox's clock, before anything is recorded.
	if _, err := ib.Decide(ctx, find(t, ib, "req_1"), inbox.Decision{Approve: true, By: alice}); !errors.Is(err, store.ErrExpired) || answered != 0 {
		t.Fatalf("a decision at the expiry: %v, %d answers recorded", err, answered)
	}
	as, err := ib.List(ctx, store.ApprovalFilter{Tenant: "acme"})
	if err != nil || len(as) != 1 || as[0].Status != store.StatusExpired {
		t.Fatalf("List: %+v %v", as, err)
	}
}

// An answer stored whose run was not woken is a decision made; any other
// failure of Options.Answer is the error.
func TestDecideAnswerFunc(t *testing.T) {
	ctx := context.Background()
	now := t0
	_, s := newInbox(t, &now, approvalOf(t, "req_1", `{"amount":5}`), approvalOf(t, "req_2", `{"amount":5}`))
	wake := errors.New("the run was not woken")
	ib := inbox.New(s, &inbox.Options{Now: func() time.Time { return now }, Answer: func(ctx context.Context, runID, id string, ans store.Answer) (store.Approval, error) {
		if id == "req_2" {
			return store.Approval{}, wake
		}
		a, err := s.Decide(ctx, runID, id, ans)
		if err != nil {
			return a, err
		}
		return a, wake
	}})
	if a, err := ib.Decide(ctx, find(t, ib, "req_1"), inbox.Decision{Approve: true, By: alice}); err != nil || a.Status != store.StatusApproved {
		t.Fatalf("stored, not woken: %+v %v", a, err)
	}
	if _, err := ib.Decide(ctx, find(t, ib, "req_2"), inbox.Decision{Approve: true, By: alice}); !errors.Is(err, wake) {
		t.Fatalf("not stored: %v", err)
	}
}

func TestOnBehalf(t *testing.T) {
	for _, tc := range []struct {
		of        string
		by, actor tool.Principal
		err       error
	}{
		{"", root, tool.Principal{}, nil},
		{"alice", alice, root, nil},
		{"person:alice", alice, root, nil},
		{"rule:no-rm", tool.Principal{}, tool.Principal{}, inbox.ErrNotPerson},
		{"flag", tool.Principal{}, tool.Principal{}, inbox.ErrNotPerson},
		{"person:", tool.Principal{}, tool.Principal{}, inbox.ErrNotPerson},
	} {
		by, actor, err := inbox.OnBehalf(root, tc.of)
		if by != tc.by || actor != tc.actor || !errors.Is(err, tc.err) {
			t.Errorf("OnBehalf(root, %q) = %s, %s, %v; want %s, %s, %v", tc.of, by, actor, err, tc.by, tc.actor, tc.err)
		}
	}
}
