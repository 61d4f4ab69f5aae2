package server_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/server"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/tool"
)

// A run halted under one server, decided while no server follows the log,
// is resumed by the next server when it starts; the tool runs once, there.
func TestRestartPicksUpAnsweredRun(t *testing.T) {
	s := memory.New(nil)
	a := newFixture(t, s, nil, nil)
	id := a.startRun()
	ap := a.pending(id)
	sctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := a.srv.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	// The stopped server still answers the API, but resumes nothing.
	if code := a.do("POST", "/v1/approvals/"+ap.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: ap.ArgsDigest}, nil); code != http.StatusOK {
		t.Fatalf("decision: %d", code)
	}
	if code := a.do("POST", "/v1/runs", aliceToken, serverapi.StartRunRequest{Agent: "payer", Prompt: "x"}, nil); code != http.StatusServiceUnavailable {
		t.Fatalf("start on a stopped server: %d", code)
	}
	b := newFixture(t, s, nil, nil)
	b.waitRun(id, store.RunDone)
	if a.transfer.Count() != 0 || b.transfer.Count() != 1 {
		t.Fatalf("transfer ran %d times on the old server and %d on the new, want 0 and 1", a.transfer.Count(), b.transfer.Count())
	}
}

// A run whose host claimed it and died (its lease expires) is taken over by
// a server without any manual step; the approved call runs once.
func TestTakeoverAfterLeaseExpiry(t *testing.T) {
	ctx := t.Context()
	s := memory.New(nil)
	b := &testBuilder{m: transferScript()}
	transfer := &testkit.Counter{Name: "transfer", Schema: transferSchema}
	b.tools = append(b.tools, transfer)
	h, err := runs.New(s, b, &runs.Options{Holder: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.Start(ctx, runs.StartRequest{RunID: "run_dead", Tenant: "acme", Owner: tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}, Config: payerConfig(t), Prompt: "pay"})
	if err != nil || len(res.Pending) != 1 {
		t.Fatalf("start: %+v %v", res, err)
	}
	if _, err := h.Answer(ctx, "run_dead", res.Pending[0].ID, store.Answer{Approve: true, By: tool.PrincipalOf("person:alice")}); err != nil {
		t.Fatal(err)
	}
	// A host claims it and dies before using the approval.
	if _, _, err := s.ClaimRun(ctx, "run_dead", store.Claim{Holder: "dead", TTL: 50 * time.Millisecond, From: []store.RunStatus{store.RunPending}, To: store.RunResuming}); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, s, nil, &server.Options{Host: &runs.Options{LeaseTTL: 300 * time.Millisecond}})
	f.waitRun("run_dead", store.RunDone)
	if transfer.Count() != 0 || f.transfer.Count() != 1 {
		t.Fatalf("transfer ran %d times by the dead host's tools and %d by the server's, want 0 and 1", transfer.Count(), f.transfer.Count())
	}
}

// Shutdown lets a running call go on until its grace ends, then stops the
// run without ending it: it stays running, its lease released, and the next
// server takes it over from its checkpoint at once.
func TestShutdownReleasesRunningRun(t *testing.T) {
	s := memory.New(nil)
	m := testkit.Script([]model.FuncCall{testkit.Call("c1", "slow", nil)})
	started := make(chan struct{}, 1)
	a := newFixture(t, s, m, &server.Options{Host: &runs.Options{LeaseTTL: time.Hour}}, tool.Must("slow", "blocks until cancelled", func(ctx context.Context, _ struct{}) (string, error) {
		started <- struct{}{}
		<-ctx.Done()
		return "", ctx.Err()
	}, nil))
	id := a.startRun()
	<-started
	sctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := a.srv.Shutdown(sctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v, want the grace's deadline", err)
	}
	run, err := s.GetRun(t.Context(), id)
	if err != nil || run.Status != store.RunRunning || run.Lease != nil {
		t.Fatalf("run after shutdown: %s lease %+v %v", run.Status, run.Lease, err)
	}
	var p serverapi.Problem
	if code := a.do("GET", "/readyz", "", nil, &p); code != http.StatusServiceUnavailable {
		t.Fatalf("readyz while stopping: %d", code)
	}
	var quick testkit.Counter
	quick.Name = "slow"
	b := newFixture(t, s, m, nil, &quick)
	b.waitRun(id, store.RunDone, store.RunError)
	if got, _ := s.GetRun(t.Context(), id); got.Status != store.RunDone || quick.Count() != 1 {
		t.Fatalf("run after takeover: %s, the call ran %d times there", got.Status, quick.Count())
	}
}

