package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// A worker builds, before it takes runs, the agents of the newest stored
// runs' configurations, once each per tenant; the next run of one of them
// (its autonomy level included) is built from the cache.
func TestWarmRecentBuildsTheNewestRunsAgents(t *testing.T) {
	var mu sync.Mutex
	builds := map[string]int{} // by tenant and autonomy level
	cache := runcore.NewBuildCache(runs.BuilderFunc(func(ctx context.Context, cfg runs.RunConfig) (*runs.Built, error) {
		mu.Lock()
		builds[runcore.BuildTenant(ctx)+"/"+cfg.Autonomy]++
		mu.Unlock()
		return &runs.Built{}, nil
	}))
	defer cache.Close()
	base, err := runs.RunConfig{AgentConfig: runs.AgentConfig{Model: runs.ModelRef{Provider: "openai", Name: "gpt-4.1"}, Workdir: t.TempDir()}}.Resolve("/")
	if err != nil {
		t.Fatal(err)
	}
	auto := base
	auto.Autonomy = "full_auto"
	st := memory.New(nil)
	defer st.Close()
	for i, r := range []struct {
		tenant string
		cfg    runs.RunConfig
	}{{"acme", base}, {"acme", base}, {"globex", auto}} {
		cfg := r.cfg
		cfg.RequestDigest = "sha256:" + string(rune('0'+i))
		pinned, err := runcore.PinFiles(cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(pinned)
		if err != nil {
			t.Fatal(err)
		}
		id := "run_" + string(rune('a'+i))
		if _, err := st.CreateRun(t.Context(), store.CreateRunRequest{Run: store.Run{ID: id, Tenant: r.tenant, Status: store.RunDone, Config: b}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := warmRecent(t.Context(), cache, st, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"acme/": 1, "globex/full_auto": 1}
	if diff := cmp.Diff(want, builds); diff != "" {
		t.Fatalf("builds before any run (-want +got):\n%s", diff)
	}
	next := auto
	next.RequestDigest = "sha256:next"
	buildAsARun(t, cache, "globex", next)
	if diff := cmp.Diff(want, builds); diff != "" {
		t.Fatalf("builds after globex's next run (-want +got):\n%s", diff)
	}
}

// buildAsARun builds cfg for tenant from cache as a run's start does: its
// files pinned, then built and let go.
func buildAsARun(t *testing.T, cache runcore.Builder, tenant string, cfg runcore.RunConfig) {
	t.Helper()
	pinned, err := runcore.PinFiles(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := runcore.BuildPinned(runcore.WithBuildTenant(t.Context(), tenant), cache, pinned)
	if err != nil {
		t.Fatal(err)
	}
	runcore.CloseBuilt(b)
}
