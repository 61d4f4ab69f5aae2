package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/store"

	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/server"
)

// twoTransfers says what it will do and asks for transfer {"amount": 5},
// then for {"amount": 3}, then answers "done".
func twoTransfers() model.Model {
	return model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		switch testkit.Turn(req) {
		case 0:
			return model.Reply{Content: "I'll move five first.", ToolCalls: []model.FuncCall{testkit.Call("c1", "transfer", map[string]int{"amount": 5})}}, nil
		case 1:
			return model.Reply{Content: "Now <b>three</b> more.", ToolCalls: []model.FuncCall{testkit.Call("c2", "transfer", map[string]int{"amount": 3})}}, nil
		}
		return model.Reply{Content: "done"}, nil
	})
}

// An approval shows its run's context: the source, the prompt, the
// workspace, what the model said it was doing in the turn that asked, and
// the decisions already made on the same tool in the run.
func TestApprovalContext(t *testing.T) {
	f := newFixture(t, nil, twoTransfers(), nil)
	id := f.startRun()
	a := f.pending(id)
	c := a.Context
	if c == nil || c.Source != serverapi.SourceAgent || c.Prompt != "pay" || c.Intent != "I'll move five first." || c.Workspace == "" || len(c.Earlier) != 0 {
		t.Fatalf("first approval's context: %+v", c)
	}
	var got serverapi.ApprovalView
	if code := f.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, &got); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	b := f.nextPending(id, a.ID)
	c = b.Context
	if c == nil || c.Intent != "Now <b>three</b> more." || len(c.Earlier) != 1 ||
		c.Earlier[0].Outcome != "approved" || c.Earlier[0].By != "person:alice" || compact(t, c.Earlier[0].Args) != `{"amount":5}` {
		t.Fatalf("second approval's context: %+v", c)
	}
	// The same through GET /v1/approvals/{id}, and nothing of another tenant's.
	if code := f.do("GET", "/v1/approvals/"+b.ID, vicToken, nil, &got); code != http.StatusOK || got.Context == nil || got.Context.Intent != c.Intent {
		t.Fatalf("GET approval: %d %+v", code, got.Context)
	}
	if code := f.do("GET", "/v1/approvals/"+b.ID, bobToken, nil, nil); code != http.StatusNotFound {
		t.Fatalf("another tenant's GET: %d", code)
	}
}

func compact(t *testing.T, b json.RawMessage) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return buf.String()
}

// nextPending returns the pending approval of run id other than prev,
// following the store's events until there is one.
func (f *fixture) nextPending(id, prev string) serverapi.ApprovalView {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var after int64
	for {
		if evs, _ := f.store.ListEvents(ctx, store.EventFilter{AllTenants: true, RunID: id, AfterSeq: after}); len(evs) > 0 {
			after = evs[len(evs)-1].Seq
		}
		var page serverapi.ApprovalPage
		f.do("GET", "/v1/approvals?status=pending&run="+id, aliceToken, nil, &page)
		for _, a := range page.Approvals {
			if a.ID != prev {
				return a
			}
		}
		wctx, wcancel := context.WithTimeout(ctx, 50*time.Millisecond)
		_ = f.store.WaitEvents(wctx, store.EventFilter{AllTenants: true, RunID: id, AfterSeq: after})
		wcancel()
		if ctx.Err() != nil {
			f.t.Fatalf("run %s: no approval after %s", id, prev)
		}
	}
}

// GET /v1/runs?order=newest lists the tenant's runs newest first, and
// names each run's source; another order is 400.
func TestListRunsNewestFirst(t *testing.T) {
	f := newFixture(t, nil, nil, nil)
	first, second := f.startRun(), f.startRun()
	var page serverapi.RunPage
	if code := f.do("GET", "/v1/runs?order=newest", vicToken, nil, &page); code != http.StatusOK || len(page.Runs) != 2 ||
		page.Runs[0].ID != second || page.Runs[1].ID != first || page.Runs[0].Source != serverapi.SourceAgent {
		t.Fatalf("newest first: %d %+v", code, page)
	}
	if code := f.do("GET", "/v1/runs?order=newest", bobToken, nil, &page); code != http.StatusOK || len(page.Runs) != 0 {
		t.Fatalf("another tenant's runs: %d %+v", code, page)
	}
	if code := f.do("GET", "/v1/runs?order=random", vicToken, nil, nil); code != http.StatusBadRequest {
		t.Fatalf("order=random: %d", code)
	}
}

// An approval of a run with a policy file says where the rule that asked
// is written, and takes the risk the file declares over the hints'; a
// file changed on disk is read again.
func TestApprovalRuleAtAndDeclaredRisk(t *testing.T) {
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	write := func(src string) {
		t.Helper()
		if err := os.WriteFile(pol, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("risks:\n  - tool: transfer\n    risk: network\nrules:\n  - id: ask-transfer\n    tool: transfer\n    decision: ask\n    reason: money moves\n")
	cfg := payerConfig(t)
	cfg.PolicyFile = pol
	f := newFixture(t, nil, nil, &server.Options{Agents: map[string]runs.RunConfig{"payer": cfg}})
	a := f.pending(f.startRun())
	if a.RuleAt != "policy.yaml:5:5" || a.Risk != approval.RiskNetwork || a.RiskFrom != "declared:transfer" {
		t.Fatalf("rule at %q, risk %q from %q", a.RuleAt, a.Risk, a.RiskFrom)
	}
	// The decision, in the audit, links to the rule's line.
	if code := f.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, nil); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	f.waitRun(a.RunID, store.RunDone)
	var page serverapi.AuditPage
	if code := f.do("GET", "/v1/audit", vicToken, nil, &page); code != http.StatusOK || len(page.Entries) != 1 || page.Entries[0].RuleAt != "policy.yaml:5:5" {
		t.Fatalf("audit: %d %+v", code, page)
	}
	write("rules:\n  - id: other\n    tool: x\n    decision: deny\n    reason: r\n\n  - id: ask-transfer\n    tool: transfer\n    decision: ask\n    reason: money moves\n")
	var got serverapi.ApprovalView
	if code := f.do("GET", "/v1/approvals/"+a.ID, vicToken, nil, &got); code != http.StatusOK || got.RuleAt != "policy.yaml:7:5" || got.RiskFrom != "hints" {
		t.Fatalf("after the file changed: %d rule at %q, risk from %q", code, got.RuleAt, got.RiskFrom)
	}
}
