package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/internal/dbosengine"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/internal/serveconfig"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// Every key of server.yaml's durable: section reaches the engine: the
// queue poll interval was read and then dropped.
func TestDurableOptionsCarryEveryKey(t *testing.T) {
	d := &serveconfig.DurableConfig{DatabaseURL: "sqlite:/tmp/dbos.db", Queue: "q", Concurrency: 3, ExecutorID: "server-a",
		Heartbeat: 2 * time.Second, DeadAfter: 7 * time.Second, AnswerPoll: 11 * time.Second, QueuePoll: 13 * time.Millisecond}
	want := dbosengine.Options{DatabaseURL: "sqlite:/tmp/dbos.db", Worker: true, Queue: "q", Concurrency: 3, ExecutorID: "server-a",
		Heartbeat: 2 * time.Second, DeadAfter: 7 * time.Second, AnswerPoll: 11 * time.Second, QueuePoll: 13 * time.Millisecond}
	if diff := cmp.Diff(want, durableOptions(d)); diff != "" {
		t.Errorf("engine options (-want +got):\n%s", diff)
	}
	if durableOptions(&serveconfig.DurableConfig{}).Worker {
		t.Error("a server with concurrency 0 drives runs itself; it must only enqueue")
	}
}

// A server that drives durable runs builds each agent for each tenant that
// may start it before it takes work; the run's own build then finds it.
func TestWarmAgentsBuildsBeforeTheFirstRun(t *testing.T) {
	var mu sync.Mutex
	builds := map[string]int{} // by tenant and agent
	cache := runcore.NewBuildCache(runs.BuilderFunc(func(ctx context.Context, cfg runs.RunConfig) (*runs.Built, error) {
		mu.Lock()
		builds[runcore.BuildTenant(ctx)+"/"+cfg.Agent]++
		mu.Unlock()
		return &runs.Built{}, nil
	}))
	defer cache.Close()
	agent := func() runs.RunConfig {
		cfg, err := runs.RunConfig{AgentConfig: runs.AgentConfig{Model: runs.ModelRef{Provider: "openai", Name: "gpt-4.1"}, Workdir: t.TempDir()}}.Resolve("/")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	cfg := &serveconfig.Config{
		Agents:       map[string]runs.RunConfig{"payer": agent(), "reader": agent()},
		AgentTenants: map[string][]string{"payer": {"acme"}},
	}
	// globex set its autonomy level, which the server stores in its runs.
	st := memory.New(nil)
	defer st.Close()
	for _, c := range []serverapi.AutonomyChange{{Scope: "tenant", Level: "supervised"}, {Scope: "tenant", Level: approval.FullAuto}} {
		data, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.AppendEvents(t.Context(), store.Event{Tenant: "globex", Type: serverapi.EventAutonomyChanged, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	levels, err := tenantAutonomy(t.Context(), st)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]approval.Autonomy{"globex": approval.FullAuto}, levels); diff != "" {
		t.Fatalf("autonomy levels (-want +got):\n%s", diff)
	}
	warmAgents(t.Context(), cache, cfg, []string{"acme", "globex"}, levels, slog.New(slog.DiscardHandler))
	want := map[string]int{"acme/payer": 1, "acme/reader": 1, "globex/reader": 1}
	if diff := cmp.Diff(want, builds); diff != "" {
		t.Fatalf("builds before any run (-want +got):\n%s", diff)
	}
	// A durable run of globex's reader, as the server stores it (with the
	// tenant's autonomy level), is built from the cache.
	run := cfg.Agents["reader"]
	run.Agent = "reader"
	run.Autonomy = string(approval.FullAuto)
	run.RequestDigest = "sha256:0"
	buildAsARun(t, cache, "globex", run)
	if diff := cmp.Diff(want, builds); diff != "" {
		t.Fatalf("builds after the run (-want +got):\n%s", diff)
	}
}
