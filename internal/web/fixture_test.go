package web_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/builtin"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/internal/serveconfig"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/internal/web"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/server"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/tool"
)

// Tokens of the tests, all of tenant acme: alice decides (operator and
// approver), vic only looks (viewer).
const (
	aliceToken = "tg_alice_page"
	vicToken   = "tg_vic_page"
	adaToken   = "tg_ada_page"
)

const transferSchema = `{"type":"object","properties":{"amount":{"type":"integer","maximum":100}},"required":["amount"],"additionalProperties":false}`

// fileTool is a tool that appends its arguments, one line per run, to a
// file: the file is the witness of how often, and with what, it ran.
type fileTool struct {
	name   string
	schema string
	hints  *tool.Hints
	path   string
	output string

	mu sync.Mutex
}

func (f *fileTool) Spec() tool.Spec {
	sp := tool.Spec{Name: f.name, Hints: f.hints, Source: "test"}
	if f.schema != "" {
		if err := json.Unmarshal([]byte(f.schema), &sp.InputSchema); err != nil {
			panic(err)
		}
	}
	return sp
}

func (f *fileTool) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fh, err := os.OpenFile(f.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return tool.Result{}, err
	}
	var line bytes.Buffer
	if err := json.Compact(&line, args); err != nil {
		line.Write(args)
	}
	line.WriteByte('\n')
	_, err = fh.Write(line.Bytes())
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return tool.Result{}, err
	}
	out := f.output
	if out == "" {
		out = "ran " + f.name
	}
	return tool.Text(out), nil
}

// runs returns the arguments of every run so far, compacted, in order.
func (f *fileTool) runs(t *testing.T) []string {
	t.Helper()
	fh, err := os.Open(f.path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var lines []string
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// pagePolicy is the policy file of the fixture's agent: a person is asked
// before each call.
const pagePolicy = `# The page tests' policy.
rules:
  - id: ask-transfer
    tool: transfer
    decision: ask
    reason: money moves
  - id: ask-note
    tool: note
    decision: ask
    reason: notes are kept
  # Decides nothing: its would-be deny is recorded beside each transfer's decision.
  - id: watch-transfer
    mode: shadow
    tool: transfer
    decision: deny
    reason: watched
`

// builder builds agents over the scripted model and the tools, with the
// policy of the run's policy file (pagePolicy).
type builder struct {
	m     model.Model
	tools agent.ToolList
	ttl   time.Duration // of each approval request
}

func (b *builder) Build(ctx context.Context, cfg runs.RunConfig) (*runs.Built, error) {
	pol, _, err := policy.LoadPolicy(cfg.PolicyFile)
	if err != nil {
		return nil, err
	}
	return &runs.Built{Options: agent.Options{ID: cfg.Agent, Model: b.m, Tools: b.tools,
		Authorizers: []approval.Authorizer{pol}, MaxParallel: 1, ApprovalTTL: b.ttl},
		Applied: []string{runcore.FieldPolicyFile}}, nil
}

// fixture is a server with the page, in process, over a memory store.
type fixture struct {
	t   *testing.T
	url string
	ts  *httptest.Server
	// skew is added to the server's clock (nanoseconds): tests move time on.
	skew     atomic.Int64
	store    store.Store
	transfer *fileTool
	note     *fileTool
}

// newFixture starts a server whose agent asks before each call, over the
// model m; the note tool answers noteOutput, and requests expire after ten
// minutes.
func newFixture(t *testing.T, m model.Model, noteOutput string) *fixture {
	t.Helper()
	return newFixtureTTL(t, m, noteOutput, 10*time.Minute)
}

// newFixtureTTL is newFixture with requests that expire after ttl.
func newFixtureTTL(t *testing.T, m model.Model, noteOutput string, ttl time.Duration) *fixture {
	t.Helper()
	return newFixtureAt(t, m, noteOutput, ttl, "")
}

// newFixtureAt is newFixtureTTL with the server mounted under prefix (such
// as "/tg") of another mux, through http.StripPrefix; f.url includes it.
func newFixtureAt(t *testing.T, m model.Model, noteOutput string, ttl time.Duration, prefix string) *fixture {
	t.Helper()
	return newFixtureWith(t, m, noteOutput, ttl, prefix)
}

// newFixtureWith is newFixtureAt with extra tools beside the fixture's.
func newFixtureWith(t *testing.T, m model.Model, noteOutput string, ttl time.Duration, prefix string, extra ...tool.Tool) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{t: t, store: memory.New(nil),
		transfer: &fileTool{name: "transfer", schema: transferSchema, hints: &tool.Hints{Destructive: true, OpenWorld: true}, path: filepath.Join(dir, "transfer.runs")},
		note:     &fileTool{name: "note", hints: &tool.Hints{Idempotent: true}, path: filepath.Join(dir, "note.runs"), output: noteOutput},
	}
	tokens, err := serveconfig.NewTokens([]serveconfig.TokenEntry{
		{SHA256: serveconfig.HashToken(aliceToken), Name: "alice", Tenant: "acme", Roles: []server.Role{server.RoleOperator, server.RoleApprover}},
		{SHA256: serveconfig.HashToken(vicToken), Name: "vic", Tenant: "acme", Roles: []server.Role{server.RoleViewer}},
		{SHA256: serveconfig.HashToken(adaToken), Name: "ada", Tenant: "acme", Roles: []server.Role{server.RoleAdmin}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "policy.yaml"), []byte(pagePolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := runs.RunConfig{AgentConfig: runs.AgentConfig{Model: runs.ModelRef{Provider: "script", Name: "s.yaml"}, Workdir: ".", PolicyFile: "policy.yaml"}}.Resolve(dir)
	if err != nil {
		t.Fatal(err)
	}
	tools := append(agent.ToolList{f.transfer, f.note}, extra...)
	builtins, err := builtin.New(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range builtins {
		if b.Spec().Name == "question" {
			tools = append(tools, b) // read-only: the policy lets it ask
		}
	}
	srv, err := server.New(f.store, &builder{m: m, tools: tools, ttl: ttl}, &server.Options{
		Agents: map[string]runs.RunConfig{"payer": cfg}, Tokens: tokens.Lookup, Page: web.Handler(),
		Tick: 20 * time.Millisecond, Heartbeat: 200 * time.Millisecond,
		Now: func() time.Time { return time.Now().Add(time.Duration(f.skew.Load())) },
	})
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = srv
	if prefix != "" {
		mux := http.NewServeMux()
		mux.Handle(prefix+"/", http.StripPrefix(prefix, srv))
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "the host's own page", http.StatusTeapot) })
		h = mux
	}
	ts := httptest.NewServer(h)
	f.url, f.ts = ts.URL+prefix, ts
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = srv.Run(ctx); close(done) }()
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		_ = srv.Shutdown(sctx)
		cancel()
		<-done
		ts.CloseClientConnections()
		ts.Close()
	})
	f.waitReady()
	return f
}

