package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/server"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/store/sqlite"
	"github.com/tollgate-dev/tollgate/tool"
)

// gatedTool is a read-only tool whose calls wait until release is closed.
type gatedTool struct{ release chan struct{} }

func (g *gatedTool) Spec() tool.Spec {
	return tool.Spec{Name: "lookup_slow", Hints: &tool.Hints{ReadOnly: true}}
}

func (g *gatedTool) Call(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
	select {
	case <-g.release:
	case <-ctx.Done():
	}
	return tool.Text("found"), nil
}

// slowScript calls lookup_slow once, then answers "done".
func slowScript() model.Model {
	return testkit.Script([]model.FuncCall{testkit.Call("c1", "lookup_slow", nil)})
}

// POST /v1/runs?wait= answers once the run ended: its status, answer and
// calls, in the one round trip (without it, the run as stored at its start).
func TestStartRunWaitsForTheEnd(t *testing.T) {
	f := newFixture(t, nil, testkit.Script([]model.FuncCall{testkit.Call("c1", "lookup", nil)}), nil)
	var v serverapi.RunView
	if code := f.do("POST", "/v1/runs?wait=10s", aliceToken, serverapi.StartRunRequest{Agent: "payer", Prompt: "look"}, &v); code != http.StatusCreated {
		t.Fatalf("POST /v1/runs?wait=10s: %d %+v", code, v)
	}
	if v.Status != store.RunDone || v.Text != "done" || !strings.Contains(string(v.ToolCalls), `"lookup"`) {
		t.Fatalf("the answer after waiting: status %s, text %q, calls %s; want the ended run", v.Status, v.Text, v.ToolCalls)
	}
}

// A run that halts for a person's answer is settled: the wait ends there,
// with the request to answer in the view.
func TestStartRunWaitEndsAtAHalt(t *testing.T) {
	f := newFixture(t, nil, nil, nil)
	var v serverapi.RunView
	if code := f.do("POST", "/v1/runs?wait=10s", aliceToken, serverapi.StartRunRequest{Agent: "payer", Prompt: "pay"}, &v); code != http.StatusCreated {
		t.Fatalf("POST: %d %+v", code, v)
	}
	if v.Status != store.RunPending || len(v.Pending) != 1 {
		t.Fatalf("status %s with %d pending; want pending with the transfer's request", v.Status, len(v.Pending))
	}
}

// The wait ends at its time with the run as it is then, still running;
// a wait that is not a duration is refused before anything starts.
func TestStartRunWaitEndsAtItsTime(t *testing.T) {
	slow := &gatedTool{release: make(chan struct{})}
	defer close(slow.release)
	f := newFixture(t, nil, slowScript(), nil, slow)
	var v serverapi.RunView
	if code := f.do("POST", "/v1/runs?wait=100ms", aliceToken, serverapi.StartRunRequest{Agent: "payer", Prompt: "look"}, &v); code != http.StatusCreated {
		t.Fatalf("POST: %d %+v", code, v)
	}
	if v.Status != store.RunRunning {
		t.Fatalf("after the wait's time: status %s, want running", v.Status)
	}
	var prob serverapi.Problem
	if code := f.do("POST", "/v1/runs?wait=soon", aliceToken, serverapi.StartRunRequest{Agent: "payer", Prompt: "look"}, &prob); code != http.StatusBadRequest || !strings.Contains(prob.Detail, "wait: want a duration") {
		t.Fatalf("?wait=soon: %d %q", code, prob.Detail)
	}
	var page serverapi.RunPage
	if f.do("GET", "/v1/runs", aliceToken, nil, &page); len(page.Runs) != 1 {
		t.Fatalf("%d runs stored; the refused request must start none", len(page.Runs))
	}
}

