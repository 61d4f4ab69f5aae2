package runbuild_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/internal/runbuild"
	"github.com/tollgate-dev/tollgate/internal/serveconfig"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/server"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/tool"
)

// A Go program serves server.yaml's agents with the library builder: the
// agent's deny: is applied to a run started over the API, as under
// `tollgate serve`, and its script model is opened from the configuration.
func TestServerAppliesServerYAMLDeny(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "script.yaml"), "turns:\n  - toolCalls:\n      - name: save_note\n        args: {name: todo}\n  - text: done\n")
	p := write(t, filepath.Join(dir, "server.yaml"), "agents:\n  noter:\n    model: script:script.yaml\n    workdir: ws\n    deny: [save_note]\n")
	cfg, err := serveconfig.LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	var saved atomic.Int64
	save := tool.Must("save_note", "Save a note.", func(ctx context.Context, in struct {
		Name string `json:"name"`
	}) (string, error) {
		saved.Add(1)
		return "saved", nil
	}, nil)
	b := runbuild.New(&runbuild.Options{Tools: []tool.Tool{save}})
	if err := cfg.CheckAgents(t.Context(), b); err != nil {
		t.Fatalf("CheckAgents: %v", err)
	}
	tokens, err := serveconfig.NewTokens([]serveconfig.TokenEntry{{SHA256: serveconfig.HashToken("tg_ops"), Name: "olga", Roles: []server.Role{server.RoleAdmin}}})
	if err != nil {
		t.Fatal(err)
	}
	st := memory.New(nil)
	srv, err := server.New(st, b, &server.Options{Agents: cfg.Agents, AgentTenants: cfg.AgentTenants, Tokens: tokens.Lookup})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() { _ = srv.Run(ctx) }()
	ts := httptest.NewServer(srv)
	defer ts.Close()
	defer func() { _ = srv.Shutdown(context.Background()) }()

	req, _ := http.NewRequest("POST", ts.URL+"/v1/runs", strings.NewReader(`{"agent":"noter","prompt":"save"}`))
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
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	var run store.Run
	for {
		if run, err = st.GetRun(wctx, view.ID); err == nil && run.Status != store.RunRunning && run.Lease == nil {
			break
		}
		if wctx.Err() != nil {
			t.Fatalf("the run did not end: %+v %v", run, err)
		}
		c, cc := context.WithTimeout(wctx, 50*time.Millisecond)
		_ = st.WaitEvents(c, store.EventFilter{AllTenants: true, RunID: view.ID})
		cc()
	}
	var res agent.Result
	if err := json.Unmarshal(run.Result, &res); err != nil {
		t.Fatalf("result of %s run: %v", run.Status, err)
	}
	if run.Status != store.RunDone || saved.Load() != 0 || len(res.ToolCalls) != 1 || res.ToolCalls[0].Decision.By.String() != "hook:deny" {
		t.Fatalf("run %s, save_note ran %d times, calls %+v; want done with save_note denied by hook:deny", run.Status, saved.Load(), res.ToolCalls)
	}
}
