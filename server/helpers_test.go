package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/internal/serveconfig"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/server"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/tool"
)

// Tokens of the tests: tenant acme has alice (operator and approver), vic
// (viewer), olga (operator only), ada (admin); tenant globex has bob (admin).
const (
	aliceToken = "tg_alice"
	vicToken   = "tg_vic"
	olgaToken  = "tg_olga"
	adaToken   = "tg_ada"
	bobToken   = "tg_bob"
)

func testTokens(t testing.TB) *serveconfig.Tokens {
	t.Helper()
	tk, err := serveconfig.NewTokens([]serveconfig.TokenEntry{
		{SHA256: serveconfig.HashToken(aliceToken), Name: "alice", Tenant: "acme", Roles: []server.Role{server.RoleOperator, server.RoleApprover}},
		{SHA256: serveconfig.HashToken(vicToken), Name: "vic", Tenant: "acme", Roles: []server.Role{server.RoleViewer}},
		{SHA256: serveconfig.HashToken(olgaToken), Name: "olga", Tenant: "acme", Roles: []server.Role{server.RoleOperator}},
		{SHA256: serveconfig.HashToken(adaToken), Name: "ada", Tenant: "acme", Roles: []server.Role{server.RoleAdmin}},
		{SHA256: serveconfig.HashToken(bobToken), Name: "bob", Tenant: "globex", Roles: []server.Role{server.RoleAdmin}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

const transferSchema = `{"type":"object","properties":{"amount":{"type":"integer","maximum":100}},"required":["amount"],"additionalProperties":false}`

// testBuilder builds agents over the scripted model and tools, with a
// policy that asks before transfer and takes the run's autonomy level.
type testBuilder struct {
	m      model.Model
	tools  agent.ToolList
	builds atomic.Int64
}

func (b *testBuilder) Build(ctx context.Context, cfg runs.RunConfig) (*runs.Built, error) {
	b.builds.Add(1)
	pol, err := policy.NewPolicy(policy.PolicySpec{Name: "test", Rules: []policy.Rule{
		{ID: "ask-transfer", Tools: []string{"transfer"}, Decision: approval.Ask, Reason: "money moves"},
		// Decides nothing: its would-be deny is recorded beside the decision.
		{ID: "watch-transfer", Tools: []string{"transfer"}, Decision: approval.Deny, Reason: "watched", Shadow: true},
	}})
	if err != nil {
		return nil, err
	}
	applied := []string{runcore.FieldAutonomy, runcore.FieldApprovalTTL}
	if cfg.PolicyFile != "" { // the run's own policy file instead
		if pol, _, err = policy.LoadPolicy(cfg.PolicyFile); err != nil {
			return nil, err
		}
		applied = append(applied, runcore.FieldPolicyFile)
	}
	if cfg.Autonomy != "" {
		if pol, err = pol.WithAutonomy(approval.Autonomy(cfg.Autonomy)); err != nil {
			return nil, err
		}
	}
	return &runs.Built{Options: agent.Options{ID: cfg.Agent, Model: b.m, Tools: b.tools, Authorizers: []approval.Authorizer{pol}, MaxParallel: 1, ApprovalTTL: time.Duration(cfg.ApprovalTTL)},
		Applied: applied}, nil
}

func payerConfig(t testing.TB) runs.RunConfig {
	t.Helper()
	cfg, err := runs.RunConfig{AgentConfig: runs.AgentConfig{Model: runs.ModelRef{Provider: "script", Name: "s.yaml"}, Workdir: "."}}.Resolve(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

type fixture struct {
	t        testing.TB
	srv      *server.Server
	ts       *httptest.Server
	store    store.Store
	transfer *testkit.Counter
	lookup   *testkit.Counter
	builder  *testBuilder
}

// transferScript asks for transfer {"amount": 5} on the first turn, then
// answers "done".
func transferScript() model.Model {
	return testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer", map[string]int{"amount": 5})})
}

func newFixture(t testing.TB, s store.Store, m model.Model, opts *server.Options, extra ...tool.Tool) *fixture {
	t.Helper()
	if s == nil {
		s = memory.New(nil)
	}
	if m == nil {
		m = transferScript()
	}
	f := &fixture{t: t, store: s,
		transfer: &testkit.Counter{Name: "transfer", Schema: transferSchema},
		lookup:   &testkit.Counter{Name: "lookup", Hints: &tool.Hints{ReadOnly: true}},
	}
	f.builder = &testBuilder{m: m, tools: append(agent.ToolList{f.transfer, f.lookup}, extra...)}
	if opts == nil {
		opts = &server.Options{}
	}
	if opts.Tokens == nil {
		tk := testTokens(t)
		opts.Tokens, opts.Tenants = tk.Lookup, tk.Tenants()
	}
	if opts.Agents == nil {
		opts.Agents = map[string]runs.RunConfig{"payer": payerConfig(t)}
	}
	if opts.Tick == 0 {
		opts.Tick = 20 * time.Millisecond
	}
	if opts.Heartbeat == 0 {
		opts.Heartbeat = 100 * time.Millisecond
	}
	srv, err := server.New(s, f.builder, opts)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	f.ts = httptest.NewServer(srv)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = srv.Run(ctx); close(done) }()
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		_ = srv.Shutdown(sctx)
		cancel()
		<-done
		f.ts.Close()
	})
	f.waitReady()
	return f
}

func (f *fixture) waitReady() {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(f.ts.URL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.t.Fatal("the server never became ready")
}

// do sends a request with a bearer token (none when empty) and a JSON body
// (nil for none), and returns the status and the body decoded into out (if
// not nil).
func (f *fixture) do(method, path, token string, body any, out any, hdr ...string) int {
	f.t.Helper()
	var rd io.Reader
	if body != nil {
		b, ok := body.([]byte)
		if !ok {
			b, _ = json.Marshal(body)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, f.ts.URL+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			f.t.Fatalf("%s %s: %d, body %s: %v", method, path, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode
}

// waitRun blocks until the run has one of the statuses, following the
// store's event log (no polling of the API).
func (f *fixture) waitRun(id string, want ...store.RunStatus) store.Run {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var after int64
	for {
		run, err := f.store.GetRun(ctx, id)
		if err == nil {
			for _, w := range want {
				if run.Status == w && run.Lease == nil {
					return run
				}
			}
		}
		evs, _ := f.store.ListEvents(ctx, store.EventFilter{AllTenants: true, RunID: id, AfterSeq: after})
		if len(evs) > 0 {
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

// startRun starts a run of the agent payer as alice and returns its ID.
func (f *fixture) startRun(hdr ...string) string {
	f.t.Helper()
	var v serverapi.RunView
	if code := f.do("POST", "/v1/runs", aliceToken, serverapi.StartRunRequest{Agent: "payer", Prompt: "pay"}, &v, hdr...); code != http.StatusCreated && code != http.StatusOK {
		f.t.Fatalf("POST /v1/runs: %d %+v", code, v)
	}
	return v.ID
}

// pending returns the single pending approval of a halted run.
func (f *fixture) pending(runID string) serverapi.ApprovalView {
	f.t.Helper()
	f.waitRun(runID, store.RunPending)
	var page serverapi.ApprovalPage
	if code := f.do("GET", "/v1/approvals?status=pending&run="+runID, aliceToken, nil, &page); code != http.StatusOK || len(page.Approvals) != 1 {
		f.t.Fatalf("pending approvals of %s: %d %+v", runID, code, page)
	}
	return page.Approvals[0]
}

func writeFile(t testing.TB, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// failingBuilder fails to build the agents it names, with its error.
type failingBuilder map[string]error

func (b failingBuilder) Build(ctx context.Context, cfg runs.RunConfig) (*runs.Built, error) {
	if err := b[cfg.Agent]; err != nil {
		return nil, err
	}
	return &runs.Built{Applied: runcore.GovernanceFields()}, nil
}

// openStream opens an event stream of all of token's events and returns
// the response and a function that closes it.
func openStream(t *testing.T, f *fixture, token string) (*http.Response, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", f.ts.URL+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	return resp, func() { cancel(); resp.Body.Close() }
}
