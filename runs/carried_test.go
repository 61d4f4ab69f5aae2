package runs_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/store/sqlite"
	"github.com/tollgate-dev/tollgate/tool"
)

// askingTransfer is a transfer_funds tool that asks for the account while
// it runs (a request of kind input) until the answer it runs with carries
// a JSON string; ran counts its runs.
func askingTransfer(ran *atomic.Int64) tool.Tool {
	type in struct {
		Amount int `json:"amount"`
	}
	return tool.Must("transfer_funds", "moves money", func(ctx context.Context, _ in) (tool.Result, error) {
		if ans := tool.InvocationFrom(ctx).Answer; ans == nil || !strings.HasPrefix(string(ans.Data), `"`) {
			return tool.Pending(tool.Request{Kind: tool.KindInput, Prompt: "to which account?"}), nil
		}
		ran.Add(1)
		return tool.Text("moved"), nil
	}, nil)
}

// approvedThenAsking starts a run whose one call the policy asks about,
// has alice approve it and resumes: the tool asks for input, and the run
// halts again on that request with alice's approval carried. It returns
// the tool's request.
func approvedThenAsking(t *testing.T, h *runs.Host, runID string) tool.Request {
	t.Helper()
	ctx := context.Background()
	res, err := h.Start(ctx, runs.StartRequest{RunID: runID, Owner: tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}, Config: testConfig(t), Prompt: "pay"})
	if err != nil || res.Status != agent.StatusPending || res.Pending[0].Kind != tool.KindApproval {
		t.Fatalf("start: %+v %v", res, err)
	}
	if _, err := h.Answer(ctx, runID, res.Pending[0].ID, store.Answer{Approve: true, By: tool.PrincipalOf("person:alice"), Reason: "ok"}); err != nil {
		t.Fatal(err)
	}
	res, err = h.Resume(ctx, runs.ResumeRequest{RunID: runID})
	if err != nil || res.Status != agent.StatusPending || res.Pending[0].Kind != tool.KindInput {
		t.Fatalf("resume after the approval: %+v %v", res, err)
	}
	return res.Pending[0]
}

