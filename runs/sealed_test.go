package runs_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/pgtest"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/postgres"
	"github.com/tollgate-dev/tollgate/store/sqlite"
	"github.com/tollgate-dev/tollgate/tool"
)

// forgeSQL is what a tool that can write the store runs to approve a
// pending call in a person's name.
const forgeSQL = `UPDATE approvals SET status = 'approved', decided_by = 'person:alice', reason = 'forged' WHERE status = 'pending'`

// sealedBackends opens a durable store and says how to write around it.
var sealedBackends = map[string]func(t *testing.T, key []byte) (store.Store, func(t *testing.T)){
	"sqlite": func(t *testing.T, key []byte) (store.Store, func(t *testing.T)) {
		path := filepath.Join(t.TempDir(), "tollgate.db")
		s, err := sqlite.Open(context.Background(), path, &store.Options{DecisionKey: key})
		if err != nil {
			t.Fatal(err)
		}
		return s, func(t *testing.T) {
			db, err := sql.Open("sqlite", "file:"+path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if res, err := db.Exec(forgeSQL); err != nil {
				t.Fatal(err)
			} else if n, _ := res.RowsAffected(); n != 1 {
				t.Fatalf("forged %d rows", n)
			}
		}
	},
	"postgres": func(t *testing.T, key []byte) (store.Store, func(t *testing.T)) {
		url := pgtest.Database(t)
		s, err := postgres.Open(context.Background(), url, &store.Options{DecisionKey: key})
		if err != nil {
			t.Fatal(err)
		}
		return s, func(t *testing.T) {
			c, err := pgx.Connect(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(context.Background())
			if tag, err := c.Exec(context.Background(), forgeSQL); err != nil || tag.RowsAffected() != 1 {
				t.Fatalf("forged: %v %v", tag, err)
			}
		}
	},
}

// A decision written into the database around tollgate (the SQL a tool
// with access to the store would run) is refused on resume: the call does
// not run, and its record says, in the runtime's name, that the decision
// was not made through tollgate. A decision made through the store still
// resumes and runs the call.
func TestForgedDecisionIsNotRun(t *testing.T) {
	key := make([]byte, 32)
	key[0] = 7
	for name, open := range sealedBackends {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			transfer := &testkit.Counter{Name: "transfer_funds"}
			call := []model.FuncCall{testkit.Call("c1", "transfer_funds", map[string]int{"amount": 5})}
			b := &testBuilder{m: testkit.Script(call, call), tools: agent.ToolList{transfer}}
			s, forge := open(t, key)
			defer s.Close()
			h := newHost(t, s, b, "host-a", time.Minute)
			start := func(id string) string {
				res, err := h.Start(ctx, runs.StartRequest{RunID: id, Owner: tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}, Config: testConfig(t), Prompt: "pay"})
				if err != nil || res.Status != agent.StatusPending {
					t.Fatalf("start %s: %+v %v", id, res, err)
				}
				return res.Pending[0].ID
			}
			start("run_forged")
			forge(t)
			res, err := h.Resume(ctx, runs.ResumeRequest{RunID: "run_forged"})
			if err != nil {
				t.Fatalf("resume: %v", err)
			}
			if transfer.Count() != 0 {
				t.Fatal("the forged approval ran the call")
			}
			d := res.ToolCalls[0].Decision
			if d.Outcome != gate.OutcomeDeclined || d.By.Kind != tool.PrincipalRuntime || d.Reason != unverifiedReason {
				t.Fatalf("decision %+v", d)
			}

			req := start("run_real")
			if _, err := h.Answer(ctx, "run_real", req, store.Answer{Approve: true, By: tool.PrincipalOf("person:bob")}); err != nil {
				t.Fatal(err)
			}
			res, err = h.Resume(ctx, runs.ResumeRequest{RunID: "run_real"})
			if err != nil || transfer.Count() != 1 {
				t.Fatalf("resume of a real decision: ran %d times, %v", transfer.Count(), err)
			}
			if by := res.ToolCalls[0].Decision.By.String(); by != "person:bob" {
				t.Errorf("decided by %q", by)
			}
		})
	}
}

// The durable engine refuses a forged decision too: while the run waits,
// the approval is set approved with SQL; the run goes on with the call
// declined in the runtime's name, and the tool never runs.
func TestDurableForgedDecisionIsNotRun(t *testing.T) {
	key := make([]byte, 32)
	key[1] = 9
	for name, open := range sealedBackends {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st, forge := open(t, key)
			defer st.Close()
			transfer := &testkit.Counter{Name: "transfer_funds"}
			call := []model.FuncCall{testkit.Call("c1", "transfer_funds", map[string]int{"amount": 5})}
			b := &testBuilder{m: testkit.Script(call), tools: agent.ToolList{transfer}}
			d, err := runcore.NewDurable(st, b, nil)
			if err != nil {
				t.Fatal(err)
			}
			eng := newFakeEngine()
			forged := false
			eng.onWait = func(string) {
				if !forged {
					forge(t)
					forged = true
				}
			}
			input := runcore.DurableRun{RunID: "run_d", Config: runs.RunConfig{Version: runcore.ConfigVersion, AgentConfig: runs.AgentConfig{Workdir: t.TempDir()}}, Prompt: "move 5"}
			if err := runcore.PrepareDurable(ctx, st, &input); err != nil {
				t.Fatal(err)
			}
			eng.execution(-1)
			res, err := d.Drive(ctx, eng, input)
			if err != nil || res == nil {
				t.Fatalf("drive: %v %v", res, err)
			}
			if !forged || transfer.Count() != 0 {
				t.Fatalf("forged %v; the tool ran %d times", forged, transfer.Count())
			}
			dec := res.ToolCalls[0].Decision
			if dec.Outcome != gate.OutcomeDeclined || dec.By.Kind != tool.PrincipalRuntime || dec.Reason != unverifiedReason {
				t.Fatalf("decision %+v", dec)
			}
		})
	}
}

// unverifiedReason is the reason of the answer an unverified decision
// gives its request, as the store words it.
var unverifiedReason = func() string {
	ans, _ := (store.Approval{Status: store.StatusApproved, Unverified: true}).Answer()
	return ans.Reason
}()
