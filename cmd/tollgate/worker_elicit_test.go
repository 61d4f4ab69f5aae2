package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/approval/inbox"
	"github.com/tollgate-dev/tollgate/internal/dbosengine"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/internal/storeimpl"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/sqlite"
	"github.com/tollgate-dev/tollgate/tool"
)

// A durable run driven by `tollgate worker` (no terminal, no person) whose
// MCP server asks the person for input halts with the elicitation stored
// as a pending request; answered through the inbox from another process,
// the run goes on in the worker and the answer reaches the server.
func TestWorkerElicitationAnsweredLater(t *testing.T) {
	t.Parallel()
	bin := tollgateBinary(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	mcpFile := mcpConfig(t, dir, map[string]any{"app": map[string]any{"command": os.Args[0], "env": map[string]string{"TOLLGATE_TEST_MCP_SERVER": "elicit"}}})
	script := apWrite(t, dir, "script.yaml", "turns:\n  - toolCalls:\n      - {name: mcp__app__deploy, id: d1, args: {env: prod}}\n  - text: deployed\n")
	cfg := apWrite(t, dir, "worker.yaml", "database: sqlite:dbos.db\nstateDir: state\nconcurrency: 2\nexecutorId: worker-e\n")
	cmd := exec.Command(bin, "worker", "--config", cfg)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var mu sync.Mutex
	var stderr strings.Builder
	ready, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		s := bufio.NewScanner(pr)
		for s.Scan() {
			mu.Lock()
			stderr.WriteString(s.Text() + "\n")
			mu.Unlock()
			if strings.Contains(s.Text(), "taking runs") {
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-done:
		t.Fatalf("the worker exited: %s", stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatal("the worker did not start")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// The answer is sealed with the worker's key (decision.key in its state
	// directory), as every process of one store must seal it: a decision
	// sealed with another key is refused.
	key, err := storeimpl.LoadDecisionKey(filepath.Join(dir, "state", decisionKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(ctx, filepath.Join(dir, "state", storeFile), &store.Options{DecisionKey: key})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	client, err := dbosengine.New(ctx, dbosengine.Options{DatabaseURL: "sqlite:" + filepath.Join(dir, "dbos.db"), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close(time.Second)
	runCfg, err := runs.RunConfig{AgentConfig: runs.AgentConfig{Model: runs.ModelRef{Provider: "script", Name: script}, Workdir: ws, MCPFiles: []string{mcpFile}}}.Resolve(dir)
	if err != nil {
		t.Fatal(err)
	}
	id, err := client.Start(ctx, runcore.DurableRun{Config: runCfg, Prompt: "deploy", Owner: tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}})
	if err != nil {
		t.Fatal(err)
	}
	// The elicitation becomes the run's pending request.
	var pending store.Approval
	var after int64
	for pending.ID == "" {
		page, err := st.ListApprovals(ctx, store.ApprovalFilter{AllTenants: true, RunID: id, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range page.Approvals {
			if a.Status == store.StatusPending {
				pending = a
			}
		}
		if pending.ID == "" {
			evs, err := st.ListEvents(ctx, store.EventFilter{AllTenants: true, RunID: id, AfterSeq: after, Limit: store.MaxLimit})
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) > 0 {
				after = evs[len(evs)-1].Seq
				continue
			}
			if err := st.WaitEvents(ctx, store.EventFilter{AllTenants: true, RunID: id, AfterSeq: after}); err != nil {
				mu.Lock()
				t.Fatalf("no pending request: %v\n%s", err, stderr.String())
			}
		}
	}
	if !strings.HasPrefix(pending.ID, "elicitation_") || !strings.Contains(pending.Prompt, `"app" asks: Deploy to which region?`) {
		t.Fatalf("pending request %+v", pending.Request)
	}
	ib := inbox.New(st, &inbox.Options{Answer: client.Answer})
	if _, err := ib.Decide(ctx, pending, inbox.Decision{Approve: true, By: tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"},
		Data: json.RawMessage(`{"answers":[["2"],["us"]]}`)}); err != nil {
		t.Fatal(err)
	}
	r, err := client.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != store.RunDone || !strings.Contains(string(r.Result), `server got {\"action\":\"accept\",\"content\":{\"count\":2,\"region\":\"us\"}}`) {
		mu.Lock()
		t.Fatalf("run %s: %s %s\n%s", id, r.Status, r.Result, stderr.String())
	}
	// Once used, the answer is no longer kept; who gave it is.
	a, err := st.GetApproval(ctx, id, pending.ID)
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != store.StatusUsed || a.Unverified || a.DecidedBy.Name != "alice" || string(a.Data) != string(storeimpl.RedactedAnswer) {
		t.Errorf("used elicitation: status %s, unverified %v, by %v, data %s (kind %s/%s)", a.Status, a.Unverified, a.DecidedBy, a.Data, a.Kind, a.Request.Kind)
	}
}