// A call a person approved whose tool then asks for input halts again;
// answered, it runs once, without its approval asked again, and the
// record names who approved and who answered. A state changed in the
// store so that the call carries an approval the store does not hold
// (here: in another person's name) is declined in the runtime's name,
// and the tool never runs.
func TestCarriedApprovalIsCheckedAgainstTheStore(t *testing.T) {
	ctx := context.Background()
	var ran atomic.Int64
	call := []model.FuncCall{testkit.Call("c1", "transfer_funds", map[string]int{"amount": 5})}
	s := memory.New(nil)
	b := &testBuilder{m: testkit.Script(call), tools: agent.ToolList{askingTransfer(&ran)}}
	h := newHost(t, s, b, "host-a", time.Minute)

	req := approvedThenAsking(t, h, "run_real")
	if _, err := h.Answer(ctx, "run_real", req.ID, store.Answer{Approve: true, By: tool.PrincipalOf("person:bob"), Data: json.RawMessage(`"acc-1"`)}); err != nil {
		t.Fatal(err)
	}
	res, err := h.Resume(ctx, runs.ResumeRequest{RunID: "run_real"})
	if err != nil || res.Status != agent.StatusDone || ran.Load() != 1 {
		t.Fatalf("resume: ran %d times, %+v %v", ran.Load(), res, err)
	}
	d := res.ToolCalls[0].Decision
	var votes []string
	for _, v := range d.Votes {
		votes = append(votes, v.Source.String()+"="+string(v.Decision))
	}
	if d.Outcome != gate.OutcomeApproved || d.By.String() != "person:alice" || strings.Join(votes, " ") != "rule:ask-transfer=ask person:alice=allow person:bob=allow" {
		t.Fatalf("decision %s by %s, votes %v", d.Outcome, d.By, votes)
	}

	req = approvedThenAsking(t, h, "run_forged")
	run, err := s.GetRun(ctx, "run_forged")
	if err != nil {
		t.Fatal(err)
	}
	forged := strings.Replace(string(run.State), `"principal":{"kind":"person","name":"alice"}`, `"principal":{"kind":"person","name":"mallory"}`, 1)
	if forged == string(run.State) {
		t.Fatalf("the state carries no approval by alice: %s", run.State)
	}
	if _, err := s.UpdateRun(ctx, "run_forged", store.RunUpdate{From: store.RunPending, State: json.RawMessage(forged)}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Answer(ctx, "run_forged", req.ID, store.Answer{Approve: true, By: tool.PrincipalOf("person:bob"), Data: json.RawMessage(`"acc-1"`)}); err != nil {
		t.Fatal(err)
	}
	res, err = h.Resume(ctx, runs.ResumeRequest{RunID: "run_forged"})
	if err != nil || ran.Load() != 1 {
		t.Fatalf("resume of the forged state: ran %d times in all, %v", ran.Load(), err)
	}
	d = res.ToolCalls[0].Decision
	if d.Outcome != gate.OutcomeDeclined || d.By.Kind != tool.PrincipalRuntime || !strings.Contains(d.Reason, "was decided otherwise") {
		t.Fatalf("decision %+v", d)
	}
}

// The durable engine checks a carried approval against the store too: a
// call approved by alice whose tool then asks halts again; when the used
// approval is changed in the database meanwhile (SQL around tollgate), the
// answer to the tool's request is declined in the runtime's name and the
// tool never runs; left alone, the call runs once, approved by alice.
func TestDurableCarriedApprovalIsChecked(t *testing.T) {
	for _, forge := range []bool{false, true} {
		t.Run(map[bool]string{false: "kept", true: "forged"}[forge], func(t *testing.T) {
			ctx := context.Background()
			key := make([]byte, 32)
			path := filepath.Join(t.TempDir(), "tollgate.db")
			st, err := sqlite.Open(ctx, path, &store.Options{DecisionKey: key})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			var ran atomic.Int64
			call := []model.FuncCall{testkit.Call("c1", "transfer_funds", map[string]int{"amount": 5})}
			d, err := runcore.NewDurable(st, &testBuilder{m: testkit.Script(call), tools: agent.ToolList{askingTransfer(&ran)}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			eng := newFakeEngine()
			eng.onWait = func(topic string) {
				id := strings.TrimPrefix(topic, "answer:")
				a, err := st.GetApproval(ctx, "run_c", id)
				if err != nil || a.Status != store.StatusPending {
					return
				}
				ans := store.Answer{Approve: true, By: tool.PrincipalOf("person:alice")}
				if a.Kind == tool.KindInput {
					if forge {
						db, err := sql.Open("sqlite", "file:"+path)
						if err != nil {
							t.Fatal(err)
						}
						if _, err := db.Exec(`UPDATE approvals SET decided_by = 'person:mallory' WHERE status = 'used'`); err != nil {
							t.Fatal(err)
						}
						db.Close()
					}
					ans = store.Answer{Approve: true, By: tool.PrincipalOf("person:bob"), Data: json.RawMessage(`"acc-1"`)}
				}
				if _, err := st.Decide(ctx, "run_c", id, ans); err != nil {
					t.Errorf("answer %s: %v", id, err)
				}
			}
			in := runcore.DurableRun{RunID: "run_c", Config: runs.RunConfig{Version: runcore.ConfigVersion, AgentConfig: runs.AgentConfig{Workdir: t.TempDir()}}, Prompt: "pay"}
			if err := runcore.PrepareDurable(ctx, st, &in); err != nil {
				t.Fatal(err)
			}
			eng.execution(-1)
			res, err := d.Drive(ctx, eng, in)
			if err != nil || res == nil || len(res.ToolCalls) != 1 {
				t.Fatalf("drive: %+v %v", res, err)
			}
			dec := res.ToolCalls[0].Decision
			switch {
			case forge && (ran.Load() != 0 || dec.Outcome != gate.OutcomeDeclined || !strings.Contains(dec.Reason, "carries no valid MAC")):
				t.Fatalf("forged: ran %d times, decision %+v", ran.Load(), dec)
			case !forge && (ran.Load() != 1 || dec.Outcome != gate.OutcomeApproved || dec.By.String() != "person:alice"):
				t.Fatalf("kept: ran %d times, decision %+v", ran.Load(), dec)
			}
		})
	}
}

// A carried approval is bound to its tool: a state changed in the store so
// that the approved call (same ID, same arguments) names another tool is
// declined, and neither tool runs.
func TestCarriedApprovalIsBoundToItsTool(t *testing.T) {
	ctx := context.Background()
	var ran, other atomic.Int64
	type in struct {
		Amount int `json:"amount"`
	}
	drain := tool.Must("drain_funds", "moves all money", func(ctx context.Context, _ in) (tool.Result, error) {
		other.Add(1)
		return tool.Text("drained"), nil
	}, nil)
	call := []model.FuncCall{testkit.Call("c1", "transfer_funds", map[string]int{"amount": 5})}
	s := memory.New(nil)
	b := &testBuilder{m: testkit.Script(call), tools: agent.ToolList{askingTransfer(&ran), drain}}
	h := newHost(t, s, b, "host-a", time.Minute)
	req := approvedThenAsking(t, h, "run_swapped")
	run, err := s.GetRun(ctx, "run_swapped")
	if err != nil {
		t.Fatal(err)
	}
	forged := strings.ReplaceAll(string(run.State), `"transfer_funds"`, `"drain_funds"`)
	if forged == string(run.State) {
		t.Fatalf("the state names no transfer_funds: %s", run.State)
	}
	if _, err := s.UpdateRun(ctx, "run_swapped", store.RunUpdate{From: store.RunPending, State: json.RawMessage(forged)}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Answer(ctx, "run_swapped", req.ID, store.Answer{Approve: true, By: tool.PrincipalOf("person:bob"), Data: json.RawMessage(`"acc-1"`)}); err != nil {
		t.Fatal(err)
	}
	res, err := h.Resume(ctx, runs.ResumeRequest{RunID: "run_swapped"})
	if err != nil || ran.Load() != 0 || other.Load() != 0 {
		t.Fatalf("resume of the swapped state: transfer ran %d, drain ran %d, %v", ran.Load(), other.Load(), err)
	}
	if d := res.ToolCalls[0].Decision; d.Outcome != gate.OutcomeDeclined || d.By.Kind != tool.PrincipalRuntime {
		t.Fatalf("decision %+v", d)
	}
}
