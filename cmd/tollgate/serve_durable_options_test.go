package main

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tollgate-dev/tollgate/internal/dbosengine"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/internal/serveconfig"
	"github.com/tollgate-dev/tollgate/runs"
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
	warmAgents(t.Context(), cache, cfg, []string{"acme", "globex"}, slog.New(slog.DiscardHandler))
	want := map[string]int{"acme/payer": 1, "acme/reader": 1, "globex/reader": 1}
	if diff := cmp.Diff(want, builds); diff != "" {
		t.Fatalf("builds before any run (-want +got):\n%s", diff)
	}
	// A durable run of globex's reader, as the server stores it, is built
	// from the cache.
	run := cfg.Agents["reader"]
	run.Agent = "reader"
	run.RequestDigest = "sha256:0"
	pinned, err := runcore.PinFiles(run)
	if err != nil {
		t.Fatal(err)
	}
	b, err := runcore.BuildPinned(runcore.WithBuildTenant(t.Context(), "globex"), cache, pinned)
	if err != nil {
		t.Fatal(err)
	}
	runcore.CloseBuilt(b)
	if diff := cmp.Diff(want, builds); diff != "" {
		t.Fatalf("builds after the run (-want +got):\n%s", diff)
	}
}
