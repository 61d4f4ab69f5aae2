package server

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// A token at its cap of pending asks is refused without reading the store
// at every ask: the ledger reads its asks at most once a gateRefreshEvery
// (each refused ask read up to 256 approvals under the tenant's lock).
func TestGateLedgerReadsTheStoreAtMostOnceASecond(t *testing.T) {
	var l gateLedger
	p := Principal{Tenant: "acme", Name: "agent"}
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	reads := 0
	pending := func(context.Context, string, string) bool { reads++; return true }
	for i := range maxGatePendingPerPrincipal {
		if _, err := l.admit(context.Background(), p, gateAsk{runID: "r", id: fmt.Sprint(i)}, now, pending); err != nil {
			t.Fatalf("ask %d: %v", i, err)
		}
	}
	for i := range 100 {
		if _, err := l.admit(context.Background(), p, gateAsk{runID: "r", id: fmt.Sprint("x", i)}, now.Add(time.Duration(i)*time.Millisecond), pending); err == nil {
			t.Fatalf("ask %d past the cap was admitted", i)
		}
	}
	if reads != maxGatePendingPerPrincipal {
		t.Fatalf("100 refused asks within a second read %d approvals, want %d (one look at each)", reads, maxGatePendingPerPrincipal)
	}
	if _, err := l.admit(context.Background(), p, gateAsk{runID: "r", id: "late"}, now.Add(gateRefreshEvery), pending); err == nil || reads != 2*maxGatePendingPerPrincipal {
		t.Fatalf("a second later: %v after %d reads, want refused after a second look", err, reads)
	}
}

// The gate's long polls are capped per tenant too: one tenant's tokens
// together hold at most maxGatePollsPerTenant places, so that a tenant
// with many tokens cannot take the server's 4,096 from the others; a
// place given back is free again.
func TestGatePollsPerTenantAreCapped(t *testing.T) {
	polls := &newGatewayRuns(nil, "").polls
	var held []func()
	for i := range maxGatePollsPerTenant {
		p := Principal{Tenant: "acme", Name: fmt.Sprint("agent", i/maxGatePollsPerPrincipal)}
		release, ok := polls.take(p)
		if !ok {
			t.Fatalf("place %d of acme refused", i)
		}
		held = append(held, release)
	}
	fresh := Principal{Tenant: "acme", Name: "another-token"}
	if _, ok := polls.take(fresh); ok {
		t.Fatalf("acme's token %q got a place past the tenant's %d", fresh.Name, maxGatePollsPerTenant)
	}
	if release, ok := polls.take(Principal{Tenant: "globex", Name: "agent0"}); !ok {
		t.Fatal("globex refused while only acme is at its cap")
	} else {
		release()
	}
	held[0]()
	if _, ok := polls.take(fresh); !ok {
		t.Fatal("acme refused once one of its places was given back")
	}
}

// A decision uncounts its approval in the gate's ledger; one of a tenant
// with no ask counted (a run's, not an MCP client's) leaves no entry.
func TestGateLedgerDoneOfAnUncountedTenant(t *testing.T) {
	var l gateLedger
	l.done("acme", "run_1", "req_1")
	if len(l.tenants) != 0 {
		t.Fatalf("a decision of a tenant with no ask made %d ledger entries", len(l.tenants))
	}
}