// /healthz, /readyz and /metrics need no token; /metrics has runs by
// status, pending approvals, decision latency, tool calls by decision and
// model latency.
func TestOperations(t *testing.T) {
	var skew atomic.Int64 // the server's clock runs this far ahead
	now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	f := newFixture(t, nil, nil, &server.Options{Now: now})
	id := f.startRun()
	a := f.pending(id)
	get := func(path string) (int, string) {
		resp, err := http.Get(f.ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Fatalf("healthz %d", code)
	}
	if code, _ := get("/readyz"); code != 200 {
		t.Fatalf("readyz %d", code)
	}
	_, m := get("/metrics")
	for _, want := range []string{`tollgate_runs{status="pending"} 1`, "tollgate_approvals_pending 1", `tollgate_tool_calls_total{decision="pending"} 1`, "tollgate_model_turn_seconds_count 1"} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q:\n%s", want, grepTollgate(m))
		}
	}
	f.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, nil)
	f.waitRun(id, store.RunDone)
	// The store's counts are read again only after 10 s: scrapes, which
	// need no token, cannot drive the store's load.
	_, m = get("/metrics")
	if !strings.Contains(m, `tollgate_runs{status="pending"} 1`) {
		t.Errorf("a scrape within 10 s read the store again:\n%s", grepTollgate(m))
	}
	skew.Store(int64(11 * time.Second))
	_, m = get("/metrics")
	for _, want := range []string{`tollgate_runs{status="done"} 1`, "tollgate_approvals_pending 0", "tollgate_approval_decision_seconds_count 1", `tollgate_tool_calls_total{decision="approved"} 1`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q:\n%s", want, grepTollgate(m))
		}
	}
	if code, _ := get("/"); code != http.StatusNotFound {
		t.Fatalf("GET / without a page: %d", code)
	}
}

// Options.Page serves GET / and the page's other paths, never the API.
func TestPageHook(t *testing.T) {
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "page:"+r.URL.Path) })
	f := newFixture(t, nil, nil, &server.Options{Page: page})
	for path, want := range map[string]string{"/": "page:/", "/assets/app.js": "page:/assets/app.js", "/runs/run_1": "page:/runs/run_1"} {
		resp, err := http.Get(f.ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != want {
			t.Errorf("GET %s: %q, want %q", path, b, want)
		}
	}
	var p serverapi.Problem
	if code := f.do("GET", "/v1/runs", "", nil, &p); code != http.StatusUnauthorized {
		t.Fatalf("the API behind the page: %d", code)
	}
	if code := f.do("POST", "/", "", nil, nil); code == http.StatusOK {
		t.Fatal("POST / reached the page")
	}
}

func grepTollgate(m string) string {
	var out []string
	for _, l := range strings.Split(m, "\n") {
		if strings.HasPrefix(l, "tollgate_") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Two servers follow one store: both see every decision and both try to
// resume the run, and the call runs exactly once across them, run after run.
func TestTwoServersResumeOnce(t *testing.T) {
	s := memory.New(nil)
	a := newFixture(t, s, nil, nil)
	b := newFixture(t, s, nil, nil)
	const n = 20
	for i := range n {
		start, decide := a, b
		if i%2 == 1 {
			start, decide = b, a
		}
		id := start.startRun()
		ap := start.pending(id)
		if code := decide.do("POST", "/v1/approvals/"+ap.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: ap.ArgsDigest}, nil); code != http.StatusOK {
			t.Fatalf("decision: %d", code)
		}
		a.waitRun(id, store.RunDone)
	}
	if got := a.transfer.Count() + b.transfer.Count(); got != n {
		t.Fatalf("transfer ran %d times for %d approved runs (%d on one server, %d on the other)", got, n, a.transfer.Count(), b.transfer.Count())
	}
}
