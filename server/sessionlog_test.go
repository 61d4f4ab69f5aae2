package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/claudegate"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// eventReads counts the events a store returns for queries of one run.
type eventReads struct {
	store.Store
	n atomic.Int64
}

func (c *eventReads) ListEvents(ctx context.Context, f store.EventFilter) ([]store.Event, error) {
	evs, err := c.Store.ListEvents(ctx, f)
	if f.RunID != "" && !f.AllTenants {
		c.n.Add(int64(len(evs)))
	}
	return evs, err
}

// An ask of a long session, and its card on the page, read the session's
// log from where they last read it, not from its start: the second ask of
// a session with 3,000 earlier calls reads a few events, and its card
// still shows the latest earlier decisions on the tool.
func TestSessionAskReadsTheLogsEnd(t *testing.T) {
	const earlier = 3000
	cs := &eventReads{Store: memory.New(nil)}
	f := claudeFixtureOn(t, cs)
	f.do("POST", "/v1/hooks/claude-code", agentToken, hookEvent("PreToolUse", "Bash", `{"command":"env rm -rf /srv"}`, "t0"), nil)
	var page serverapi.RunPage
	f.do("GET", "/v1/runs", aliceToken, nil, &page)
	if len(page.Runs) != 1 {
		t.Fatalf("runs: %+v", page.Runs)
	}
	run := page.Runs[0].ID
	evs := make([]store.Event, earlier)
	for i := range evs {
		evs[i] = store.Event{Tenant: "acme", RunID: run, Type: "tool.finished",
			Data: []byte(fmt.Sprintf(`{"record":{"id":"e%[1]d","name":"write","args":{"path":"/work/ws/n%[1]d.txt"},"decision":{"outcome":"allowed"}}}`, i))}
	}
	var after int64
	for i := 0; i < earlier; i += store.MaxLimit {
		seqs, err := cs.AppendEvents(t.Context(), evs[i:i+store.MaxLimit]...)
		if err != nil {
			t.Fatal(err)
		}
		after = seqs[len(seqs)-1]
	}
	ask := func(id string) serverapi.ApprovalView {
		got := make(chan claudegate.Output, 1)
		go func() {
			var out claudegate.Output
			f.do("POST", "/v1/hooks/claude-code?wait=1m", agentToken, hookEvent("PreToolUse", "Write", `{"file_path":"/work/ws/notes.txt","content":"a"}`, id), &out)
			got <- out
		}()
		a := pendingOf(t, cs.Store, run, &after)
		var v serverapi.ApprovalView
		if code := f.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.Digest}, &v); code != http.StatusOK {
			t.Fatalf("deciding: %d", code)
		}
		if out := <-got; permission(out) != "allow: approved by person:alice" {
			t.Fatalf("the hook's answer: %s", permission(out))
		}
		return v
	}
	ask("w1") // the server reads the session's log once
	cs.n.Store(0)
	v := ask("w2")
	if n := cs.n.Load(); n > 200 {
		t.Errorf("the second ask read %d events of the session's run; want a few, not its %d earlier ones", n, earlier)
	}
	if v.Context == nil || len(v.Context.Earlier) != 20 {
		t.Fatalf("the card's earlier decisions: %+v", v.Context)
	}
	for i, want := range map[int]string{0: "/work/ws/n2980.txt", 19: "/work/ws/n2999.txt"} {
		var args struct{ Path string }
		got := v.Context.Earlier[i]
		if err := json.Unmarshal(got.Args, &args); err != nil || got.Outcome != "allowed" || args.Path != want {
			t.Errorf("earlier decision %d: %s %s, want allowed %s", i, got.Outcome, got.Args, want)
		}
	}
}
