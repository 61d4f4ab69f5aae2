package mcpgateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
