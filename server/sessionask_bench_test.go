package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/claudegate"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/store"
)

// BenchmarkSessionAsk is one ask of a Claude Code session through the
// http hook: PreToolUse asks, the approval is found and approved on the
// API (whose view shows the session's earlier decisions), and the hook
// answers; in a session whose run has 10 and 5,000 earlier events. The
// cost of an ask should not grow with the session's log.
func BenchmarkSessionAsk(b *testing.B) {
	for _, n := range []int{10, 5000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			f := claudeFixture(b)
			ctx := context.Background()
			f.do("POST", "/v1/hooks/claude-code", agentToken, hookEvent("PreToolUse", "Bash", `{"command":"env rm -rf /srv"}`, "t0"), nil)
			var page serverapi.RunPage
			f.do("GET", "/v1/runs", aliceToken, nil, &page)
			if len(page.Runs) != 1 {
				b.Fatalf("runs: %+v", page.Runs)
			}
			run := page.Runs[0].ID
			earlier := make([]store.Event, n)
			for i := range earlier {
				rec, _ := json.Marshal(map[string]any{"record": map[string]any{"id": fmt.Sprintf("e%d", i), "name": "bash", "args": map[string]string{"command": "ls"}, "decision": map[string]string{"outcome": "allowed"}}})
				earlier[i] = store.Event{Tenant: "acme", RunID: run, Type: "tool.finished", Data: rec}
			}
			var after int64
			for i := 0; i < n; i += store.MaxLimit {
				seqs, err := f.store.AppendEvents(ctx, earlier[i:min(i+store.MaxLimit, n)]...)
				if err != nil {
					b.Fatal(err)
				}
				after = seqs[len(seqs)-1]
			}
			i := 0
			for b.Loop() {
				i++
				got := make(chan claudegate.Output, 1)
				ev := hookEvent("PreToolUse", "Write", `{"file_path":"/work/ws/notes.txt","content":"a"}`, fmt.Sprintf("w%d", i))
				go func() {
					var out claudegate.Output
					f.do("POST", "/v1/hooks/claude-code?wait=1m", agentToken, ev, &out)
					got <- out
				}()
				a := pendingOf(b, f.store, run, &after)
				if code := f.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.Digest}, nil); code != http.StatusOK {
					b.Fatalf("deciding: %d", code)
				}
				if out := <-got; permission(out) != "allow: approved by person:alice" {
					b.Fatalf("the hook's answer: %s", permission(out))
				}
			}
		})
	}
}

// pendingOf waits for the pending approval of run, without polling: the
// store wakes it at each new event of the run after *after, which it
// advances.
func pendingOf(b testing.TB, st store.Store, run string, after *int64) store.Approval {
	b.Helper()
	ctx := context.Background()
	for {
		p, err := st.ListApprovals(ctx, store.ApprovalFilter{Tenant: "acme", RunID: run, Status: store.StatusPending})
		if err != nil {
			b.Fatal(err)
		}
		if len(p.Approvals) > 0 {
			return p.Approvals[0]
		}
		f := store.EventFilter{Tenant: "acme", RunID: run, AfterSeq: *after}
		if err := st.WaitEvents(ctx, f); err != nil {
			b.Fatal(err)
		}
		f.Limit = store.MaxLimit
		evs, err := st.ListEvents(ctx, f)
		if err != nil {
			b.Fatal(err)
		}
		for _, ev := range evs {
			*after = ev.Seq
		}
	}
}
