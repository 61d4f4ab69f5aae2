package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/store"
)

// GET /v1/audit finds the decisions of the caller's tenant by tool, rule,
// person, source, outcome and time, and exports them as JSON Lines.
func TestAudit(t *testing.T) {
	f := newFixture(t, nil, nil, nil)
	approved, declined := f.startRun(), f.startRun()
	for _, c := range []struct {
		run string
		req serverapi.DecisionRequest
	}{
		{approved, serverapi.DecisionRequest{Decision: "approve"}},
		{declined, serverapi.DecisionRequest{Decision: "deny", Reason: "not this month"}},
	} {
		a := f.pending(c.run)
		c.req.ArgsDigest = a.ArgsDigest
		if code := f.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, c.req, nil); code != http.StatusOK {
			t.Fatalf("decision: %d", code)
		}
		f.waitRun(c.run, store.RunDone)
	}
	search := func(token, q string) serverapi.AuditPage {
		t.Helper()
		var page serverapi.AuditPage
		if code := f.do("GET", "/v1/audit"+q, token, nil, &page); code != http.StatusOK {
			t.Fatalf("GET /v1/audit%s: %d", q, code)
		}
		return page
	}
	for q, want := range map[string]int{
		"": 2, "?person=alice": 2, "?rule=ask-transfer": 2, "?source=agent": 2, "?since=1h": 2, "?tool=transfer": 2,
		"?outcome=declined": 1, "?outcome=approved&person=alice": 1, "?tool=lookup": 0, "?person=bob": 0, "?rule=other": 0,
	} {
		if got := search(vicToken, q); len(got.Entries) != want {
			t.Errorf("audit%s: %d entries, want %d: %+v", q, len(got.Entries), want, got.Entries)
		}
	}
	e := search(vicToken, "?outcome=declined").Entries[0]
	if e.RunID != declined || e.Tool != "transfer" || e.By != "person:alice" || e.Reason != "not this month" || len(e.Votes) == 0 || len(e.Shadow) != 1 {
		t.Fatalf("the declined entry: %+v", e)
	}
	if got := search(bobToken, ""); len(got.Entries) != 0 {
		t.Fatalf("another tenant's audit: %+v", got)
	}
	if got := search(vicToken, "?limit=1"); len(got.Entries) != 1 || !got.Truncated {
		t.Fatalf("limit=1: %+v", got)
	}
	req, _ := http.NewRequest("GET", f.ts.URL+"/v1/audit?format=jsonl", nil)
	req.Header.Set("Authorization", "Bearer "+vicToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	if resp.Header.Get("Content-Type") != "application/jsonl" || len(lines) != 2 {
		t.Fatalf("jsonl: %s %q", resp.Header.Get("Content-Type"), body)
	}
	for _, l := range lines {
		var x serverapi.AuditEntry
		if err := json.Unmarshal([]byte(l), &x); err != nil || x.Tool != "transfer" {
			t.Fatalf("jsonl line %q: %v", l, err)
		}
	}
	for _, q := range []string{"?format=csv", "?limit=0", "?since=soon"} {
		if code := f.do("GET", "/v1/audit"+q, vicToken, nil, nil); code != http.StatusBadRequest {
			t.Errorf("audit%s: %d, want 400", q, code)
		}
	}
}
