package mcptool

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/tollgate-dev/tollgate/internal/mcptoken"
)

// A login whose browser comes back to a page the host serves: StartLogin
// returns the authorization URL at once, Finish takes the redirect's code
// and the token lands in the tenant's store only; a run of that tenant
// uses it, a run of another tenant meets the login it lacks.
func TestStartLoginPerTenant(t *testing.T) {
	w := newOAuthWorld(t)
	dir := t.TempDir()
	acme, globex := &mcptoken.Store{Dir: mcptoken.TenantDir(dir, "acme")}, &mcptoken.Store{Dir: mcptoken.TenantDir(dir, "globex")}
	if acme.Dir == globex.Dir || mcptoken.TenantDir(dir, "acme") != acme.Dir {
		t.Fatalf("tenant stores %s and %s", acme.Dir, globex.Dir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sc := &ServerConfig{URL: w.mcpURL}
	p, err := StartLogin(ctx, "docs", sc, &OAuthOptions{Dir: acme.Dir, RedirectURL: "http://127.0.0.1:1/callback"})
	if err != nil {
		t.Fatal(err)
	}
	if p.State == "" || w.authorizes != 0 {
		t.Fatalf("pending login %+v, authorizes %d: want a URL with a state, not yet visited", p, w.authorizes)
	}
	res, err := browser(ctx, &auth.AuthorizationArgs{URL: p.URL})
	if err != nil || res.State != p.State {
		t.Fatalf("browser: %+v %v", res, err)
	}
	if err := p.Finish(ctx, res); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	if l, err := acme.Load(w.mcpURL); err != nil || l == nil {
		t.Fatalf("acme's login: %v %v", l, err)
	}
	if l, err := globex.Load(w.mcpURL); err != nil || l != nil {
		t.Fatalf("globex's login: %v %v", l, err)
	}
	cfg := &Config{Servers: map[string]*ServerConfig{"docs": {URL: w.mcpURL}}}
	callEcho(t, openOAuth(t, cfg, acme, false), "mcp__docs__echo")
	if st := status(t, openOAuth(t, cfg, globex, false), "docs"); st.State != StateFailed {
		t.Errorf("globex's run: server %s, want failed (no login)", st.State)
	}
}
