package mcpgateway

import (
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/tool"
)

// The calls waiting for a person are capped per session (32), per token
// across its sessions (64) and per tenant across its tokens (256); each
// refusal says which, counts nothing, and a release frees its place.
func TestPendingCountsCaps(t *testing.T) {
	var pc pendingCounts
	client := func(tenant string, i int) Client {
		return Client{Principal: tool.Principal{Kind: tool.PrincipalPerson, Name: fmt.Sprint("c", i)}, Tenant: tenant}
	}
	var releases []func()
	// Four tokens of acme, each with two full sessions: 256 waiting.
	for i := range 4 {
		for range 2 {
			ss := &mcp.ServerSession{}
			for range maxPendingPerSession {
				r, full := pc.hold(ss, client("acme", i))
				if full != "" {
					t.Fatalf("token %d: refused early: %s", i, full)
				}
				releases = append(releases, r)
			}
			if _, full := pc.hold(ss, client("acme", 9)); !strings.Contains(full, "of this client session") {
				t.Errorf("a full session: %q, want the session's cap", full)
			}
		}
		if _, full := pc.hold(&mcp.ServerSession{}, client("acme", i)); i < 3 && !strings.Contains(full, "of this client's sessions") {
			t.Errorf("token %d in a third session: %q, want the token's cap", i, full)
		}
	}
	if _, full := pc.hold(&mcp.ServerSession{}, client("acme", 5)); !strings.Contains(full, "of this tenant's clients") {
		t.Errorf("a fifth token of acme: %q, want the tenant's cap", full)
	}
	if _, full := pc.hold(&mcp.ServerSession{}, client("globex", 0)); full != "" {
		t.Errorf("another tenant: %q", full)
	}
	releases[0]()
	if _, full := pc.hold(&mcp.ServerSession{}, client("acme", 5)); full != "" {
		t.Errorf("once one was released: %q", full)
	}
}
