package runbuild_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/internal/runbuild"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/internal/serveconfig"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/server"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// syncBuffer is a bytes.Buffer for a logger that several runs write to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A server reuses an agent across runs, and each run is its own: its
// transcript and tool calls are only its own, the hooks' ON_START and
// ON_STOP fire for each run with its ID, and a policy file changed between
// two runs applies whole to the second.
func TestServedAgentKeepsNothingBetweenRuns(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ws, "a.go"), "package a\n")
	writeFile(t, filepath.Join(dir, "script.yaml"), "turns:\n  - toolCalls:\n      - name: glob\n        args: {pattern: \"*.go\"}\n  - text: done\n")
	policy := filepath.Join(dir, "policy.yaml")
	writeFile(t, policy, "rules:\n  - id: no-glob\n    tool: glob\n    decision: deny\n    reason: not today\n")
	writeFile(t, filepath.Join(dir, "hooks.yaml"), "hooks:\n  - event: onStart\n    action: {type: log, message: \"started ${agent}\"}\n  - event: onStop\n    action: {type: log, message: \"stopped ${runId}\"}\n")
	cfg, err := runs.RunConfig{Agent: "globber", AgentConfig: runs.AgentConfig{Model: runs.ModelRef{Provider: "script", Name: "script.yaml"}, Workdir: "ws", PolicyFile: "policy.yaml", HooksFiles: []string{"hooks.yaml"}}}.Resolve(dir)
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	b := runbuild.New(&runbuild.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	run, stop := servedRunner(t, b, cfg)

	first := run()
	writeFile(t, policy, "rules:\n  - id: glob-ok\n    tool: glob\n    decision: allow\n")
	second := run()
	third := run()
	stop() // every run's ON_STOP has run
	for i, r := range []runResult{first, second, third} {
		if len(r.res.ToolCalls) != 1 || len(r.res.Transcript) != 4 {
			t.Fatalf("run %d: %d tool calls, %d messages; want 1 and 4 (prompt, call, result, answer)", i+1, len(r.res.ToolCalls), len(r.res.Transcript))
		}
		if n := strings.Count(logs.String(), "stopped "+r.id); n != 1 {
			t.Errorf("run %d: ON_STOP logged %d times with its ID, want 1:\n%s", i+1, n, logs.String())
		}
	}
	if n := strings.Count(logs.String(), "started globber"); n != 3 {
		t.Errorf("ON_START logged %d times, want 3 (one per run):\n%s", n, logs.String())
	}
	if d := first.res.ToolCalls[0].Decision; d.Outcome != "denied" {
		t.Errorf("first run's glob: %+v, want denied by the first policy", d)
	}
	for i, r := range []runResult{second, third} {
		if d := r.res.ToolCalls[0].Decision; d.Outcome != "allowed" {
			t.Errorf("run %d's glob: %+v, want allowed by the changed policy", i+2, d)
		}
	}
}

type runResult struct {
	id  string
	res agent.Result
}

// servedRunner serves cfg's agent built by b over a memory store and
// returns a function that starts a run and waits for its result, and one
// that shuts the server down once every run it drives is done.
func servedRunner(t *testing.T, b runs.Builder, cfg runs.RunConfig) (run func() runResult, stop func()) {
	st := memory.New(nil)
	tokens, err := serveconfig.NewTokens([]serveconfig.TokenEntry{{SHA256: serveconfig.HashToken("tg_ops"), Name: "olga", Roles: []server.Role{server.RoleAdmin}}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(st, b, &server.Options{Agents: map[string]runs.RunConfig{"globber": cfg}, Tokens: tokens.Lookup})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = srv.Run(ctx) }()
	ts := httptest.NewServer(srv)
	stop = func() { _ = srv.Shutdown(context.Background()) }
	t.Cleanup(func() {
		ts.Close()
		stop()
		cancel()
	})
	run = func() runResult {
		t.Helper()
		req, _ := http.NewRequest("POST", ts.URL+"/v1/runs?wait=1m", strings.NewReader(`{"agent":"globber","prompt":"go"}`))
		req.Header.Set("Authorization", "Bearer tg_ops")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var view serverapi.RunView
		err = json.NewDecoder(resp.Body).Decode(&view)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("POST /v1/runs: %d %v", resp.StatusCode, err)
		}
		r, err := st.GetRun(ctx, view.ID)
		if err != nil {
			t.Fatal(err)
		}
		out := runResult{id: view.ID}
		if err := json.Unmarshal(r.Result, &out.res); err != nil || r.Status != store.RunDone {
			t.Fatalf("run %s: %s, result %s: %v", view.ID, r.Status, r.Result, err)
		}
		return out
	}
	return run, stop
}

// A run's tool state (todowrite's plan) is its own, though the agent's
// tools are reused: each run's first plan is new, not a change of the plan
// the run before it left.
func TestServedAgentToolStatePerRun(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "script.yaml"), `turns:
  - toolCalls:
      - name: todowrite
        args: {todos: [{id: a, content: plan, status: pending}]}
  - toolCalls:
      - name: todowrite
        args: {todos: [{id: a, content: plan, status: completed}]}
  - text: done
`)
	cfg, err := runs.RunConfig{Agent: "globber", AgentConfig: runs.AgentConfig{Model: runs.ModelRef{Provider: "script", Name: "script.yaml"}, Workdir: "ws"}}.Resolve(dir)
	if err != nil {
		t.Fatal(err)
	}
	run, _ := servedRunner(t, runbuild.New(nil), cfg)
	for i := range 3 {
		r := run()
		if len(r.res.ToolCalls) != 2 {
			t.Fatalf("run %d: %d tool calls, want 2", i+1, len(r.res.ToolCalls))
		}
		first, second := r.res.ToolCalls[0].Output, r.res.ToolCalls[1].Output
		if strings.Contains(first, "changed:") || !strings.Contains(second, "a pending -> completed") {
			t.Errorf("run %d: the plan is not the run's own:\nfirst call: %s\nsecond call: %s", i+1, first, second)
		}
	}
}

// The runs of one build share its tools' argument validators: the host
// makes an agent (and its gate) for each run from the build's options as
// the build cache shares them, and each would otherwise resolve every
// tool's input schema again (gate's TestGatesShareValidators shows the
// sharing).
func TestBuildSharesValidatorsAcrossRuns(t *testing.T) {
	cache := runcore.NewBuildCache(runbuild.New(nil))
	defer cache.Close()
	cfg := servedConfig(t)
	first, err := cache.Build(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := cache.Build(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if first.Options.Validators == nil || first.Options.Validators != second.Options.Validators {
		t.Fatalf("two runs of one build have validators %p and %p: want one cache, shared", first.Options.Validators, second.Options.Validators)
	}
}
