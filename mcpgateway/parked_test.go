package mcpgateway_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/mcpgateway"
	"github.com/tollgate-dev/tollgate/tool"
)

// A client of protocol 2026-07-28 that declared URL-mode elicitation
// takes a server's requests only in a call's result: the call that waits
// for the approvals page ends with an input-required result holding the
// page's link in URL mode, the client's SDK opens it (its elicitation
// handler) and calls again with the state, and that call waits for the
// person's answer and runs once. What the client answered decides
// nothing.
func TestURLElicitationInTheResultOfProtocol20260728(t *testing.T) {
	const link = "http://127.0.0.1:7777/#run=mc_1"
	elicited := make(chan string, 4)
	copts := &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			elicited <- req.Params.Mode + " " + req.Params.URL
			return &mcp.ElicitResult{Action: "decline"}, nil // the page decides, not this
		},
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
	}
	in := &fakeInbox{answer: func(ctx context.Context, p *gate.Pending, posted func(string)) (*tool.Answer, error) {
		posted(link)
		select {
		case got := <-elicited:
			if got != "url "+link {
				t.Errorf("elicitation %q, want the link in URL mode", got)
			}
		case <-time.After(30 * time.Second):
			return &tool.Answer{ID: p.Request.ID, OK: false, By: "alice", Reason: "the client never saw the link"}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &tool.Answer{ID: p.Request.ID, OK: true, By: "alice"}, nil
	}}
	f := setup(t, nil, &mcpgateway.Options{Inbox: in}, copts)
	if v := f.client.InitializeResult(); v != nil && v.ProtocolVersion < "2026-07-28" {
		t.Fatalf("the client speaks %s, want 2026-07-28", v.ProtocolVersion)
	}
	res, err := f.client.CallTool(t.Context(), &mcp.CallToolParams{Name: "push"})
	if err != nil || res.IsError {
		t.Fatalf("push: %v %q", err, text(res))
	}
	if n := f.up.count("push"); n != 1 {
		t.Errorf("push ran %d times, want once", n)
	}
	if rec := f.records.last(t, "mcp__up__push"); !rec.Ran || rec.Decision.By.String() != "person:alice" {
		t.Errorf("record: ran %v, by %s; want run, approved by alice", rec.Ran, rec.Decision.By)
	}
}

// A retry with a parked ask's state but other arguments is refused, and
// the ask withdrawn.
func TestParkedAskRetriedWithOtherArguments(t *testing.T) {
	withdrawn := make(chan struct{})
	in := &fakeInbox{answer: func(ctx context.Context, p *gate.Pending, posted func(string)) (*tool.Answer, error) {
		posted("http://127.0.0.1:7777/#run=mc_1")
		<-ctx.Done()
		close(withdrawn)
		return nil, ctx.Err()
	}}
	copts := &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
		Capabilities:   &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	}
	f := setup(t, nil, &mcpgateway.Options{Inbox: in}, copts)
	res, err := f.client.CallTool(t.Context(), &mcp.CallToolParams{Name: "push", Arguments: map[string]any{}})
	if err != nil || !res.NeedsInput() || res.RequestState == "" {
		t.Fatalf("push: %v %+v, want an input-required result", err, res)
	}
	again, err := f.client.CallTool(t.Context(), &mcp.CallToolParams{Name: "push", Arguments: map[string]any{"x": 1}, RequestState: res.RequestState})
	if err != nil || !again.IsError {
		t.Fatalf("retry with other arguments: %v %q, want refused", err, text(again))
	}
	<-withdrawn
	if n := f.up.count("push"); n != 0 {
		t.Errorf("push ran %d times", n)
	}
}

// parkingClient are the options of a client of protocol 2026-07-28 that
// declared URL-mode elicitation and retries no call itself (the test
// retries, with the state).
func parkingClient() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
		Capabilities:   &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	}
}

// parkingInbox returns an inbox whose asks post the page's link, then
// wait until approve is closed (alice approves) or they are withdrawn
// (their context ends), which they report on withdrawn with their
// request's ID.
func parkingInbox(approve <-chan struct{}, withdrawn chan<- string) *fakeInbox {
	return &fakeInbox{answer: func(ctx context.Context, p *gate.Pending, posted func(string)) (*tool.Answer, error) {
		posted("http://127.0.0.1:7777/#run=mc_1")
		select {
		case <-approve:
			return &tool.Answer{ID: p.Request.ID, OK: true, By: "alice"}, nil
		case <-ctx.Done():
			withdrawn <- p.Request.ID
			return nil, ctx.Err()
		}
	}}
}

