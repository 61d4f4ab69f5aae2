package runs_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/sqlite"
	"github.com/tollgate-dev/tollgate/tool"
)

// A model's tool call whose arguments nest 1,500 deep (valid JSON, which
// encoding/json reads to 10,000) went into the run's transcript and
// records as sent; the store refuses to read back a document nested more
// than 1,000 deep, so the run could no longer be read, resumed or
// cancelled, and every listing of its tenant's runs failed. Such
// arguments are now kept as the model's text (a JSON string): the call is
// invalid, the model is told, and the run and its listing read back.
func TestDeeplyNestedArgumentsDoNotPoisonTheStore(t *testing.T) {
	ctx := context.Background()
	deep := json.RawMessage(`{"amount":5,"x":` + strings.Repeat("[", 1500) + strings.Repeat("]", 1500) + `}`)
	transfer := &testkit.Counter{Name: "transfer_funds"}
	b := &testBuilder{m: testkit.Script([]model.FuncCall{testkit.Call("c1", "transfer_funds", deep)}), tools: agent.ToolList{transfer}}
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "tollgate.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := newHost(t, s, b, "host-a", time.Minute)
	res, err := h.Start(ctx, runs.StartRequest{RunID: "run_1", Tenant: "acme", Owner: tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}, Config: testConfig(t), Prompt: "pay"})
	if err != nil || res.Status != agent.StatusDone {
		t.Fatalf("start: %v", err)
	}
	if transfer.Count() != 0 {
		t.Fatal("the call ran")
	}
	if rec := res.ToolCalls[0]; rec.Decision.Outcome != gate.OutcomeInvalid {
		t.Fatalf("the call was %s, want invalid", rec.Decision.Outcome)
	}
	if run, err := s.GetRun(ctx, "run_1"); err != nil || run.Status != store.RunDone {
		t.Fatalf("the run reads back as %+v, %v", run.Status, err)
	}
	if page, err := s.ListRuns(ctx, store.RunFilter{Tenant: "acme"}); err != nil || len(page.Runs) != 1 {
		t.Fatalf("the tenant's runs list as %d, %v", len(page.Runs), err)
	}
}
