package server_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/server"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/tool"
)

// memQueue is a runcore.DurableQueue that drives each run in this process
// with runcore.Durable on a minimal engine (steps run at once; Recv waits for
// the wake-up that Answer and Cancel send), and records what it was asked.
// Its runs only wake on that message: the answer poll is an hour.
type memQueue struct {
	t     *testing.T
	store store.Store
	d     *runcore.Durable

	mu        sync.Mutex
	started   []string
	answered  []string
	cancelled []string
	wake      map[string]chan struct{} // by topic
	ctx       context.Context          // of the runs; cancelled when the test ends
	wg        sync.WaitGroup
}

func newMemQueue(t *testing.T, s store.Store, b runs.Builder) *memQueue {
	d, err := runcore.NewDurable(s, b, &runcore.DurableOptions{AnswerPoll: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	q := &memQueue{t: t, store: s, d: d, wake: map[string]chan struct{}{}, ctx: ctx}
	t.Cleanup(func() { cancel(); q.wg.Wait() })
	return q
}

func (q *memQueue) topic(name string) chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	ch, ok := q.wake[name]
	if !ok {
		ch = make(chan struct{}, 1)
		q.wake[name] = ch
	}
	return ch
}

func (q *memQueue) Start(ctx context.Context, in runcore.DurableRun) (string, error) {
	if err := runcore.PrepareDurable(ctx, q.store, &in); err != nil {
		return "", err
	}
	q.mu.Lock()
	q.started = append(q.started, in.RunID)
	q.mu.Unlock()
	q.wg.Add(1)
	go func() {
		defer q.wg.Done()
		if _, err := q.d.Drive(q.ctx, memEngine{q}, in); err != nil && q.ctx.Err() == nil && !strings.Contains(err.Error(), "cancel") {
			q.t.Errorf("run %s: %v", in.RunID, err)
		}
	}()
	return in.RunID, nil
}

func (q *memQueue) Answer(ctx context.Context, runID, requestID string, d store.Answer) (store.Approval, error) {
	a, err := q.store.Decide(ctx, runID, requestID, d)
	if err != nil {
		return a, err
	}
	q.mu.Lock()
	q.answered = append(q.answered, requestID)
	q.mu.Unlock()
	select {
	case q.topic(runcore.AnswerTopic(requestID)) <- struct{}{}:
	default:
	}
	return a, nil
}

func (q *memQueue) Wait(ctx context.Context, runID string) (store.Run, error) {
	return store.Run{}, nil // not used by the server
}

func (q *memQueue) Cancel(ctx context.Context, runID string, by tool.Principal) error {
	r, err := q.store.GetRun(ctx, runID)
	if err != nil {
		return err
	}
	if r.Status.Finished() {
		return runs.ErrNotResumable
	}
	if _, err := q.store.UpdateRun(ctx, runID, store.RunUpdate{From: r.Status, Status: store.RunCancelled, ReleaseLease: true,
		Events: []store.Event{{Tenant: r.Tenant, RunID: runID, Type: runcore.EventRunCancelled}}}); err != nil {
		return err
	}
	q.mu.Lock()
	q.cancelled = append(q.cancelled, runID)
	chans := make([]chan struct{}, 0, len(q.wake))
	for _, ch := range q.wake {
		chans = append(chans, ch)
	}
	q.mu.Unlock()
	for _, ch := range chans {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	return nil
}

func (q *memQueue) calls() (started, answered, cancelled []string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.started), slices.Clone(q.answered), slices.Clone(q.cancelled)
}

// memEngine is runcore.Engine without records: nothing is replayed.
type memEngine struct{ q *memQueue }

func (e memEngine) Step(ctx context.Context, name string, fn func(context.Context) ([]byte, error)) ([]byte, error) {
	return fn(ctx)
}

func (e memEngine) Go(ctx context.Context, name string, fn func(context.Context) ([]byte, error)) (func() ([]byte, error), error) {
	type out struct {
		b   []byte
		err error
	}
	ch := make(chan out, 1)
	go func() {
		b, err := fn(ctx)
		ch <- out{b, err}
	}()
	return func() ([]byte, error) { o := <-ch; return o.b, o.err }, nil
}

func (e memEngine) Recv(ctx context.Context, topic string, timeout time.Duration) ([]byte, bool, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-e.q.topic(topic):
		return []byte("wake"), true, nil
	case <-t.C:
		return nil, false, nil
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
}

// waitStatus follows the store's event log until run id has status want
// (whoever holds it).
func waitStatus(t *testing.T, s store.Store, id string, want store.RunStatus) store.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var after int64
	for {
		run, err := s.GetRun(ctx, id)
		if err == nil && run.Status == want {
			return run
		}
		evs, _ := s.ListEvents(ctx, store.EventFilter{AllTenants: true, RunID: id, AfterSeq: after})
		if len(evs) > 0 {
			after = evs[len(evs)-1].Seq
			continue
		}
		if err := s.WaitEvents(ctx, store.EventFilter{AllTenants: true, RunID: id, AfterSeq: after}); err != nil {
			t.Fatalf("run %s: still %s, want %s", id, run.Status, want)
		}
	}
}

