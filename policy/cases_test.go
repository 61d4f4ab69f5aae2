package policy_test

// Field cases of ../shared/cases/CASES.md (approval and suspension, C04, C05)
// through a real agent with the real Policy.

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/sqlite"
	"github.com/tollgate-dev/tollgate/tool"
)

// scripted is a model that plays turns in order (then answers "done") and
// keeps every request it was sent.
type scripted struct {
	mu    sync.Mutex
	turns [][]model.FuncCall
	n     int
	reqs  []*model.Request
}

func newScripted(turns ...[]model.FuncCall) *scripted { return &scripted{turns: turns} }

func (s *scripted) model() model.Func {
	return func(ctx context.Context, req *model.Request) (model.Reply, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.reqs = append(s.reqs, req)
		if s.n >= len(s.turns) {
			return model.Reply{Content: "done"}, nil
		}
		s.n++
		return model.Reply{ToolCalls: s.turns[s.n-1]}, nil
	}
}

func (s *scripted) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

// toolMessagesSent returns the tool messages of the model's last request.
func (s *scripted) toolMessagesSent() []model.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []model.Message
	if len(s.reqs) == 0 {
		return nil
	}
	for _, m := range s.reqs[len(s.reqs)-1].Messages {
		if m.Role == model.RoleTool {
			out = append(out, m)
		}
	}
	return out
}

