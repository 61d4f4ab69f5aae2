package mcpgateway

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A log message an upstream sends with no call in flight (one that comes
// just after its call's answer) goes to the session of the call that
// ended last only when no other session's call was in flight to that
// upstream meanwhile: after calls of two sessions overlapped, nothing
// tells whose it is, and it goes to no one.
func TestRelayLastSessionOnlyWhenAlone(t *testing.T) {
	r := &Relay{}
	a, b := &mcp.ServerSession{}, &mcp.ServerSession{}
	ctx := context.Background()

	endA := r.begin("up", ctx, a)
	endA()
	if got := r.lastSession("up"); got != a {
		t.Errorf("after A's lone call: last %p, want A %p", got, a)
	}

	endA = r.begin("up", ctx, a)
	endB := r.begin("up", ctx, b)
	endB()
	if got := r.lastSession("up"); got != nil {
		t.Errorf("after B's call that overlapped A's: last %p, want none", got)
	}
	endA()
	if got := r.lastSession("up"); got != nil {
		t.Errorf("after A's call that overlapped B's: last %p, want none", got)
	}

	// Two calls of one session are one session's.
	endB = r.begin("up", ctx, b)
	endB2 := r.begin("up", ctx, b)
	endB()
	endB2()
	if got := r.lastSession("up"); got != b {
		t.Errorf("after B's two calls: last %p, want B %p", got, b)
	}
}

// Sessions A and B overlap on one upstream and B's call ends: what the
// upstream sends while A's call goes on may be B's, come late (a log
// queued before B's answer, an elicitation of B's cancelled call), so it
// goes to no one until A's call ends; A's next call, alone, is A's.
func TestRelayAfterAnOverlapEndsRoutesNothing(t *testing.T) {
	r := &Relay{}
	a, b := &mcp.ServerSession{}, &mcp.ServerSession{}
	ctx := context.Background()

	endA := r.begin("up", ctx, a)
	endB := r.begin("up", ctx, b)
	endB()
	if f, several := r.current("up"); f != nil || !several {
		t.Errorf("after B's call that overlapped A's ended: current %v (several %v), want no one", f, several)
	}
	endA()
	endA = r.begin("up", ctx, a)
	defer endA()
	if f, several := r.current("up"); f == nil || f.session != a || several {
		t.Errorf("A's next call, alone: current %v (several %v), want A's", f, several)
	}
}
