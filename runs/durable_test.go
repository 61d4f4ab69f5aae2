package runs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/tool"
)

// errKilled is what a dead fake engine returns: the process is gone.
var errKilled = errors.New("the process died")

// errRecordFailed is what a fake engine returns when it fails to record a
// step whose work ran, the process living on.
var errRecordFailed = errors.New("the record could not be written")

// fakeEngine records steps by position, as a durable engine does, and can
// die right after the work of one position ran and before its record was
// written: from then on nothing runs and nothing is recorded, as when a
// process is killed. A new execution replays the records.
type fakeEngine struct {
	mu      sync.Mutex
	records map[int]fakeRecord
	pos     int
	crashAt int // the position after whose work the process dies; -1: never
	dead    bool
	// failAt, when positive, is a position whose record the engine fails
	// to write, the process living on (a database that refuses it).
	failAt int
	// kill, when set, ends the context of the execution as the process dies.
	kill  context.CancelFunc
	names []string
	// onWait runs when the run waits for a message that has not come (a
	// person answering meanwhile); the wait then times out.
	onWait func(topic string)
}

type fakeRecord struct {
	name string
	out  []byte
	err  error
}

func newFakeEngine() *fakeEngine { return &fakeEngine{records: map[int]fakeRecord{}, crashAt: -1} }

// isDead reports whether the process of the current execution has died.
func (e *fakeEngine) isDead() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.dead
}

// deadStore is the store as the process of an execution of eng sees it:
// once the process has died it writes and reads nothing, as a killed
// process does not (what the run does outside its steps, such as storing
// its end, included).
type deadStore struct {
	store.Store
	eng *fakeEngine
}

func (s deadStore) GetRun(ctx context.Context, id string) (store.Run, error) {
	if s.eng.isDead() {
		return store.Run{}, errKilled
	}
	return s.Store.GetRun(ctx, id)
}

func (s deadStore) UpdateRun(ctx context.Context, id string, u store.RunUpdate) (store.Run, error) {
	if s.eng.isDead() {
		return store.Run{}, errKilled
	}
	return s.Store.UpdateRun(ctx, id, u)
}

func (s deadStore) AppendEvents(ctx context.Context, evs ...store.Event) ([]int64, error) {
	if s.eng.isDead() {
		return nil, errKilled
	}
	return s.Store.AppendEvents(ctx, evs...)
}

// execution starts a new process on the records, dying after position crashAt.
func (e *fakeEngine) execution(crashAt int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pos, e.dead, e.crashAt, e.names = 0, false, crashAt, nil
}

// next takes the next position; replay is its record, if any.
func (e *fakeEngine) next(name string) (pos int, replay *fakeRecord, dead bool, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.dead {
		return 0, nil, true, nil
	}
	pos = e.pos
	e.pos++
	e.names = append(e.names, name)
	if r, ok := e.records[pos]; ok {
		if r.name != name {
			return pos, nil, false, fmt.Errorf("replay found step %q at %d, not %q", r.name, pos, name)
		}
		return pos, &r, false, nil
	}
	return pos, nil, false, nil
}

// record writes the result of pos, unless the process dies there.
func (e *fakeEngine) record(pos int, name string, out []byte, err error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.dead {
		return errKilled
	}
	if pos == e.failAt-1 {
		return errRecordFailed
	}
	if pos == e.crashAt {
		e.dead = true
		if e.kill != nil {
			e.kill()
		}
		return errKilled
	}
	e.records[pos] = fakeRecord{name, out, err}
	return nil
}

func (e *fakeEngine) Step(ctx context.Context, name string, fn func(context.Context) ([]byte, error)) ([]byte, error) {
	pos, rec, dead, err := e.next(name)
	switch {
	case dead:
		return nil, errKilled
	case err != nil:
		return nil, err
	case rec != nil:
		return rec.out, rec.err
	}
	out, ferr := fn(ctx)
	if err := e.record(pos, name, out, ferr); err != nil {
		return nil, err
	}
	return out, ferr
}