// With a DurableQueue, POST /v1/runs enqueues the run (once per
// Idempotency-Key), a decision is recorded and then wakes the run through
// the queue, cancel goes through the queue, and the server never drives a
// durable run itself: its own builder builds nothing. The run's events,
// from the store, reach the SSE stream as for any run.
func TestDurableRunsGoThroughTheQueue(t *testing.T) {
	st := memory.New(nil)
	worked := &testkit.Counter{Name: "transfer", Schema: transferSchema}
	q := newMemQueue(t, st, &testBuilder{m: transferScript(), tools: agent.ToolList{worked}})
	f := newFixture(t, st, nil, &server.Options{Durable: q})

	var v serverapi.RunView
	if code := f.do("POST", "/v1/runs", aliceToken, serverapi.StartRunRequest{Agent: "payer", Prompt: "pay"}, &v, "Idempotency-Key", "k1"); code != http.StatusCreated {
		t.Fatalf("POST /v1/runs: %d %+v", code, v)
	}
	id := v.ID
	var again serverapi.RunView
	if code := f.do("POST", "/v1/runs", aliceToken, serverapi.StartRunRequest{Agent: "payer", Prompt: "pay"}, &again, "Idempotency-Key", "k1"); code != http.StatusOK || again.ID != id {
		t.Fatalf("the same Idempotency-Key again: %d %s, want 200 %s", code, again.ID, id)
	}
	if started, _, _ := q.calls(); !slices.Equal(started, []string{id}) {
		t.Fatalf("enqueued %v, want [%s] once", started, id)
	}
	sse := f.openSSE("/v1/events?run="+id, aliceToken)
	run := waitStatus(t, st, id, store.RunPending)
	if run.Lease == nil || run.Lease.Holder != runcore.DurableHolder {
		t.Fatalf("the halted run is not held by the durable engine: %+v", run.Lease)
	}
	var page serverapi.ApprovalPage
	if code := f.do("GET", "/v1/approvals?status=pending&run="+id, aliceToken, nil, &page); code != http.StatusOK || len(page.Approvals) != 1 {
		t.Fatalf("pending approvals: %d %+v", code, page)
	}
	a := page.Approvals[0]
	if code := f.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, nil); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	if _, answered, _ := q.calls(); !slices.Equal(answered, []string{a.ID}) {
		t.Fatalf("answers sent through the queue: %v, want [%s]", answered, a.ID)
	}
	var seen []string
	for {
		ev := sse.nextEvent(t)
		seen = append(seen, ev.event)
		if ev.event == runcore.EventRunFinished {
			break
		}
	}
	for _, want := range []string{runcore.EventRunStarted, runcore.EventRunHalted, store.EventApprovalDecided, runcore.EventRunFinished} {
		if !slices.Contains(seen, want) {
			t.Errorf("the stream lacks %s: %v", want, seen)
		}
	}
	if run := waitStatus(t, st, id, store.RunDone); !strings.Contains(string(run.Result), "ran transfer") {
		t.Errorf("result %s", run.Result)
	}
	if n := worked.Count(); n != 1 {
		t.Errorf("the approved transfer ran %d times, want once", n)
	}
	if n, m := f.builder.builds.Load(), f.transfer.Count(); n != 0 || m != 0 {
		t.Errorf("the server drove a durable run itself: %d builds, %d transfers", n, m)
	}

	// Cancel goes through the queue, and a halted durable run ends cancelled.
	id2 := f.startRun()
	waitStatus(t, st, id2, store.RunPending)
	if code := f.do("POST", "/v1/runs/"+id2+"/cancel", aliceToken, nil, nil); code != http.StatusAccepted {
		t.Fatalf("cancel: %d", code)
	}
	if _, _, cancelled := q.calls(); !slices.Equal(cancelled, []string{id2}) {
		t.Fatalf("cancelled through the queue: %v, want [%s]", cancelled, id2)
	}
	waitStatus(t, st, id2, store.RunCancelled)
	if n := worked.Count(); n != 1 {
		t.Errorf("the cancelled run's transfer ran: %d", n)
	}
}
