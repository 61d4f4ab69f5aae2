package server_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tollgate-dev/tollgate/server"
)

// Options.Tokens is asked for the principal of every bearer token, and
// only it: a token it knows acts as its principal, one it does not is 401,
// and a token over 512 bytes is 401 without being handed to it.
func TestTokensLookup(t *testing.T) {
	long := strings.Repeat("x", 513)
	var asked atomic.Int64
	lookup := func(token string) (server.Principal, bool) {
		asked.Add(1)
		if token == long {
			t.Error("a token over 512 bytes was handed to the lookup")
		}
		if token == "tg_mine" {
			return server.Principal{Name: "mia", Tenant: "acme", Roles: []server.Role{server.RoleViewer}}, true
		}
		return server.Principal{}, false
	}
	f := newFixture(t, nil, nil, &server.Options{Tokens: lookup})
	var me server.Principal
	if code := f.do("GET", "/v1/me", "tg_mine", nil, &me); code != http.StatusOK || me.Name != "mia" || me.Tenant != "acme" {
		t.Fatalf("a known token: %d %+v", code, me)
	}
	if code := f.do("GET", "/v1/me", "tg_other", nil, nil); code != http.StatusUnauthorized {
		t.Fatalf("an unknown token: %d, want 401", code)
	}
	before := asked.Load()
	if code := f.do("GET", "/v1/me", long, nil, nil); code != http.StatusUnauthorized {
		t.Fatalf("a 513-byte token: %d, want 401", code)
	}
	if asked.Load() != before {
		t.Fatal("the lookup was asked about a 513-byte token")
	}
}