func (e *fakeEngine) Go(ctx context.Context, name string, fn func(context.Context) ([]byte, error)) (func() ([]byte, error), error) {
	pos, rec, dead, err := e.next(name)
	switch {
	case dead:
		return nil, errKilled
	case err != nil:
		return nil, err
	case rec != nil:
		return func() ([]byte, error) { return rec.out, rec.err }, nil
	}
	type res struct {
		out []byte
		err error
	}
	ch := make(chan res, 1)
	go func() {
		out, ferr := fn(ctx)
		if err := e.record(pos, name, out, ferr); err != nil {
			ch <- res{nil, err}
			return
		}
		ch <- res{out, ferr}
	}()
	return func() ([]byte, error) { r := <-ch; return r.out, r.err }, nil
}

func (e *fakeEngine) Recv(ctx context.Context, topic string, timeout time.Duration) ([]byte, bool, error) {
	pos, rec, dead, err := e.next("recv " + topic)
	switch {
	case dead:
		return nil, false, errKilled
	case err != nil:
		return nil, false, err
	case rec != nil:
		return rec.out, rec.out != nil, nil
	}
	if e.onWait != nil {
		e.onWait(topic)
	}
	if err := e.record(pos, "recv "+topic, nil, nil); err != nil {
		return nil, false, err
	}
	return nil, false, nil
}

// TestDurableReplaysEveryCrash drives a run that asks for an approval on a
// fake engine that dies after the work of each position in turn (the work
// done, its record not written), and replays it each time in a new
// execution: the run always ends done; the approved call runs exactly once
// (told the model it may or may not have run when the execute step was the
// one cut off), and only the model turn whose record was lost is asked
// twice.
func TestDurableReplaysEveryCrash(t *testing.T) {
	ctx := context.Background()
	clean := -1
	for crashAt := 0; clean < 0 || crashAt < clean; crashAt++ {
		crashed := true
		st := memory.New(nil)
		var mu sync.Mutex
		turns, tools := map[int]int{}, 0
		m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
			turn := 1
			for _, msg := range req.Messages {
				if msg.Role == model.RoleAssistant {
					turn++
				}
			}
			mu.Lock()
			turns[turn]++
			mu.Unlock()
			if turn == 1 {
				return model.Reply{ToolCalls: []model.FuncCall{{Name: "transfer_funds", Arguments: map[string]any{"amount": 5}}}}, nil
			}
			return model.Reply{Content: "done: " + req.Messages[len(req.Messages)-1].Content}, nil
		})
		type in struct {
			Amount int `json:"amount"`
		}
		transfer := tool.Must("transfer_funds", "moves money", func(ctx context.Context, a in) (string, error) {
			mu.Lock()
			tools++
			mu.Unlock()
			return fmt.Sprintf("moved %d", a.Amount), nil
		}, nil)
		b := &testBuilder{m: m, tools: agent.ToolList{transfer}}
		eng := newFakeEngine()
		d, err := runcore.NewDurable(deadStore{st, eng}, b, nil)
		if err != nil {
			t.Fatal(err)
		}
		eng.onWait = func(topic string) {
			req := strings.TrimPrefix(topic, "answer:")
			if _, err := st.Decide(ctx, "run_d", req, store.Answer{Approve: true, By: tool.PrincipalOf("person:alice")}); err != nil && !errors.Is(err, store.ErrDecided) {
				t.Errorf("answer %s: %v", req, err)
			}
		}
		input := runcore.DurableRun{RunID: "run_d", Config: runs.RunConfig{Version: runcore.ConfigVersion, AgentConfig: runs.AgentConfig{Workdir: t.TempDir()}}, Prompt: "move 5"}
		if err := runcore.PrepareDurable(ctx, st, &input); err != nil {
			t.Fatal(err)
		}
		eng.execution(crashAt)
		ectx, kill := context.WithCancel(ctx)
		eng.kill = kill
		res, err := d.Drive(ectx, eng, input)
		kill()
		if clean < 0 && crashAt >= eng.pos {
			// The engine never reached crashAt: this was a clean run, and
			// its length bounds the crash points.
			clean, crashed = eng.pos, false
			t.Logf("a clean run has %d steps: %v", clean, eng.names)
		} else {
			if !errors.Is(err, errKilled) {
				t.Fatalf("crash after step %d: the first execution ended %v, %v", crashAt, res, err)
			}
			eng.execution(-1)
			res, err = d.Drive(ctx, eng, input)
		}
		if err != nil || res == nil || res.Status != agent.StatusDone {
			t.Fatalf("crash after step %d: %v %v", crashAt, res, err)
		}
		r, err := st.GetRun(ctx, "run_d")
		if err != nil || r.Status != store.RunDone || r.Lease != nil {
			t.Fatalf("crash after step %d: stored %s, lease %v, %v", crashAt, r.Status, r.Lease, err)
		}
		// The process may die after the run's end is stored and before the
		// engine records the workflow's end: a replay stores nothing again.
		eng.execution(-1)
		if res, err := d.Drive(ctx, eng, input); err != nil || res == nil || res.Status != agent.StatusDone {
			t.Fatalf("crash after step %d, replayed after its end: %v %v", crashAt, res, err)
		}
		evs, err := st.ListEvents(ctx, store.EventFilter{AllTenants: true, RunID: "run_d", Limit: store.MaxLimit})
		if err != nil {
			t.Fatal(err)
		}
		ends, usages := 0, map[int]int{}
		for _, e := range evs {
			switch e.Type {
			case runcore.EventRunFinished:
				ends++
			case runcore.EventTurnUsage:
				var ev struct{ Turn int }
				if err := json.Unmarshal(e.Data, &ev); err != nil {
					t.Fatal(err)
				}
				usages[ev.Turn]++
			}
		}
		if ends != 1 {
			t.Errorf("crash after step %d: %d run.finished events, want 1", crashAt, ends)
		}
		lost := ""
		if crashAt >= 0 && crashAt < len(eng.names) {
			lost = eng.names[crashAt]
		}
		// A turn's events are stored with the run's next write (turn 1's
		// by the call's decide step, turn 2's with the end): once, or twice
		// when the crash cut that write's step off after it stored them;
		// never lost.
		for turn := 1; turn <= 2; turn++ {
			want := 1
			if crashed && turn == 1 && strings.HasPrefix(lost, "decide ") {
				want = 2
			}
			if n := usages[turn]; n != want {
				t.Errorf("crash after step %d (%s): turn %d's usage stored %d times, want %d", crashAt, lost, turn, n, want)
			}
		}
		if tools != 1 {
			t.Errorf("crash after step %d (%s): the tool ran %d times", crashAt, lost, tools)
		}
		if strings.HasPrefix(lost, "execute ") != strings.Contains(res.Text, "may or may not have run") {
			t.Errorf("crash after step %d (%s): the model was shown %q", crashAt, lost, res.Text)
		}
		for turn := 1; turn <= 2; turn++ {
			want := 1
			if lost == fmt.Sprintf("turn %d", turn) {
				want = 2 // at least once: its record was lost
			}
			if turns[turn] != want {
				t.Errorf("crash after step %d (%s): turn %d asked %d times, want %d", crashAt, lost, turn, turns[turn], want)
			}
		}
	}
	if clean < 8 {
		t.Fatalf("a clean run has only %d steps", clean)
	}
}

