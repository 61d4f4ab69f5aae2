package runs_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// cacheBuilder counts its builds and the closes of what it built, and
// fails the builds of a configuration whose MaxTurns is fail.
type cacheBuilder struct {
	builds, closes atomic.Int64
	fail           int
}

func (b *cacheBuilder) Build(ctx context.Context, cfg runs.RunConfig) (*runs.Built, error) {
	b.builds.Add(1)
	if cfg.MaxTurns == b.fail {
		return nil, errors.New("this configuration does not build")
	}
	return &runs.Built{
		Options: agent.Options{Model: testkit.Script(nil)},
		Close:   func() error { b.closes.Add(1); return nil },
	}, nil
}

// A BuildCache builds once per tenant and configuration, keeps no failed
// build, and closes what it built when closed, not when a run ends.
func TestBuildCache(t *testing.T) {
	b := &cacheBuilder{fail: 7}
	cache := runcore.NewBuildCache(b)
	h := newHost(t, memory.New(nil), cache, "h1", 0)
	cfg := testConfig(t)
	start := func(tenant string, cfg runs.RunConfig) error {
		_, err := h.Start(t.Context(), runs.StartRequest{Tenant: tenant, Config: cfg, Prompt: "hi"})
		return err
	}
	check := func(builds, closes int64, when string) {
		t.Helper()
		if n, m := b.builds.Load(), b.closes.Load(); n != builds || m != closes {
			t.Fatalf("%s: %d builds, %d closes; want %d and %d", when, n, m, builds, closes)
		}
	}
	for range 3 {
		if err := start("acme", cfg); err != nil {
			t.Fatal(err)
		}
	}
	check(1, 0, "three runs of a tenant")
	if err := start("globex", cfg); err != nil {
		t.Fatal(err)
	}
	check(2, 0, "a run of another tenant")
	other := cfg
	other.MaxTurns = 3
	if err := start("acme", other); err != nil {
		t.Fatal(err)
	}
	check(3, 0, "a run of another configuration")
	failing := cfg
	failing.MaxTurns = 7
	for range 2 {
		if err := start("acme", failing); err == nil {
			t.Fatal("a configuration that does not build started")
		}
	}
	check(5, 0, "two runs of a configuration that does not build")
	cache.Close()
	check(5, 3, "the cache closed")
	if err := start("acme", cfg); err != nil {
		t.Fatal(err)
	}
	check(6, 4, "a run after the cache closed")
}

// Warm builds a tenant's agent before its first run, which then uses it;
// a configuration the cache does not keep (here, with MCP servers) is not
// built ahead, and a build that fails is reported and not kept.
func TestBuildCacheWarm(t *testing.T) {
	b := &cacheBuilder{fail: 7}
	cache := runcore.NewBuildCache(b)
	h := newHost(t, memory.New(nil), cache, "h1", 0)
	cfg := testConfig(t)
	if err := cache.Warm(t.Context(), "acme", cfg); err != nil {
		t.Fatal(err)
	}
	if n := b.builds.Load(); n != 1 {
		t.Fatalf("warm: %d builds, want 1", n)
	}
	if _, err := h.Start(t.Context(), runs.StartRequest{Tenant: "acme", Config: cfg, Prompt: "hi"}); err != nil {
		t.Fatal(err)
	}
	if n := b.builds.Load(); n != 1 {
		t.Fatalf("the first run after warm: %d builds, want 1", n)
	}
	mcp := cfg
	mcp.MCPFiles = []string{"mcp.json"}
	if err := cache.Warm(t.Context(), "acme", mcp); err != nil || b.builds.Load() != 1 {
		t.Fatalf("warm with MCP servers: %v, %d builds, want none more", err, b.builds.Load())
	}
	failing := cfg
	failing.MaxTurns = 7
	if err := cache.Warm(t.Context(), "acme", failing); err == nil {
		t.Fatal("warm of a configuration that does not build: no error")
	}
}
