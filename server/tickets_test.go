package server_test

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/server"
)

// testClock is a clock the test moves.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Stream tickets are capped per principal and in all: a mint over a cap is
// 429 with Retry-After, the time until the oldest ticket of that cap
// expires; expired tickets free their place and no longer authenticate.
func TestTicketCaps(t *testing.T) {
	clock := &testClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	f := newFixture(t, nil, nil, &server.Options{Now: clock.Now, MaxTickets: 5, MaxTicketsPerPrincipal: 3})
	mint := func(token string) (string, int, string, serverapi.Problem) {
		t.Helper()
		req, _ := http.NewRequest("POST", f.ts.URL+"/v1/events/ticket", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			Ticket string `json:"ticket"`
			serverapi.Problem
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return body.Ticket, resp.StatusCode, resp.Header.Get("Retry-After"), body.Problem
	}
	var alice []string
	for i := range 3 {
		tk, code, _, _ := mint(aliceToken)
		if code != http.StatusCreated || tk == "" {
			t.Fatalf("alice's ticket %d: %d", i, code)
		}
		alice = append(alice, tk)
		clock.Add(10 * time.Second)
	}
	// t=30s: alice holds 3, her cap.
	if _, code, retry, p := mint(aliceToken); code != http.StatusTooManyRequests || retry != "30" || p.Type != serverapi.ProblemTooManyTickets {
		t.Fatalf("alice's 4th ticket: %d Retry-After %q %+v; want 429 after 30 s", code, retry, p)
	}
	for i := range 2 {
		if _, code, _, _ := mint(vicToken); code != http.StatusCreated {
			t.Fatalf("vic's ticket %d: %d", i, code)
		}
	}
	// 5 in all: everyone waits for the oldest, alice's first.
	if _, code, retry, _ := mint(bobToken); code != http.StatusTooManyRequests || retry != "30" {
		t.Fatalf("bob's ticket with 5 in all: %d Retry-After %q; want 429 after 30 s", code, retry)
	}
	clock.Add(31 * time.Second) // t=61s: alice's first ticket expired
	if code := f.do("GET", "/v1/events?ticket="+alice[0], "", nil, nil); code != http.StatusUnauthorized {
		t.Fatalf("an expired ticket: %d, want 401", code)
	}
	if _, code, _, _ := mint(bobToken); code != http.StatusCreated {
		t.Fatalf("bob's ticket once one expired: %d", code)
	}
	if _, code, retry, _ := mint(aliceToken); code != http.StatusTooManyRequests || retry != "9" {
		t.Fatalf("alice's ticket with 5 in all again: %d Retry-After %q; want 429 after 9 s", code, retry)
	}
	clock.Add(30 * time.Second) // t=91s: alice's and vic's tickets expired
	for _, tok := range []string{aliceToken, aliceToken, aliceToken, vicToken} {
		if _, code, _, _ := mint(tok); code != http.StatusCreated {
			t.Fatalf("a ticket after the others expired: %d", code)
		}
	}
}