// runs.Host.Cancel (tollgate runs cancel) stops a durable run too: one that
// waits for an answer at its next look at the store, one whose model turn
// runs by cancelling the turn. Its stored status stays cancelled.
func TestDurableHostCancel(t *testing.T) {
	for _, when := range []string{"waiting", "running"} {
		t.Run(when, func(t *testing.T) {
			ctx := context.Background()
			st := memory.New(nil)
			var h *runs.Host
			tools := 0
			m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
				if when == "running" {
					// Cancelled from elsewhere while the turn runs.
					go func() {
						if err := h.Cancel(context.Background(), "run_c", tool.Principal{Kind: tool.PrincipalPerson, Name: "bob"}); err != nil {
							t.Errorf("cancel: %v", err)
						}
					}()
					<-ctx.Done()
					return model.Reply{}, ctx.Err()
				}
				return model.Reply{ToolCalls: []model.FuncCall{{Name: "transfer_funds", Arguments: map[string]any{"amount": 5}}}}, nil
			})
			type in struct {
				Amount int `json:"amount"`
			}
			transfer := tool.Must("transfer_funds", "moves money", func(ctx context.Context, a in) (string, error) { tools++; return "moved", nil }, nil)
			b := &testBuilder{m: m, tools: agent.ToolList{transfer}}
			var err error
			if h, err = runs.New(st, b, nil); err != nil {
				t.Fatal(err)
			}
			d, err := runcore.NewDurable(st, b, nil)
			if err != nil {
				t.Fatal(err)
			}
			eng := newFakeEngine()
			eng.onWait = func(topic string) {
				if err := h.Cancel(ctx, "run_c", tool.Principal{Kind: tool.PrincipalPerson, Name: "bob"}); err != nil {
					t.Errorf("cancel: %v", err)
				}
			}
			input := runcore.DurableRun{RunID: "run_c", Config: runs.RunConfig{Version: runcore.ConfigVersion, AgentConfig: runs.AgentConfig{Workdir: t.TempDir()}}, Prompt: "move 5"}
			if err := runcore.PrepareDurable(ctx, st, &input); err != nil {
				t.Fatal(err)
			}
			eng.execution(-1)
			done := make(chan error, 1)
			go func() { _, err := d.Drive(ctx, eng, input); done <- err }()
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the cancelled run did not stop")
			}
			if err == nil {
				t.Error("Drive of a cancelled run returned no error")
			}
			r, gerr := st.GetRun(ctx, "run_c")
			if gerr != nil || r.Status != store.RunCancelled || r.Lease != nil || tools != 0 {
				t.Errorf("stored %s, lease %v, tool ran %d times (%v)", r.Status, r.Lease, tools, gerr)
			}
		})
	}
}

