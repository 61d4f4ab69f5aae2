package runs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/tool"
)

// testBuilder builds agents over fixed tools and a scripted model, with a
// policy that asks before transfer_funds.
type testBuilder struct {
	m     model.Model
	tools agent.ToolList
	stops atomic.Int64
}

func (b *testBuilder) Build(ctx context.Context, cfg runs.RunConfig) (*runs.Built, error) {
	pol, err := policy.NewPolicy(policy.PolicySpec{Name: "test", Rules: []policy.Rule{{ID: "ask-transfer", Tools: []string{"transfer_funds"}, Decision: approval.Ask}}})
	if err != nil {
		return nil, err
	}
	return &runs.Built{
		Options: agent.Options{Model: b.m, Tools: b.tools, Authorizers: []approval.Authorizer{pol}, MaxParallel: 1},
		OnStop:  func(ctx context.Context, runID string, status store.RunStatus) { b.stops.Add(1) },
	}, nil
}

func testConfig(t *testing.T) runs.RunConfig {
	cfg, err := runs.RunConfig{AgentConfig: runs.AgentConfig{Model: runs.ModelRef{Provider: "script", Name: "s.yaml"}, Workdir: "."}}.Resolve(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func newHost(t *testing.T, s store.Store, b runs.Builder, holder string, ttl time.Duration) *runs.Host {
	t.Helper()
	h, err := runs.New(s, b, &runs.Options{Holder: holder, LeaseTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// A run halts on an approval, is stored, answered by a named principal and
// resumed: the call runs once, the run ends done, and the store holds its
// events in order.
func TestStartHaltAnswerResume(t *testing.T) {
	ctx := context.Background()
	transfer := &testkit.Counter{Name: "transfer_funds"}
	b := &testBuilder{m: testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer_funds", map[string]int{"amount": 5})}), tools: agent.ToolList{transfer}}
	s := memory.New(nil)
	h := newHost(t, s, b, "host-a", time.Minute)
	res, err := h.Start(ctx, runs.StartRequest{RunID: "run_1", Tenant: "acme", Owner: tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}, Config: testConfig(t), Prompt: "pay"})
	if err != nil || res.Status != agent.StatusPending {
		t.Fatalf("start: %+v %v", res, err)
	}
	run, err := s.GetRun(ctx, "run_1")
	if err != nil || run.Status != store.RunPending || run.Lease != nil || run.Tenant != "acme" {
		t.Fatalf("stored run %+v %v", run, err)
	}
	if _, err := h.Resume(ctx, runs.ResumeRequest{RunID: "run_1"}); !errors.Is(err, runs.ErrNothingDecided) {
		t.Fatalf("resume before any answer: %v", err)
	}
	reqID := res.Pending[0].ID
	if _, err := h.Answer(ctx, "run_1", reqID, store.Answer{Approve: true, By: tool.PrincipalOf("person:bob")}); err != nil {
		t.Fatal(err)
	}
	res2, err := h.Resume(ctx, runs.ResumeRequest{RunID: "run_1"})
	if err != nil || res2.Status != agent.StatusDone {
		t.Fatalf("resume: %+v %v", res2, err)
	}
	if transfer.Count() != 1 {
		t.Fatalf("transfer ran %d times", transfer.Count())
	}
	if by := res2.ToolCalls[0].Decision.By.String(); by != "person:bob" {
		t.Errorf("decided by %q", by)
	}
	// Resuming again is refused: the run has ended.
	if _, err := h.Resume(ctx, runs.ResumeRequest{RunID: "run_1"}); !errors.Is(err, runs.ErrNotResumable) {
		t.Fatalf("second resume: %v", err)
	}
	evs, err := s.ListEvents(ctx, store.EventFilter{Tenant: "acme", RunID: "run_1"})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
	}
	want := []string{runcore.EventRunStarted, runcore.EventTurnUsage, runcore.EventToolCall, runcore.EventToolDecided, runcore.EventApprovalRequest, runcore.EventRunHalted,
		store.EventApprovalDecided, runcore.EventRunResumed, runcore.EventToolCall, runcore.EventToolDecided, runcore.EventToolFinished, runcore.EventTurnUsage, runcore.EventRunFinished}
	if len(types) != len(want) {
		t.Fatalf("events %q\nwant %q", types, want)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Fatalf("events %q\nwant %q", types, want)
		}
	}
	if b.stops.Load() != 2 {
		t.Errorf("ON_STOP fired %d times, want once per part of the run (2)", b.stops.Load())
	}
}

// An administrator answers for someone: the decision record names both the
// person the answer is recorded for and the administrator who gave it, in
// the result, its allow vote and the stored result.
func TestAnswerKeepsActor(t *testing.T) {
	ctx := context.Background()
	transfer := &testkit.Counter{Name: "transfer_funds"}
	b := &testBuilder{m: testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer_funds", map[string]int{"amount": 5})}), tools: agent.ToolList{transfer}}
	s := memory.New(nil)
	h := newHost(t, s, b, "host-a", time.Minute)
	res, err := h.Start(ctx, runs.StartRequest{RunID: "run_1", Config: testConfig(t), Prompt: "pay"})
	if err != nil || res.Status != agent.StatusPending {
		t.Fatalf("start: %+v %v", res, err)
	}
	alice := tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}
	root := tool.Principal{Kind: tool.PrincipalPerson, Name: "root"}
	if _, err := h.Answer(ctx, "run_1", res.Pending[0].ID, store.Answer{Approve: true, By: alice, Actor: root, Reason: "on call"}); err != nil {
		t.Fatal(err)
	}
	res2, err := h.Resume(ctx, runs.ResumeRequest{RunID: "run_1"})
	if err != nil || res2.Status != agent.StatusDone || len(res2.ToolCalls) != 1 {
		t.Fatalf("resume: %+v %v", res2, err)
	}
	check := func(what string, d gate.Decision) {
		t.Helper()
		if d.Outcome != gate.OutcomeApproved || d.By != alice || d.Actor != root {
			t.Errorf("%s: %s by %+v actor %+v; want approved by alice, actor root", what, d.Outcome, d.By, d.Actor)
		}
		// Heard order: the rule's ask, then alice's answer.
		if n := len(d.Votes); n < 2 || d.Votes[n-2].Decision != tool.VoteAsk || d.Votes[n-1].Source != alice || d.Votes[n-1].Actor != root || d.Votes[n-1].Decision != tool.VoteAllow {
			t.Errorf("%s: votes %+v; want the rule's ask, then alice's allow, given by root", what, d.Votes)
		}
	}
	check("result", res2.ToolCalls[0].Decision)
	run, err := s.GetRun(ctx, "run_1")
	if err != nil {
		t.Fatal(err)
	}
	var stored agent.Result
	if err := json.Unmarshal(run.Result, &stored); err != nil || len(stored.ToolCalls) != 1 {
		t.Fatalf("stored result: %v", err)
	}
	check("stored result", stored.ToolCalls[0].Decision)
}

// An answer that names nobody is refused before it reaches the store.
func TestAnswerNeedsPrincipal(t *testing.T) {
	ctx := context.Background()
	b := &testBuilder{m: testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer_funds", map[string]int{"amount": 5})}), tools: agent.ToolList{&testkit.Counter{Name: "transfer_funds"}}}
	s := memory.New(nil)
	h := newHost(t, s, b, "host-a", time.Minute)
	res, err := h.Start(ctx, runs.StartRequest{RunID: "run_1", Config: testConfig(t), Prompt: "pay"})
	if err != nil || res.Status != agent.StatusPending {
		t.Fatalf("start: %+v %v", res, err)
	}
	if _, err := h.Answer(ctx, "run_1", res.Pending[0].ID, store.Answer{Approve: true, Actor: tool.Principal{Kind: tool.PrincipalPerson, Name: "root"}}); err == nil {
		t.Fatal("an answer with no By was taken")
	}
	a, err := s.GetApproval(ctx, "run_1", res.Pending[0].ID)
	if err != nil || a.Status != store.StatusPending {
		t.Fatalf("approval after a refused answer: %+v %v", a, err)
	}
}

// fakeClock is a settable clock shared by the store and the test.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// dyingStore fails every write once died is set: the host's process is gone.
type dyingStore struct {
	store.Store
	died atomic.Bool
}

var errDead = errors.New("the process was killed")

func (d *dyingStore) UpdateRun(ctx context.Context, id string, u store.RunUpdate) (store.Run, error) {
	if d.died.Load() {
		return store.Run{}, errDead
	}
	return d.Store.UpdateRun(ctx, id, u)
}

func (d *dyingStore) RenewLease(ctx context.Context, id, holder string, token int64, ttl time.Duration) (store.Lease, error) {
	if d.died.Load() {
		return store.Lease{}, errDead
	}
	return d.Store.RenewLease(ctx, id, holder, token, ttl)
}

// blockingTool blocks on its first call until the test releases it, and
// finishes the ones after at once, counting runs.
type blockingTool struct {
	name    string
	n       atomic.Int64
	started chan struct{}
	release chan struct{}
}

func (b *blockingTool) Spec() tool.Spec {
	return tool.Spec{Name: b.name, Hints: &tool.Hints{ReadOnly: true}}
}
func (b *blockingTool) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	if b.n.Add(1) == 1 {
		close(b.started)
		select {
		case <-b.release:
		case <-ctx.Done():
		}
		return tool.Error("killed"), nil
	}
	return tool.Text("ok"), nil
}

// A host dies after the first of two allowed calls finished; once its lease
// expires, another host takes the run over with no manual step: the first
// call is not run again, the second runs (again), the run ends done. Of two
// hosts taking over at once, exactly one wins.
func TestTakeoverAfterDeath(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	mem := memory.New(&store.Options{Now: clock.Now})
	ds := &dyingStore{Store: mem}
	first := &testkit.Counter{Name: "first"}
	second := &blockingTool{name: "second", started: make(chan struct{}), release: make(chan struct{})}
	b := &testBuilder{m: testkit.Script([]model.FuncCall{testkit.Call("c1", "first", nil), testkit.Call("c2", "second", nil)}), tools: agent.ToolList{first, second}}
	ha := newHost(t, ds, b, "host-a", time.Hour)
	done := make(chan error, 1)
	go func() {
		res, err := ha.Start(ctx, runs.StartRequest{RunID: "run_k", Config: testConfig(t), Prompt: "go"})
		if err == nil {
			err = fmt.Errorf("ended %s: %+v", res.Status, res.ToolCalls)
		}
		done <- err
	}()
	select { // first finished and was checkpointed; second is running
	case <-second.started:
	case err := <-done:
		t.Fatalf("the run ended before its second call started: %v", err)
	}
	ds.died.Store(true)
	close(second.release)
	if err := <-done; err == nil {
		t.Fatal("the dead host's run must fail to store anything")
	}
	run, _ := mem.GetRun(ctx, "run_k")
	if run.Status != store.RunRunning || run.Lease == nil {
		t.Fatalf("the dead host's run: %+v", run)
	}
	// While the lease lasts, nobody else may take the run.
	hb := newHost(t, mem, b, "host-b", time.Hour)
	if _, err := hb.Resume(ctx, runs.ResumeRequest{RunID: "run_k"}); !errors.Is(err, store.ErrLeased) {
		t.Fatalf("resume under a live lease: %v", err)
	}
	clock.Advance(2 * time.Hour)
	hc := newHost(t, mem, b, "host-c", time.Hour)
	var wg sync.WaitGroup
	var wins, leased atomic.Int64
	for _, h := range []*runs.Host{hb, hc} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := h.Resume(ctx, runs.ResumeRequest{RunID: "run_k"})
			switch {
			case err == nil && res.Status == agent.StatusDone:
				wins.Add(1)
			case errors.Is(err, store.ErrLeased) || errors.Is(err, store.ErrConflict) || errors.Is(err, runs.ErrNotResumable):
				leased.Add(1)
			default:
				t.Errorf("takeover: %+v %v", res, err)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 || leased.Load() != 1 {
		t.Fatalf("wins %d, refused %d: exactly one takeover must win", wins.Load(), leased.Load())
	}
	if first.Count() != 1 {
		t.Fatalf("the call that finished before the death ran %d times, want 1", first.Count())
	}
	if second.n.Load() != 2 {
		t.Fatalf("the call in flight ran %d times, want 2 (at least once)", second.n.Load())
	}
	run, _ = mem.GetRun(ctx, "run_k")
	if run.Status != store.RunDone || run.Lease != nil {
		t.Fatalf("final run %+v", run)
	}
}

// A halted run that is cancelled is never resumed, and its pending
// requests are denied in the canceller's name: nobody is left to answer
// them, and a late answer is refused.
func TestCancelHaltedRun(t *testing.T) {
	ctx := context.Background()
	transfer := &testkit.Counter{Name: "transfer_funds"}
	b := &testBuilder{m: testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer_funds", nil)}), tools: agent.ToolList{transfer}}
	s := memory.New(nil)
	h := newHost(t, s, b, "host-a", time.Minute)
	res, err := h.Start(ctx, runs.StartRequest{RunID: "run_c", Config: testConfig(t), Prompt: "pay"})
	if err != nil || res.Status != agent.StatusPending {
		t.Fatal(res, err)
	}
	if err := h.Cancel(ctx, "run_c", tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}); err != nil {
		t.Fatal(err)
	}
	a, err := s.GetApproval(ctx, "run_c", res.Pending[0].ID)
	if err != nil || a.Status != store.StatusDenied || a.DecidedBy.String() != "person:alice" || a.Reason != runcore.CancelledReason {
		t.Fatalf("the cancelled run's request: %+v %v", a, err)
	}
	if page, err := s.ListApprovals(ctx, store.ApprovalFilter{RunID: "run_c", Status: store.StatusPending}); err != nil || len(page.Approvals) != 0 {
		t.Fatalf("pending requests of the cancelled run: %+v %v", page, err)
	}
	if _, err := h.Answer(ctx, "run_c", res.Pending[0].ID, store.Answer{Approve: true, By: tool.PrincipalOf("person:bob")}); !errors.Is(err, store.ErrDecided) {
		t.Fatalf("a late approval: %v, want ErrDecided", err)
	}
	if _, err := h.Resume(ctx, runs.ResumeRequest{RunID: "run_c"}); !errors.Is(err, runs.ErrNotResumable) {
		t.Fatalf("resume of a cancelled run: %v", err)
	}
	if transfer.Count() != 0 {
		t.Fatal("a cancelled run's call ran")
	}
}

// The host layer's principals are typed: the owner given to Start is stored
// as its text form and read back typed; Cancel refuses a zero or unknown
// principal and keeps who cancelled as a principal object, as a decision's
// "by" is; an event written before principals were typed (text) still reads.
func TestOwnerAndCancelPrincipals(t *testing.T) {
	ctx := context.Background()
	b := &testBuilder{m: testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer_funds", nil)}), tools: agent.ToolList{&testkit.Counter{Name: "transfer_funds"}}}
	s := memory.New(nil)
	h := newHost(t, s, b, "host-a", time.Minute)
	alice := tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}
	if _, err := h.Start(ctx, runs.StartRequest{RunID: "run_x", Owner: tool.Principal{Kind: "wizard", Name: "x"}, Config: testConfig(t), Prompt: "pay"}); err == nil || !strings.Contains(err.Error(), "wizard") {
		t.Fatalf("Start with an owner of an unknown kind: %v, want an error naming it", err)
	}
	if _, err := s.GetRun(ctx, "run_x"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the run with a bad owner was stored: %v", err)
	}
	if _, err := h.Start(ctx, runs.StartRequest{RunID: "run_o", Owner: alice, Config: testConfig(t), Prompt: "pay"}); err != nil {
		t.Fatal(err)
	}
	run, err := s.GetRun(ctx, "run_o")
	if err != nil || run.Owner != "person:alice" || run.OwnerPrincipal() != alice {
		t.Fatalf("stored owner %q (%+v), %v; want person:alice", run.Owner, run.OwnerPrincipal(), err)
	}
	for _, by := range []tool.Principal{{}, {Kind: "wizard", Name: "x"}} {
		if err := h.Cancel(ctx, "run_o", by); err == nil {
			t.Errorf("Cancel by %+v: no error", by)
		}
	}
	if run, _ := s.GetRun(ctx, "run_o"); run.Status != store.RunPending {
		t.Fatalf("a refused Cancel changed the run: %s", run.Status)
	}
	if err := h.Cancel(ctx, "run_o", alice); err != nil {
		t.Fatal(err)
	}
	evs, err := s.ListEvents(ctx, store.EventFilter{RunID: "run_o"})
	if err != nil {
		t.Fatal(err)
	}
	var started, cancelled string
	for _, e := range evs {
		switch e.Type {
		case runcore.EventRunStarted:
			started = string(e.Data)
		case runcore.EventRunCancelled:
			cancelled = string(e.Data)
		}
	}
	if !strings.Contains(started, `"owner":{"kind":"person","name":"alice"}`) {
		t.Errorf("run.started data %s, want the owner as a principal object", started)
	}
	if cancelled != `{"by":{"kind":"person","name":"alice"}}` {
		t.Errorf("run.cancelled data %s, want who cancelled as a principal object", cancelled)
	}
	for _, data := range []string{cancelled, `{"by":"person:alice"}`} {
		var d struct{ By tool.Principal }
		if err := json.Unmarshal([]byte(data), &d); err != nil || d.By != alice {
			t.Errorf("%s reads as %+v, %v; want alice", data, d.By, err)
		}
	}
}

// A durable run's input enqueued before principals were typed (its owner as
// text) still reads; this version writes the owner as a principal object.
func TestDurableRunOwnerJSON(t *testing.T) {
	alice := tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}
	for _, in := range []string{`{"runId":"r","owner":"person:alice","prompt":"p"}`, `{"runId":"r","owner":{"kind":"person","name":"alice"},"prompt":"p"}`} {
		var d runcore.DurableRun
		if err := json.Unmarshal([]byte(in), &d); err != nil || d.Owner != alice {
			t.Errorf("%s: owner %+v, %v; want alice", in, d.Owner, err)
		}
	}
	b, err := json.Marshal(runcore.DurableRun{RunID: "r", Owner: alice})
	if err != nil || !strings.Contains(string(b), `"owner":{"kind":"person","name":"alice"}`) {
		t.Errorf("encoded %s, %v", b, err)
	}
	if b, _ := json.Marshal(runcore.DurableRun{RunID: "r"}); strings.Contains(string(b), "owner") {
		t.Errorf("a run with no owner encodes one: %s", b)
	}
}

// A stored configuration with a relative path is refused rather than resolved
// against whatever directory the resuming process runs in.
func TestConfigPathsAbsolute(t *testing.T) {
	cfg := testConfig(t)
	if err := runcore.CheckConfig(cfg); err != nil {
		t.Fatal(err)
	}
	bad := cfg
	bad.PolicyFile = "policy.yaml"
	if err := runcore.CheckConfig(bad); err == nil {
		t.Fatal("a relative policy path must be refused")
	}
	bad = cfg
	bad.Version = runcore.ConfigVersion + 1
	if err := runcore.CheckConfig(bad); !errors.Is(err, runs.ErrConfigVersion) {
		t.Fatalf("future version: %v", err)
	}
}

// The sandbox's extra read paths and the Claude Code settings files are
// resolved like every other path, and a relative one in a stored
// configuration is refused; Resolve copies them, so that the caller's slices
// stay its own.
func TestConfigSandboxAndClaudePaths(t *testing.T) {
	in := runs.RunConfig{AgentConfig: runs.AgentConfig{
		Model: runs.ModelRef{Provider: "openai", Name: "m"}, Workdir: "ws",
		Sandbox: &runs.SandboxConfig{Bash: "workspace", Read: []string{"data", "/etc/ssl"}, PassEnv: []string{"GOPATH"}},
		Claude:  &runs.ClaudeConfig{Files: []string{".claude/settings.json"}, Timeout: runs.Duration(5 * time.Second)},
	}}
	cfg, err := in.Resolve("/start")
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Sandbox.Read; len(got) != 2 || got[0] != "/start/data" || got[1] != "/etc/ssl" {
		t.Errorf("Sandbox.Read = %q", got)
	}
	if got := cfg.Claude.Files; len(got) != 1 || got[0] != "/start/.claude/settings.json" {
		t.Errorf("Claude.Files = %q", got)
	}
	if in.Sandbox.Read[0] != "data" || in.Claude.Files[0] != ".claude/settings.json" {
		t.Error("Resolve changed its receiver's slices")
	}
	if err := runcore.CheckConfig(cfg); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var back runs.RunConfig
	if err := json.Unmarshal(b, &back); err != nil || back.Claude.Timeout != runs.Duration(5*time.Second) || back.Sandbox.PassEnv[0] != "GOPATH" {
		t.Fatalf("round trip of %s: %+v, %v", b, back, err)
	}
	bad := cfg
	bad.Sandbox = &runs.SandboxConfig{Read: []string{"rel"}}
	if err := runcore.CheckConfig(bad); err == nil {
		t.Error("a relative sandbox read path must be refused")
	}
	bad = cfg
	bad.Claude = &runs.ClaudeConfig{Files: []string{"rel.json"}}
	if err := runcore.CheckConfig(bad); err == nil {
		t.Error("a relative Claude Code settings path must be refused")
	}
}

// A host dies during the model turn after a turn's calls: the state after
// their results is not stored on its own (it would be the write before the
// next turn's), so the run is taken over from the last call's checkpoint.
// The call is not run again and the next turn shows the model its result
// once, as a run that never died would.
func TestTakeoverAfterResultsNotStored(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	mem := memory.New(&store.Options{Now: clock.Now})
	ds := &dyingStore{Store: mem}
	glob := &testkit.Counter{Name: "glob"}
	inTurn2, release := make(chan struct{}), make(chan struct{})
	var turn2 atomic.Int64
	var results sync.Map // the tool results each turn 2 was shown, by try
	script := testkit.Script([]model.FuncCall{testkit.Call("c1", "glob", nil)})
	m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		if testkit.Turn(req) == 1 {
			n := 0
			for _, msg := range req.Messages {
				if msg.Role == model.RoleTool {
					n++
				}
			}
			try := turn2.Add(1)
			results.Store(try, n)
			if try == 1 {
				close(inTurn2)
				<-release
			}
		}
		return script(ctx, req)
	})
	b := &testBuilder{m: m, tools: agent.ToolList{glob}}
	ha := newHost(t, ds, b, "host-a", time.Hour)
	done := make(chan error, 1)
	go func() {
		_, err := ha.Start(ctx, runs.StartRequest{RunID: "run_r", Config: testConfig(t), Prompt: "go"})
		done <- err
	}()
	<-inTurn2
	ds.died.Store(true)
	close(release)
	if err := <-done; err == nil {
		t.Fatal("the dead host's run must fail to store its end")
	}
	clock.Advance(2 * time.Hour)
	res, err := newHost(t, mem, b, "host-b", time.Hour).Resume(ctx, runs.ResumeRequest{RunID: "run_r"})
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("takeover: %+v %v", res, err)
	}
	if glob.Count() != 1 {
		t.Fatalf("the call that finished before the death ran %d times, want 1", glob.Count())
	}
	if n, _ := results.Load(int64(2)); n != 1 || len(res.ToolCalls) != 1 {
		t.Fatalf("the taken-over turn 2 was shown %v tool results and the run has %d calls, want 1 and 1", n, len(res.ToolCalls))
	}
}