// A keyed request sent again with ?wait= waits for the run the key started
// (driven by the first request's part), following its events from where
// the log is, in the server's feed (it read the run's events in the store
// from its first), and holding one of the principal's stream places.
func TestStartRunWaitOnARetry(t *testing.T) {
	slow := &gatedTool{release: make(chan struct{})}
	st := &runEventReads{Store: memory.New(nil), following: make(chan struct{})}
	f := newFixture(t, st, slowScript(), &server.Options{MaxStreamsPerPrincipal: 1}, slow)
	id := f.startRun("Idempotency-Key", "k1")
	st.runReads.Store(0) // the first request's
	retry := func() (serverapi.RunView, int) {
		var v serverapi.RunView
		code := f.do("POST", "/v1/runs?wait=20s", aliceToken, serverapi.StartRunRequest{Agent: "payer", Prompt: "pay"}, &v, "Idempotency-Key", "k1")
		return v, code
	}
	answered := make(chan serverapi.RunView, 1)
	go func() {
		v, code := retry()
		if code != http.StatusOK {
			t.Errorf("the retry: %d %+v", code, v)
		}
		answered <- v
	}()
	select { // the retry follows the run's events: the run is not done
	case <-st.following:
	case v := <-answered:
		t.Fatalf("the retry answered %s without waiting for the run", v.Status)
	}
	close(slow.release)
	if v := <-answered; v.ID != id || v.Status != store.RunDone {
		t.Fatalf("the retry answered run %s %s; want %s done", v.ID, v.Status, id)
	}
	if n := st.reads.Load(); n != 0 {
		t.Errorf("the retry read the run's events in the store %d times, want none (the feed has them)", n)
	}
}

// runEventReads is a store that counts the reads of runs' events, and
// closes following at a request's second read of a run (the retry's: its
// key's look-up, then the run read where the wait starts following).
type runEventReads struct {
	store.Store
	reads     atomic.Int64
	runReads  atomic.Int64
	following chan struct{}
}

func (r *runEventReads) GetRun(ctx context.Context, id string) (store.Run, error) {
	run, err := r.Store.GetRun(ctx, id)
	if onRequest(ctx) && r.runReads.Add(1) == 2 {
		close(r.following)
	}
	return run, err
}

func (r *runEventReads) ListEvents(ctx context.Context, f store.EventFilter) ([]store.Event, error) {
	if f.RunID != "" {
		r.reads.Add(1)
	}
	return r.Store.ListEvents(ctx, f)
}

// A retry with ?wait= when its principal has no stream place free answers
// at once, with the run as it is.
func TestStartRunWaitWithNoPlaceFree(t *testing.T) {
	slow := &gatedTool{release: make(chan struct{})}
	defer close(slow.release)
	f := newFixture(t, nil, slowScript(), &server.Options{MaxStreamsPerPrincipal: 1}, slow)
	f.startRun("Idempotency-Key", "k1")
	resp, closeStream := openStream(t, f, aliceToken) // alice's one place
	code := resp.StatusCode
	defer closeStream()
	if code != http.StatusOK {
		t.Fatalf("the stream: %d", code)
	}
	answered := make(chan serverapi.RunView, 1)
	go func() {
		var v serverapi.RunView
		if code := f.do("POST", "/v1/runs?wait=10m", aliceToken, serverapi.StartRunRequest{Agent: "payer", Prompt: "pay"}, &v, "Idempotency-Key", "k1"); code != http.StatusOK {
			t.Errorf("the retry: %d", code)
		}
		answered <- v
	}()
	select {
	case v := <-answered:
		if v.Status != store.RunRunning {
			t.Errorf("a retry with no stream place free: %s, want running", v.Status)
		}
	case <-time.After(time.Minute): // it waits for its 10 minutes instead
		t.Fatal("a retry with no stream place free waited")
	}
}