func (f *fixture) waitReady() {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if resp, err := http.Get(f.url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(5 * time.Millisecond) // Run marks the server ready once it has taken stored runs up
	}
	f.t.Fatal("the server never became ready")
}

// do sends a JSON request as token and decodes the answer into out.
func (f *fixture) do(method, path, token string, body, out any) int {
	f.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			f.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, f.url+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			f.t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode
}

// startRun starts a run of the agent payer as alice, over the API.
func (f *fixture) startRun() string {
	f.t.Helper()
	var v serverapi.RunView
	if code := f.do("POST", "/v1/runs", aliceToken, serverapi.StartRunRequest{Agent: "payer", Prompt: "pay"}, &v); code != http.StatusCreated {
		f.t.Fatalf("POST /v1/runs: %d %+v", code, v)
	}
	return v.ID
}

// waitRun blocks until the run has one of the statuses and no host holds
// it, following the store's event log.
func (f *fixture) waitRun(id string, want ...store.RunStatus) store.Run {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var after int64
	for {
		run, err := f.store.GetRun(ctx, id)
		if err == nil && run.Lease == nil {
			for _, w := range want {
				if run.Status == w {
					return run
				}
			}
		}
		if evs, _ := f.store.ListEvents(ctx, store.EventFilter{AllTenants: true, RunID: id, AfterSeq: after}); len(evs) > 0 {
			after = evs[len(evs)-1].Seq
			continue
		}
		wctx, wcancel := context.WithTimeout(ctx, 50*time.Millisecond)
		_ = f.store.WaitEvents(wctx, store.EventFilter{AllTenants: true, RunID: id, AfterSeq: after})
		wcancel()
		if ctx.Err() != nil {
			f.t.Fatalf("run %s: still %s, want %v", id, run.Status, want)
		}
	}
}

// pending returns the pending approvals of a run, over the API.
func (f *fixture) pending(runID string) []serverapi.ApprovalView {
	f.t.Helper()
	var page serverapi.ApprovalPage
	if code := f.do("GET", "/v1/approvals?status=pending&run="+runID, aliceToken, nil, &page); code != http.StatusOK {
		f.t.Fatalf("pending approvals of %s: %d", runID, code)
	}
	return page.Approvals
}
