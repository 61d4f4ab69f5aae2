package mcpgateway_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/mcpgateway"
	"github.com/tollgate-dev/tollgate/tool"
)

// pendingCap is the most calls of one client session that may wait for a
// person at once (docs/gateway.md).
const pendingCap = 32

// callsIn starts n calls of name on cs at once and returns their results'
// channel.
func callsIn(ctx context.Context, cs *mcp.ClientSession, name string, n int) <-chan *mcp.CallToolResult {
	out := make(chan *mcp.CallToolResult, n)
	for range n {
		go func() { out <- callIn(ctx, cs, name) }()
	}
	return out
}

// A client session may have at most pendingCap calls waiting on the
// approvals page: one more is refused at once with an error saying so,
// never posted, and recorded as the runtime's refusal; another session
// is still asked.
func TestPendingApprovalsPerSessionAreCapped(t *testing.T) {
	asked := make(chan struct{}, 2*pendingCap)
	release := make(chan struct{})
	in := &fakeInbox{answer: func(ctx context.Context, p *gate.Pending, _ func(string)) (*tool.Answer, error) {
		asked <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return &tool.Answer{ID: p.Request.ID, OK: false, By: "alice", Reason: "not now"}, nil
	}}
	f := setup(t, nil, &mcpgateway.Options{Inbox: in}, nil)
	waiting := callsIn(t.Context(), f.client, "push", pendingCap)
	for range pendingCap {
		<-asked
	}
	res := overCap(t, f.client, asked)
	if !res.IsError || !strings.Contains(text(res), "32 calls of this client session wait") {
		t.Errorf("call %d of one session: %q (error %v), want refused as too many waiting", pendingCap+1, text(res), res.IsError)
	}
	if rec := f.records.last(t, "mcp__up__push"); rec.Ran || rec.Decision.By != approval.Runtime || rec.Decision.Outcome != gate.OutcomeDenied {
		t.Errorf("record: %s by %s, want denied by the runtime", rec.Decision.Outcome, rec.Decision.By)
	}
	other := connect(t, f.gw, nil)
	otherDone := callsIn(t.Context(), other, "push", 1)
	<-asked // another session is asked
	close(release)
	for range pendingCap {
		if res := <-waiting; !strings.Contains(text(res), "not now") {
			t.Errorf("a waiting call: %q, want the person's denial", text(res))
		}
	}
	<-otherDone
	if n := len(in.sessions); n != pendingCap+1 {
		t.Errorf("the inbox was asked %d times, want %d", n, pendingCap+1)
	}
	// Once they are answered, the session may ask again.
	release2 := callsIn(t.Context(), f.client, "push", 1)
	<-asked
	<-release2
}

// The same cap holds for calls asked through the client's elicitation:
// the answers no one gave yet count.
func TestPendingElicitationsPerSessionAreCapped(t *testing.T) {
	asked := make(chan struct{}, 2*pendingCap)
	release := make(chan struct{})
	var once sync.Once
	copts := &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return &mcp.ElicitResult{Action: "decline"}, nil
	}}
	f := setup(t, nil, &mcpgateway.Options{Elicit: true, Answerer: "bob"}, copts)
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	waiting := callsIn(t.Context(), f.client, "push", pendingCap)
	for range pendingCap {
		<-asked
	}
	res := overCap(t, f.client, asked)
	if !res.IsError || !strings.Contains(text(res), "32 calls of this client session wait") {
		t.Errorf("call %d of one session: %q (error %v), want refused as too many waiting", pendingCap+1, text(res), res.IsError)
	}
	once.Do(func() { close(release) })
	for range pendingCap {
		if res := <-waiting; !res.IsError {
			t.Errorf("a declined call: %q, want an error", text(res))
		}
	}
	if n := f.up.count("push"); n != 0 {
		t.Errorf("push ran %d times", n)
	}
}

// overCap makes one more call of push on cs and returns its result; the
// test fails at once if the call is asked about instead (asked hears it).
func overCap(t *testing.T, cs *mcp.ClientSession, asked <-chan struct{}) *mcp.CallToolResult {
	t.Helper()
	done := callsIn(t.Context(), cs, "push", 1)
	select {
	case res := <-done:
		return res
	case <-asked:
		t.Fatalf("call %d of one session was asked about, want refused", pendingCap+1)
		return nil
	}
}