// countingStore counts the run reads and the writes a durable run makes.
type countingStore struct {
	store.Store
	mu             sync.Mutex
	reads, appends int
	updates, lists int
}

func (s *countingStore) ListEvents(ctx context.Context, f store.EventFilter) ([]store.Event, error) {
	s.mu.Lock()
	s.lists++
	s.mu.Unlock()
	return s.Store.ListEvents(ctx, f)
}

func (s *countingStore) GetRun(ctx context.Context, id string) (store.Run, error) {
	s.mu.Lock()
	s.reads++
	s.mu.Unlock()
	return s.Store.GetRun(ctx, id)
}

func (s *countingStore) UpdateRun(ctx context.Context, id string, u store.RunUpdate) (store.Run, error) {
	s.mu.Lock()
	s.updates++
	s.mu.Unlock()
	return s.Store.UpdateRun(ctx, id, u)
}

func (s *countingStore) AppendEvents(ctx context.Context, evs ...store.Event) ([]int64, error) {
	s.mu.Lock()
	s.appends++
	s.mu.Unlock()
	return s.Store.AppendEvents(ctx, evs...)
}

// lookupAgent is a model that calls lookup (c1) in its first turn and
// answers "found" in its second, and the lookup tool it calls.
func lookupAgent() (model.Model, tool.Tool) {
	m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		if len(req.Messages) == 1 {
			return model.Reply{ToolCalls: []model.FuncCall{{ID: "c1", Name: "lookup", Arguments: map[string]any{}}}}, nil
		}
		return model.Reply{Content: "found"}, nil
	})
	return m, tool.Must("lookup", "looks up", func(ctx context.Context, _ struct{}) (string, error) { return "it", nil }, nil)
}

// A durable run of two turns and a call that nothing asks about, started
// by PrepareDurable, records a step per turn and per call, and writes to
// the store twice: the call's events (with the first turn's) and the end
// (with the second turn's). It reads its record never: it is stored before
// the run starts, and its status is known until the end; and, done sooner
// than its watch for a cancel first looks (in a bubble, where time passes
// only when every goroutine waits), it reads no events.
func TestDurableRunSteps(t *testing.T) {
	synctest.Test(t, testDurableRunSteps)
}