// A durable run is driven by a worker: the wait follows its events.
func TestDurableStartRunWaits(t *testing.T) {
	st := memory.New(nil)
	q := newMemQueue(t, st, &testBuilder{m: testkit.Script([]model.FuncCall{testkit.Call("c1", "lookup", nil)}), tools: agent.ToolList{&testkit.Counter{Name: "lookup", Hints: &tool.Hints{ReadOnly: true}}}})
	f := newFixture(t, st, nil, &server.Options{Durable: q})
	var v serverapi.RunView
	if code := f.do("POST", "/v1/runs?wait=10s", aliceToken, serverapi.StartRunRequest{Agent: "payer", Prompt: "look"}, &v); code != http.StatusCreated {
		t.Fatalf("POST: %d %+v", code, v)
	}
	if v.Status != store.RunDone || v.Text != "done" {
		t.Fatalf("the durable run after waiting: %s %q, want done", v.Status, v.Text)
	}
}

// A wait that follows a run's events in the store ends when the server
// shuts down, as an event stream does, with the run as it is then: it
// must not hold the shutdown (and then be cut off unanswered) for the
// rest of its ?wait=.
func TestDurableStartRunWaitEndsAtShutdown(t *testing.T) {
	st := memory.New(nil)
	slow := &gatedTool{release: make(chan struct{})}
	defer close(slow.release)
	q := newMemQueue(t, st, &testBuilder{m: slowScript(), tools: agent.ToolList{slow}})
	f := newFixture(t, st, nil, &server.Options{Durable: q})
	type answer struct {
		code int
		v    serverapi.RunView
	}
	answered := make(chan answer, 1)
	go func() {
		var a answer
		a.code = f.do("POST", "/v1/runs?wait=10m", aliceToken, serverapi.StartRunRequest{Agent: "payer", Prompt: "look"}, &a.v)
		answered <- a
	}()
	for { // the run is stored: the request is past the server's shutdown check
		page, err := st.ListRuns(context.Background(), store.RunFilter{AllTenants: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Runs) > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	go func() { _ = f.srv.Shutdown(context.Background()) }()
	select {
	case a := <-answered:
		if a.code != http.StatusCreated || settledStatus(a.v.Status) {
			t.Fatalf("the wait cut short by the shutdown: %d %s, want 201 with the run still running", a.code, a.v.Status)
		}
	case <-time.After(10 * time.Second): // ends at once with the fix; the wait asked 10 minutes
		t.Fatal("a ?wait= following the store did not end when the server shut down")
	}
}

// settledStatus reports whether a run in status st ended or halted.
func settledStatus(st store.RunStatus) bool { return st.Finished() || st == store.RunPending }

// A run this server drives answers its ?wait= with the run as its end
// stored it: the POST reads it not again, and the answer is what a read
// returns, from either store.
func TestStartRunWaitReadsTheRunNotAgain(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "runs.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	for name, s := range map[string]store.Store{"memory": memory.New(nil), "sqlite": st} {
		t.Run(name, func(t *testing.T) { startRunWaitReadsNotAgain(t, s) })
	}
}

func startRunWaitReadsNotAgain(t *testing.T, s store.Store) {
	c := &readCounter{Store: s}
	f := newFixture(t, c, testkit.Script([]model.FuncCall{testkit.Call("c1", "lookup", nil)}), nil)
	var v serverapi.RunView
	if code := f.do("POST", "/v1/runs?wait=10s", aliceToken, serverapi.StartRunRequest{Agent: "payer", Prompt: "look"}, &v); code != http.StatusCreated || v.Status != store.RunDone {
		t.Fatalf("POST /v1/runs?wait=10s: %d, status %s", code, v.Status)
	}
	if runs, _ := c.reset(); runs != 0 {
		t.Errorf("the POST read the run %d times after its end; want none (the end's write returned it)", runs)
	}
	var read serverapi.RunView
	if code := f.do("GET", "/v1/runs/"+v.ID, aliceToken, nil, &read); code != http.StatusOK {
		t.Fatalf("GET: %d", code)
	}
	a, _ := json.Marshal(v)
	b, _ := json.Marshal(read)
	if string(a) != string(b) {
		t.Errorf("the POST's answer and a read differ:\n%s\n%s", a, b)
	}
}