// park calls push on cs and returns its input-required result.
func park(t *testing.T, cs *mcp.ClientSession) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "push", Arguments: map[string]any{}})
	if err != nil || !res.NeedsInput() || res.RequestState == "" {
		t.Fatalf("push: %v %+v, want an input-required result", err, res)
	}
	return res
}

// askID returns the ID of the request res's input request links to.
func askID(res *mcp.CallToolResult) string {
	return res.InputRequests["approval"].(*mcp.ElicitParams).ElicitationID
}

// retryRefused calls push on cs again with state, and fails the test
// unless the call is refused without running.
func retryRefused(t *testing.T, f *fixture, cs *mcp.ClientSession, state, why string) {
	t.Helper()
	ran := f.up.count("push")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // refused at once; without the refusal, the retry would wait for the ask
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "push", Arguments: map[string]any{}, RequestState: state})
	if err != nil || !res.IsError {
		t.Fatalf("a retry %s: %v %+v, want refused", why, err, res)
	}
	if n := f.up.count("push"); n != ran {
		t.Fatalf("push ran %d times after a retry %s", n-ran, why)
	}
	if rec := f.records.last(t, "mcp__up__push"); rec.Decision.Outcome != gate.OutcomeDenied || rec.Decision.By != approval.Runtime {
		t.Fatalf("a retry %s recorded %s by %s, want denied by the runtime", why, rec.Decision.Outcome, rec.Decision.By)
	}
}

// A parked ask is taken up only by its own principal: a retry with its
// state from another principal's session is refused, approved as the ask
// is.
func TestParkedAskRetriedByAnotherPrincipal(t *testing.T) {
	approve := make(chan struct{})
	var mu sync.Mutex
	principals := map[*mcp.ServerSession]tool.Principal{} // each session its own
	opts := &mcpgateway.Options{Inbox: parkingInbox(approve, make(chan string, 1))}
	opts.Principal = func(req *mcp.CallToolRequest) tool.Principal {
		mu.Lock()
		defer mu.Unlock()
		if _, ok := principals[req.Session]; !ok {
			principals[req.Session] = tool.Principal{Kind: tool.PrincipalPerson, Name: fmt.Sprint("agent", len(principals))}
		}
		return principals[req.Session]
	}
	f := setup(t, nil, opts, parkingClient())
	res := park(t, f.client)
	close(approve)
	retryRefused(t, f, connect(t, f.gw, parkingClient()), res.RequestState, "by another principal")
}

// A parked ask's state is taken up once: the retry that waited for the
// approval runs the call, and the same state again is refused.
func TestParkedAskTakenUpOnce(t *testing.T) {
	approve := make(chan struct{})
	f := setup(t, nil, &mcpgateway.Options{Inbox: parkingInbox(approve, make(chan string, 1))}, parkingClient())
	res := park(t, f.client)
	close(approve)
	again, err := f.client.CallTool(t.Context(), &mcp.CallToolParams{Name: "push", Arguments: map[string]any{}, RequestState: res.RequestState})
	if err != nil || again.IsError || f.up.count("push") != 1 {
		t.Fatalf("the retry of an approved ask: %v %q, push ran %d times; want run once", err, text(again), f.up.count("push"))
	}
	retryRefused(t, f, f.client, res.RequestState, "with a state already taken up")
}

// A parked ask's expiry withdraws it: its retry is refused at once, and
// the ask withdrawn; an ask that expired unretried is withdrawn once the
// next ask parks.
func TestParkedAskExpired(t *testing.T) {
	const ttl = 50 * time.Millisecond
	withdrawn := make(chan string, 3)
	opts := &mcpgateway.Options{Inbox: parkingInbox(nil, withdrawn)}
	opts.Gate.ApprovalTTL = ttl
	f := setup(t, nil, opts, parkingClient())
	expired := func() *mcp.CallToolResult {
		res := park(t, f.client)
		time.Sleep(ttl) // its request, made before park returned, expires ttl after it was made
		return res
	}
	retried := expired()
	retryRefused(t, f, f.client, retried.RequestState, "after its ask expired")
	if id := <-withdrawn; id != askID(retried) {
		t.Fatalf("withdrew %s, want the retried %s", id, askID(retried))
	}
	unretried := askID(expired())
	park(t, f.client)
	select {
	case id := <-withdrawn:
		if id != unretried {
			t.Fatalf("withdrew %s, want the expired %s", id, unretried)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the expired ask %s was not withdrawn when the next one parked", unretried)
	}
}
