package mcpgateway

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/tool"
)

// Parked asks stay parked after they ended (a client may withdraw its
// own ask on the page's API, which frees its place among the waiting
// calls) until retried or expired: they are capped per token and per
// tenant themselves, so that one tenant's cannot fill the gateway's
// places and refuse every other tenant's.
func TestParkedAsksCappedPerTokenAndTenant(t *testing.T) {
	var ps parkedAsks
	now := time.Now()
	park := func(tenant string, i int) (string, string) {
		c := Client{Principal: tool.Principal{Kind: tool.PrincipalPerson, Name: fmt.Sprint("c", i)}, Tenant: tenant}
		return ps.put(&parkedAsk{session: Session{ID: "s", Client: c}, expires: now.Add(time.Hour)}, now)
	}
	for range maxPendingPerClient {
		if key, full := park("acme", 0); key == "" {
			t.Fatalf("refused early: %s", full)
		}
	}
	if key, full := park("acme", 0); key != "" || !strings.Contains(full, "one token") {
		t.Errorf("ask %d of one token: %q %q, want refused saying the token's cap", maxPendingPerClient+1, key, full)
	}
	for i := 1; i < maxPendingPerTenant/maxPendingPerClient; i++ {
		for range maxPendingPerClient {
			if key, full := park("acme", i); key == "" {
				t.Fatalf("token %d refused early: %s", i, full)
			}
		}
	}
	if key, full := park("acme", 99); key != "" || !strings.Contains(full, "one tenant") {
		t.Errorf("ask %d of one tenant: %q %q, want refused saying the tenant's cap", maxPendingPerTenant+1, key, full)
	}
	if key, full := park("globex", 0); key == "" {
		t.Errorf("another tenant's ask refused: %s", full)
	}
}