func testDurableRunSteps(t *testing.T) {
	ctx := context.Background()
	m, lookup := lookupAgent()
	st := &countingStore{Store: memory.New(nil)}
	d, err := runcore.NewDurable(st, &testBuilder{m: m, tools: agent.ToolList{lookup}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	input := runcore.DurableRun{RunID: "run_f", Config: runs.RunConfig{Version: runcore.ConfigVersion, AgentConfig: runs.AgentConfig{Workdir: t.TempDir()}}, Prompt: "find it"}
	if err := runcore.PrepareDurable(ctx, st.Store, &input); err != nil {
		t.Fatal(err)
	}
	eng := newFakeEngine()
	eng.execution(-1)
	if res, err := d.Drive(ctx, eng, input); err != nil || res.Status != agent.StatusDone {
		t.Fatalf("drive: %v %v", res, err)
	}
	if want := []string{"turn 1", "decide c1", "turn 2"}; !slices.Equal(eng.names, want) {
		t.Errorf("steps %q, want %q", eng.names, want)
	}
	if st.reads != 0 || st.appends != 1 || st.updates != 1 || st.lists != 0 {
		t.Errorf("%d reads of the run, %d appends of events, %d updates of the run and %d reads of its events; want 0, 1, 1 and 0", st.reads, st.appends, st.updates, st.lists)
	}
	r, err := st.Store.GetRun(ctx, "run_f")
	if err != nil || r.Status != store.RunDone {
		t.Fatalf("stored %s, %v", r.Status, err)
	}
}

// A model turn whose record the engine fails to write, the process living
// on, ends the run with the engine's error; the turn's events, which its
// record was to carry, are stored with the run's end.
func TestDurableTurnNotRecordedKeepsItsEvents(t *testing.T) {
	ctx := context.Background()
	m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		return model.Reply{Content: "hello"}, nil
	})
	st := memory.New(nil)
	d, err := runcore.NewDurable(st, &testBuilder{m: m}, nil)
	if err != nil {
		t.Fatal(err)
	}
	input := runcore.DurableRun{RunID: "run_n", Config: runs.RunConfig{Version: runcore.ConfigVersion, AgentConfig: runs.AgentConfig{Workdir: t.TempDir()}}, Prompt: "hi"}
	if err := runcore.PrepareDurable(ctx, st, &input); err != nil {
		t.Fatal(err)
	}
	eng := newFakeEngine()
	eng.execution(-1)
	eng.failAt = 1 // turn 1
	if _, err := d.Drive(ctx, eng, input); !errors.Is(err, errRecordFailed) {
		t.Fatalf("drive: %v, want the engine's error", err)
	}
	evs, err := st.ListEvents(ctx, store.EventFilter{AllTenants: true, RunID: "run_n", Limit: store.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
	}
	if !slices.Contains(types, runcore.EventTurnUsage) || !slices.Contains(types, runcore.EventRunFinished) {
		t.Errorf("stored events %q: the turn's usage or the run's end is missing", types)
	}
}

// A run whose process dies in its second model turn, after the first
// turn's events were stored by the call's recorded step, is replayed
// without storing the first turn's events again: only the step the crash
// cut off may store its events twice.
func TestDurableReplayAfterCallStoresTurnOnce(t *testing.T) {
	ctx := context.Background()
	m, lookup := lookupAgent()
	st := memory.New(nil)
	eng := newFakeEngine()
	d, err := runcore.NewDurable(deadStore{st, eng}, &testBuilder{m: m, tools: agent.ToolList{lookup}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	input := runcore.DurableRun{RunID: "run_r", Config: runs.RunConfig{Version: runcore.ConfigVersion, AgentConfig: runs.AgentConfig{Workdir: t.TempDir()}}, Prompt: "find it"}
	if err := runcore.PrepareDurable(ctx, st, &input); err != nil {
		t.Fatal(err)
	}
	eng.execution(2) // turn 2: its work done, its record lost
	ectx, kill := context.WithCancel(ctx)
	eng.kill = kill
	if _, err := d.Drive(ectx, eng, input); !errors.Is(err, errKilled) {
		t.Fatalf("the first execution ended %v, want killed in turn 2 (steps %q)", err, eng.names)
	}
	kill()
	eng.execution(-1)
	if res, err := d.Drive(ctx, eng, input); err != nil || res.Status != agent.StatusDone {
		t.Fatalf("replay: %v %v", res, err)
	}
	evs, err := st.ListEvents(ctx, store.EventFilter{AllTenants: true, RunID: "run_r", Limit: store.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, e := range evs {
		key := e.Type
		if e.Type == runcore.EventTurnUsage {
			var ev struct{ Turn int }
			if err := json.Unmarshal(e.Data, &ev); err != nil {
				t.Fatal(err)
			}
			key = fmt.Sprintf("%s %d", e.Type, ev.Turn)
		}
		seen[key]++
	}
	for _, key := range []string{runcore.EventTurnUsage + " 1", runcore.EventToolCall, runcore.EventToolFinished, runcore.EventRunFinished} {
		if seen[key] != 1 {
			t.Errorf("%s stored %d times, want once (%v)", key, seen[key], seen)
		}
	}
}