func newAgent(t *testing.T, opts agent.Options) *agent.Agent {
	t.Helper()
	a, err := agent.New(&opts)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

var bg = context.Background()

// transferPolicy asks a person before any transfer and denies /etc.
const transferPolicy = `
rules:
  - id: ask-transfers
    tool: "transfer*"
    decision: ask
    reason: money moves need a person
  - id: no-etc
    tool: "*_file"
    args:
      path: {pathPrefix: /etc}
    decision: deny
    reason: /etc is off limits
`

// oneResultPerCall checks that every tool call of the transcript has exactly
// one tool result.
func oneResultPerCall(t *testing.T, tr []model.Message) {
	t.Helper()
	results := map[string]int{}
	var ids []string
	for _, m := range tr {
		for _, c := range m.ToolCalls {
			ids = append(ids, c.ID)
		}
		if m.Role == model.RoleTool {
			results[m.ToolCallID]++
		}
	}
	for _, id := range ids {
		if results[id] != 1 {
			t.Errorf("tool call %s has %d results in the transcript, want 1", id, results[id])
		}
		delete(results, id)
	}
	if len(results) != 0 {
		t.Errorf("tool results without a call: %v", results)
	}
}

func roundTrip(t *testing.T, st *agent.State) *agent.State {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var out agent.State
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

// C25: a BeforeTool hook returns a pending approval for transfer_funds.
// Without WaitFor the run halts pending, counter 0; approving runs it once;
// denying never runs it. The same holds when the Policy asks.
func TestC25PendingMeansNotRun(t *testing.T) {
	askHook := (&hooks.Hooks{}).BeforeTool("ask-transfer", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		if ev.Name == "transfer_funds" && ev.Answer == nil {
			return hooks.Ask(tool.Request{ID: "approve-transfer", Kind: tool.KindApproval, Prompt: "transfer?"}), nil
		}
		return nil, nil
	})
	for _, source := range []string{"hook", "policy"} {
		t.Run(source, func(t *testing.T) {
			opts := func(m model.Model, c *testkit.Counter) agent.Options {
				o := agent.Options{Model: m, Tools: agent.ToolList{c}}
				if source == "hook" {
					o.Hooks = askHook
				} else {
					o.Authorizers = []approval.Authorizer{mustPolicy(t, transferPolicy)}
				}
				return o
			}
			transfer := &testkit.Counter{Name: "transfer_funds"}
			sc := newScripted([]model.FuncCall{testkit.Call("c1", "transfer_funds", map[string]any{"to": "bob", "amount": 10})})
			res, err := newAgent(t, opts(sc.model(), transfer)).Run(bg, "pay bob")
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != agent.StatusPending || len(res.Pending) != 1 || transfer.Count() != 0 {
				t.Fatalf("status %s, pending %v, counter %d; want pending, 1, 0", res.Status, res.Pending, transfer.Count())
			}
			id := res.Pending[0].ID

			// Approve: runs exactly once.
			approved, err := newAgent(t, opts(sc.model(), transfer)).Resume(bg, res.State, tool.Answer{ID: id, OK: true, By: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			if approved.Status != agent.StatusDone || transfer.Count() != 1 {
				t.Fatalf("after approval: status %s, counter %d; want done, 1", approved.Status, transfer.Count())
			}
			if d := approved.ToolCalls[0].Decision; d.Outcome != gate.OutcomeApproved || d.By.String() != "person:alice" {
				t.Errorf("decision %+v, want approved by person:alice", d)
			}

			// Deny (from the same halted state, with a fresh counter): never runs.
			denied := &testkit.Counter{Name: "transfer_funds"}
			sc2 := newScripted()
			res2, err := newAgent(t, opts(sc2.model(), denied)).Resume(bg, res.State, tool.Answer{ID: id, OK: false, Reason: "not today", By: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			if res2.Status != agent.StatusDone || denied.Count() != 0 {
				t.Fatalf("after denial: status %s, counter %d; want done, 0", res2.Status, denied.Count())
			}
		})
	}
}

// C26: a person's deny is enforced by the runtime, and the model sees the
// person's reason under the call's ID.
func TestC26HumanDenyEnforced(t *testing.T) {
	transfer := &testkit.Counter{Name: "transfer_funds"}
	sc := newScripted([]model.FuncCall{testkit.Call("c1", "transfer_funds", map[string]any{"amount": 1_000_000})})
	pol := mustPolicy(t, transferPolicy)
	a := newAgent(t, agent.Options{Model: sc.model(), Tools: agent.ToolList{transfer}, Authorizers: []approval.Authorizer{pol}})
	res, err := a.Run(bg, "pay")
	if err != nil {
		t.Fatal(err)
	}
	res, err = a.Resume(bg, res.State, tool.Answer{ID: res.Pending[0].ID, OK: false, Reason: "exceeds the daily limit", By: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if transfer.Count() != 0 {
		t.Fatalf("the denied call ran %d times", transfer.Count())
	}
	sent := sc.toolMessagesSent()
	if len(sent) != 1 || sent[0].ToolCallID != "c1" || !sent[0].IsError || !strings.Contains(sent[0].Content, "exceeds the daily limit") {
		t.Fatalf("the model was sent %+v, want an error result for c1 with the person's reason", sent)
	}
	d := res.ToolCalls[0].Decision
	if d.Outcome != gate.OutcomeDeclined || d.By.String() != "person:alice" || d.Reason != "exceeds the daily limit" {
		t.Errorf("decision %+v", d)
	}
}

// C27: serialize the halted run, build a fresh agent (and policy, and tool
// instance, as a new process would), answer: the tool runs exactly once,
// nobody is asked again, every tool call of the transcript has one result.
func TestC27ResumeInNewProcess(t *testing.T) {
	first := &testkit.Counter{Name: "transfer_funds"}
	balance := &testkit.Counter{Name: "balance", Hints: &tool.Hints{ReadOnly: true}}
	turns := [][]model.FuncCall{
		{testkit.Call("c1", "transfer_funds", map[string]any{"amount": 5}), testkit.Call("c2", "balance", nil)},
		{testkit.Call("c3", "balance", nil)},
	}
	sc := newScripted(turns...)
	a := newAgent(t, agent.Options{Model: sc.model(), Tools: agent.ToolList{first, balance}, Authorizers: []approval.Authorizer{mustPolicy(t, transferPolicy)}})
	res, err := a.Run(bg, "pay")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agent.StatusPending || first.Count() != 0 || balance.Count() != 1 {
		t.Fatalf("status %s transfer %d balance %d", res.Status, first.Count(), balance.Count())
	}
	st := roundTrip(t, res.State)

	// The "new process": new policy, new tool instances, new model replaying
	// from the halted turn, a WaitFor that counts any new question.
	second := &testkit.Counter{Name: "transfer_funds"}
	balance2 := &testkit.Counter{Name: "balance", Hints: &tool.Hints{ReadOnly: true}}
	sc2 := newScripted(turns[1:]...)
	var asked atomic.Int64
	wait := func(ctx context.Context, req tool.Request) (tool.Answer, error) {
		asked.Add(1)
		return tool.Answer{ID: req.ID, OK: false, Reason: "nobody should be asked"}, nil
	}
	b := newAgent(t, agent.Options{Model: sc2.model(), Tools: agent.ToolList{second, balance2}, WaitFor: wait, Authorizers: []approval.Authorizer{mustPolicy(t, transferPolicy)}})
	out, err := b.Resume(bg, st, tool.Answer{ID: st.PendingRequests()[0].ID, OK: true, By: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != agent.StatusDone {
		t.Fatalf("status %s: %s", out.Status, out.Reason)
	}
	if first.Count() != 0 || second.Count() != 1 || balance.Count() != 1 || balance2.Count() != 1 {
		t.Errorf("transfer ran %d+%d times, balance %d+%d; want 0+1 and 1+1 (c2 not run again, c3 once)", first.Count(), second.Count(), balance.Count(), balance2.Count())
	}
	if asked.Load() != 0 || len(out.Pending) != 0 {
		t.Errorf("asked %d times, %d pending; want nobody asked again", asked.Load(), len(out.Pending))
	}
	oneResultPerCall(t, out.Transcript)
	if n := len(out.ToolCalls); n != 3 {
		t.Errorf("%d records, want 3", n)
	}
}

// C27 through the durable store: the halted run and its approval go to SQLite,
// the store is closed, a second handle (another process) decides, a third
// consumes the approval and resumes. A second resume attempt cannot use the
// approval again.
func TestC27ThroughSQLiteStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".tollgate", "tollgate.db")
	transfer := &testkit.Counter{Name: "transfer_funds"}
	sc := newScripted([]model.FuncCall{testkit.Call("c1", "transfer_funds", map[string]any{"amount": 5})})
	pol := mustPolicy(t, transferPolicy)
	res, err := newAgent(t, agent.Options{Model: sc.model(), Tools: agent.ToolList{transfer}, Authorizers: []approval.Authorizer{pol}}).Run(bg, "pay")
	if err != nil {
		t.Fatal(err)
	}
	stateJSON, _ := json.Marshal(res.State)
	var approvals []store.Approval
	for _, b := range res.State.Waiting() {
		approvals = append(approvals, store.Approval{ID: b.Pending.Request.ID, CallID: b.Call.ID, Tool: b.Call.Name, Digest: b.Pending.Digest,
			Kind: b.Pending.Request.Kind, Prompt: b.Pending.Request.Prompt, Request: b.Pending.Request, ExpiresAt: b.Pending.Request.ExpiresAt})
	}
	s1, err := sqlite.Open(bg, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s1.CreateRun(bg, store.CreateRunRequest{Run: store.Run{ID: res.RunID, Status: store.RunPending, State: stateJSON}, Approvals: approvals}); err != nil {
		t.Fatal(err)
	}
	s1.Close()

	s2, err := sqlite.Open(bg, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Decide(bg, res.RunID, approvals[0].ID, store.Answer{Approve: true, By: tool.PrincipalOf("alice")}); err != nil {
		t.Fatal(err)
	}
	s2.Close()

	// Each resume is a fresh process with its own tool; ran counts the runs
	// of all of them.
	var resumed int64
	ran := func() int64 { return transfer.Count() + resumed }
	resume := func() (*agent.Result, error) {
		s, err := sqlite.Open(bg, path, nil)
		if err != nil {
			return nil, err
		}
		defer s.Close()
		run, err := s.GetRun(bg, res.RunID)
		if err != nil {
			return nil, err
		}
		if _, err := s.UpdateRun(bg, run.ID, store.RunUpdate{From: store.RunPending, Status: store.RunResuming}); err != nil {
			return nil, err
		}
		var st agent.State
		if err := json.Unmarshal(run.State, &st); err != nil {
			return nil, err
		}
		var answers []tool.Answer
		for _, b := range st.Waiting() {
			a, err := s.Consume(bg, run.ID, b.Pending.Request.ID, b.Pending.Digest)
			if err != nil {
				return nil, err
			}
			ans, _ := a.Answer()
			answers = append(answers, ans)
		}
		fresh := &testkit.Counter{Name: "transfer_funds"}
		defer func() { resumed += fresh.Count() }()
		out, err := newAgent(t, agent.Options{Model: newScripted().model(), Tools: agent.ToolList{fresh}, Authorizers: []approval.Authorizer{mustPolicy(t, transferPolicy)}}).Resume(bg, &st, answers...)
		if err != nil {
			return nil, err
		}
		_, err = s.UpdateRun(bg, run.ID, store.RunUpdate{From: store.RunResuming, Status: store.RunStatus(out.Status), State: json.RawMessage("null")})
		return out, err
	}
	out, err := resume()
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != agent.StatusDone || ran() != 1 {
		t.Fatalf("status %s, transfer ran %d times; want done, 1", out.Status, ran())
	}
	if _, err := resume(); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("second resume: %v, want ErrConflict", err)
	}
	if ran() != 1 {
		t.Fatalf("transfer ran %d times after a second resume attempt", ran())
	}
}

// C29: two transfer calls pend in one turn; approving only B runs only B.
// Pinned behaviour: an unanswered request stays pending (the agent never
// guesses), so "approve only B" finishes the turn when the host answers A
// with a decline, in the same Resume or a later one; A then gets a decline
// result and B is not run again.
func TestC29TwoPendingOneApproved(t *testing.T) {
	turn := []model.FuncCall{testkit.Call("A", "transfer", map[string]any{"to": "alice"}), testkit.Call("B", "transfer", map[string]any{"to": "bob"})}
	start := func(t *testing.T, hk *hooks.Hooks) (*agent.Result, *testkit.Counter, *scripted, func() *agent.Agent) {
		c := &testkit.Counter{Name: "transfer"}
		sc := newScripted(turn)
		mk := func() *agent.Agent {
			return newAgent(t, agent.Options{Model: sc.model(), Tools: agent.ToolList{c}, Hooks: hk, Authorizers: []approval.Authorizer{mustPolicy(t, transferPolicy)}})
		}
		res, err := mk().Run(bg, "pay both")
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != agent.StatusPending || len(res.Pending) != 2 || res.Pending[0].ID == res.Pending[1].ID {
			t.Fatalf("status %s pending %+v; want two distinct requests", res.Status, res.Pending)
		}
		return res, c, sc, mk
	}
	idOf := func(res *agent.Result, callID string) string {
		for _, b := range res.State.Waiting() {
			if b.Call.ID == callID {
				return b.Pending.Request.ID
			}
		}
		t.Fatalf("no pending request for call %s", callID)
		return ""
	}
	check := func(t *testing.T, out *agent.Result, c *testkit.Counter) {
		t.Helper()
		if out.Status != agent.StatusDone {
			t.Fatalf("status %s", out.Status)
		}
		if d := cmp.Diff([]string{`{"to":"bob"}`}, c.Args()); d != "" {
			t.Errorf("transfer ran with (-want +got):\n%s", d)
		}
		var a, b *gate.Record
		for i := range out.ToolCalls {
			switch out.ToolCalls[i].ID {
			case "A":
				a = &out.ToolCalls[i]
			case "B":
				b = &out.ToolCalls[i]
			}
		}
		if a == nil || a.Ran || !a.IsError || a.Decision.Outcome != gate.OutcomeDeclined || !strings.Contains(a.Output, "only B") {
			t.Errorf("A = %+v, want a decline result", a)
		}
		if b == nil || !b.Ran || b.Decision.Outcome != gate.OutcomeApproved {
			t.Errorf("B = %+v, want approved and run", b)
		}
		oneResultPerCall(t, out.Transcript)
	}

	t.Run("one resume", func(t *testing.T) {
		res, c, _, mk := start(t, nil)
		out, err := mk().Resume(bg, res.State,
			tool.Answer{ID: idOf(res, "B"), OK: true, By: "alice"},
			tool.Answer{ID: idOf(res, "A"), OK: false, Reason: "only B", By: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		check(t, out, c)
	})
	t.Run("B now, A later", func(t *testing.T) {
		res, c, sc, mk := start(t, nil)
		calls := sc.calls()
		mid, err := mk().Resume(bg, res.State, tool.Answer{ID: idOf(res, "B"), OK: true, By: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		if mid.Status != agent.StatusPending || len(mid.Pending) != 1 || mid.Pending[0].ID != idOf(res, "A") || c.Count() != 1 || sc.calls() != calls {
			t.Fatalf("after approving B: status %s pending %+v counter %d model calls %d->%d; want pending on A only, B run, model not called",
				mid.Status, mid.Pending, c.Count(), calls, sc.calls())
		}
		out, err := mk().Resume(bg, mid.State, tool.Answer{ID: mid.Pending[0].ID, OK: false, Reason: "only B", By: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		check(t, out, c)
	})
	t.Run("hook reuses one request ID", func(t *testing.T) {
		hk := (&hooks.Hooks{}).BeforeTool("ask", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
			if ev.Answer == nil {
				return hooks.Ask(tool.Request{ID: "approve", Kind: tool.KindApproval, Prompt: "transfer?"}), nil
			}
			return nil, nil
		})
		res, c, _, mk := start(t, hk)
		out, err := mk().Resume(bg, res.State,
			tool.Answer{ID: idOf(res, "B"), OK: true, By: "alice"},
			tool.Answer{ID: idOf(res, "A"), OK: false, Reason: "only B", By: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		// The hook's approval covers the call; the policy's ask for the same
		// arguments does not ask again.
		check(t, out, c)
	})
}

// C31: an answer whose ID matches nothing is an error to the host; the model
// is not called; the run stays pending and nothing ran. So is a duplicate.
func TestC31MalformedAnswer(t *testing.T) {
	transfer := &testkit.Counter{Name: "transfer_funds"}
	sc := newScripted([]model.FuncCall{testkit.Call("c1", "transfer_funds", nil)})
	a := newAgent(t, agent.Options{Model: sc.model(), Tools: agent.ToolList{transfer}, Authorizers: []approval.Authorizer{mustPolicy(t, transferPolicy)}})
	res, err := a.Run(bg, "pay")
	if err != nil {
		t.Fatal(err)
	}
	before := sc.calls()
	id := res.Pending[0].ID
	for _, tt := range []struct {
		answers []tool.Answer
		want    error
	}{
		{[]tool.Answer{{ID: "req_nope", OK: true}}, agent.ErrUnknownAnswer},
		{[]tool.Answer{{ID: id, OK: true}, {ID: "req_nope", OK: true}}, agent.ErrUnknownAnswer},
		{[]tool.Answer{{ID: id, OK: true}, {ID: id, OK: false}}, agent.ErrDuplicateAnswer},
	} {
		out, err := a.Resume(bg, res.State, tt.answers...)
		if !errors.Is(err, tt.want) {
			t.Fatalf("Resume(%+v) err = %v, want %v", tt.answers, err, tt.want)
		}
		if out == nil || out.Status != agent.StatusPending || len(out.Pending) != 1 || out.Pending[0].ID != id {
			t.Fatalf("Resume(%+v) result %+v, want the run still pending on %s", tt.answers, out, id)
		}
	}
	if sc.calls() != before || transfer.Count() != 0 {
		t.Errorf("model called %d more times, tool ran %d times; want 0, 0", sc.calls()-before, transfer.Count())
	}
	if len(res.State.PendingRequests()) != 1 {
		t.Error("the caller's state changed")
	}
}

// C32: an edit is authorized again: a person's edit turning read_file's
// arguments into /etc/shadow meets the policy's deny; an edit the policy
// allows runs with the edited arguments, and the record keeps both.
func TestC32EditAuthorizedAgain(t *testing.T) {
	pol := mustPolicy(t, "autonomy: manual\n"+transferPolicy)
	for _, tt := range []struct {
		name, edit string
		ran        []string
		outcome    gate.Outcome
		by         string
	}{
		{"edit into a denied path", `{"path":"/etc/shadow"}`, nil, gate.OutcomeDenied, "rule:no-etc"},
		{"edit into a denied path via ..", `{"path":"/tmp/../etc/shadow"}`, nil, gate.OutcomeDenied, "rule:no-etc"},
		{"allowed edit", `{"path":"notes/b.txt"}`, []string{`{"path":"notes/b.txt"}`}, gate.OutcomeApproved, "person:alice"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			read := &testkit.Counter{Name: "read_file", Hints: &tool.Hints{ReadOnly: true}}
			sc := newScripted([]model.FuncCall{testkit.Call("c1", "read_file", map[string]string{"path": "notes/a.txt"})})
			a := newAgent(t, agent.Options{Model: sc.model(), Tools: agent.ToolList{read}, Authorizers: []approval.Authorizer{pol}})
			res, err := a.Run(bg, "read")
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != agent.StatusPending {
				t.Fatalf("status %s, want pending (manual autonomy asks)", res.Status)
			}
			out, err := a.Resume(bg, res.State, tool.Answer{ID: res.Pending[0].ID, OK: true, By: "alice", Data: json.RawMessage(tt.edit)})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.ran, read.Args()); d != "" {
				t.Errorf("read_file ran with (-want +got):\n%s", d)
			}
			rec := out.ToolCalls[0]
			if rec.Decision.Outcome != tt.outcome || rec.Decision.By.String() != tt.by {
				t.Errorf("decision %+v, want %s by %s", rec.Decision, tt.outcome, tt.by)
			}
			if string(rec.RequestedArgs) != `{"path":"notes/a.txt"}` || string(rec.Args) != tt.edit {
				t.Errorf("record keeps requested %s and executed %s", rec.RequestedArgs, rec.Args)
			}
		})
	}
}

// C42: the streaming entry point honours approval: the pending event comes
// before any execution, and the tool has not run.
func TestC42StreamingHonoursApproval(t *testing.T) {
	transfer := &testkit.Counter{Name: "transfer_funds"}
	sc := newScripted([]model.FuncCall{testkit.Call("c1", "transfer_funds", nil)})
	a := newAgent(t, agent.Options{Model: sc.model(), Tools: agent.ToolList{transfer}, Authorizers: []approval.Authorizer{mustPolicy(t, transferPolicy)}})
	var kinds []agent.EventKind
	var final *agent.Result
	for ev, err := range a.Stream(bg, "pay") {
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, ev.Kind)
		switch ev.Kind {
		case agent.EventPending:
			if transfer.Count() != 0 || ev.CallID != "c1" || ev.Request == nil || ev.Request.Kind != tool.KindApproval {
				t.Errorf("pending event %+v with counter %d", ev, transfer.Count())
			}
		case agent.EventToolResult:
			t.Errorf("a tool result for a pending call: %+v", ev.Record)
		case agent.EventDone:
			final = ev.Result
		}
	}
	want := []agent.EventKind{agent.EventUsage, agent.EventToolCall, agent.EventDecision, agent.EventPending, agent.EventDone}
	if d := cmp.Diff(want, kinds); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	if final == nil || final.Status != agent.StatusPending || transfer.Count() != 0 {
		t.Fatalf("final %+v, counter %d", final, transfer.Count())
	}
}

// C04 with the real Policy: a hook's allow never widens the policy's deny of
// destructive tools; the record shows both votes and that deny won.
func TestC04PolicyDenyBeatsHookAllow(t *testing.T) {
	del := &testkit.Counter{Name: "delete_file", Hints: &tool.Hints{Destructive: true}}
	h := (&hooks.Hooks{}).BeforeTool("allow-all", func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		return hooks.Allow("everything is fine"), nil
	})
	pol := mustPolicy(t, `
autonomy: full_auto
rules:
  - id: no-destructive
    hints: {destructive: true}
    decision: deny
    reason: destructive tools are denied
`)
	sc := newScripted([]model.FuncCall{testkit.Call("c1", "delete_file", map[string]string{"path": "x"})})
	res, err := newAgent(t, agent.Options{Model: sc.model(), Tools: agent.ToolList{del}, Hooks: h, Authorizers: []approval.Authorizer{pol}}).Run(bg, "x")
	if err != nil {
		t.Fatal(err)
	}
	if del.Count() != 0 {
		t.Fatal("delete_file ran")
	}
	want := gate.Decision{Outcome: gate.OutcomeDenied, By: tool.Principal{Kind: "rule", Name: "no-destructive"}, Reason: "destructive tools are denied", Votes: []tool.Vote{
		{Source: tool.Principal{Kind: "hook", Name: "allow-all"}, Decision: "allow", Reason: "everything is fine"},
		{Source: tool.Principal{Kind: "rule", Name: "no-destructive"}, Decision: "deny", Reason: "destructive tools are denied"},
	}}
	if d := cmp.Diff(want, res.ToolCalls[0].Decision); d != "" {
		t.Errorf("decision (-want +got):\n%s", d)
	}
	if msg := sc.toolMessagesSent(); len(msg) != 1 || !strings.Contains(msg[0].Content, "destructive tools are denied") {
		t.Errorf("model saw %+v", msg)
	}
}

// C05 with the real Policy present: two BeforeTool hooks, one allowing, one
// denying delete_*, in both orders: denied both times, counter 0, the record
// names the hook; and when the denial comes from a policy rule instead, the
// record names the rule, in both orders of the allowing hooks.
func TestC05SeveralMatchingSources(t *testing.T) {
	allow := func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		return hooks.Allow("fine by me"), nil
	}
	deny := func(ctx context.Context, ev *hooks.BeforeToolEvent) (*hooks.ToolOverride, error) {
		if strings.HasPrefix(ev.Name, "delete_") {
			return hooks.Deny("no deletes"), nil
		}
		return nil, nil
	}
	fullAuto := mustPolicy(t, "autonomy: full_auto\n")
	ruleDeny := mustPolicy(t, "autonomy: full_auto\nrules:\n  - id: no-delete\n    tool: delete_*\n    decision: deny\n    reason: no deletes by rule\n")
	for _, tt := range []struct {
		name   string
		hooks  func() *hooks.Hooks
		policy *policy.Policy
		by     string
	}{
		{"allow then deny hook", func() *hooks.Hooks { return (&hooks.Hooks{}).BeforeTool("allower", allow).BeforeTool("denier", deny) }, fullAuto, "hook:denier"},
		{"deny then allow hook", func() *hooks.Hooks { return (&hooks.Hooks{}).BeforeTool("denier", deny).BeforeTool("allower", allow) }, fullAuto, "hook:denier"},
		{"two allow hooks, rule denies", func() *hooks.Hooks {
			return (&hooks.Hooks{}).BeforeTool("allower", allow).BeforeTool("allower2", allow)
		}, ruleDeny, "rule:no-delete"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			del := &testkit.Counter{Name: "delete_file"}
			sc := newScripted([]model.FuncCall{testkit.Call("c1", "delete_file", nil)})
			res, err := newAgent(t, agent.Options{Model: sc.model(), Tools: agent.ToolList{del}, Hooks: tt.hooks(), Authorizers: []approval.Authorizer{tt.policy}}).Run(bg, "x")
			if err != nil {
				t.Fatal(err)
			}
			if del.Count() != 0 {
				t.Error("delete_file ran")
			}
			if d := res.ToolCalls[0].Decision; d.Outcome != gate.OutcomeDenied || d.By.String() != tt.by {
				t.Errorf("decision %+v, want denied by %s", d, tt.by)
			}
		})
	}
}
