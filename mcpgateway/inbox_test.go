package mcpgateway_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/mcpgateway"
	"github.com/tollgate-dev/tollgate/tool"
)

// fakeInbox answers every ask with answer, and keeps the sessions it was
// asked for and the records it was handed.
type fakeInbox struct {
	answer func(ctx context.Context, p *gate.Pending, posted func(string)) (*tool.Answer, error)

	ended chan mcpgateway.Session

	mu       sync.Mutex
	sessions []mcpgateway.Session
	records  []gate.Record
}

func (f *fakeInbox) Ask(ctx context.Context, s mcpgateway.Session, _ gate.Call, p *gate.Pending, posted func(string)) (*tool.Answer, error) {
	f.mu.Lock()
	f.sessions = append(f.sessions, s)
	f.mu.Unlock()
	return f.answer(ctx, p, posted)
}

func (f *fakeInbox) End(_ context.Context, s mcpgateway.Session) {
	if f.ended != nil {
		f.ended <- s
	}
}

func (f *fakeInbox) Record(_ context.Context, s mcpgateway.Session, rec gate.Record) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.records = append(f.records, rec)
}

// A call the policy asks about waits for the inbox's answer: approved, it
// runs once, recorded as the person's, and the inbox sees the session (the
// client's name and version) and its records; declined, unanswered or
// with an inbox that fails, it does not run and the client is told why.
func TestInboxDecidesAskedCalls(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ans     *tool.Answer
		err     error
		ran     bool
		outcome gate.Outcome
		says    string
	}{
		{"approved", &tool.Answer{OK: true, By: "alice"}, nil, true, gate.OutcomeApproved, "pushed"},
		{"denied", &tool.Answer{OK: false, By: "alice", Reason: "not on a Friday"}, nil, false, gate.OutcomeDeclined, "not on a Friday"},
		{"unanswered", nil, nil, false, gate.OutcomeExpired, "no one answered"},
		{"unreachable", nil, errors.New("connection refused"), false, gate.OutcomeDenied, "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &fakeInbox{answer: func(_ context.Context, p *gate.Pending, _ func(string)) (*tool.Answer, error) {
				if tc.ans == nil {
					return nil, tc.err
				}
				a := *tc.ans
				a.ID = p.Request.ID
				return &a, nil
			}}
			f := setup(t, nil, &mcpgateway.Options{Inbox: in, Elicit: true}, nil)
			res := call(t, f.client, "push", nil)
			if got := f.up.count("push") == 1; got != tc.ran || res.IsError == tc.ran || !strings.Contains(text(res), tc.says) {
				t.Errorf("ran %v, result %q (error %v); want ran %v saying %q", got, text(res), res.IsError, tc.ran, tc.says)
			}
			rec := f.records.last(t, "mcp__up__push")
			if rec.Decision.Outcome != tc.outcome {
				t.Errorf("outcome %s, want %s", rec.Decision.Outcome, tc.outcome)
			}
			if tc.ans != nil && rec.Decision.By.String() != "person:alice" {
				t.Errorf("decided by %s, want person:alice", rec.Decision.By)
			}
			in.mu.Lock()
			defer in.mu.Unlock()
			if len(in.sessions) != 1 || in.sessions[0].Name != "client" || in.sessions[0].Version != "1" || in.sessions[0].ID == "" {
				t.Errorf("sessions asked for: %+v", in.sessions)
			}
			if len(in.records) != 1 || in.records[0].Name != "mcp__up__push" || in.records[0].Decision.Outcome != tc.outcome {
				t.Errorf("the inbox's records: %+v", in.records)
			}
		})
	}
}

// While a call waits, the client that gave a progress token gets progress
// notifications, the first with the page's link, and a client that takes
// URL-mode elicitation is sent the link; neither answers the call.
func TestInboxKeepsTheClientWaiting(t *testing.T) {
	const link = "http://127.0.0.1:7777/#run=mc_1"
	progress := make(chan string, 100)
	elicited := make(chan string, 1)
	copts := &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			select {
			case progress <- req.Params.Message:
			default:
			}
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			elicited <- req.Params.Mode + " " + req.Params.URL
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
	}
	in := &fakeInbox{answer: func(ctx context.Context, p *gate.Pending, posted func(string)) (*tool.Answer, error) {
		posted(link)
		var linked, ticks int
		for linked == 0 || ticks < 2 {
			select {
			case m := <-progress:
				if strings.Contains(m, link) {
					linked++
				}
				ticks++
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		select {
		case got := <-elicited:
			if got != "url "+link {
				t.Errorf("elicitation %q, want the link in URL mode", got)
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &tool.Answer{ID: p.Request.ID, OK: true, By: "alice"}, nil
	}}
	f := setup(t, nil, &mcpgateway.Options{Inbox: in, KeepAlive: 10 * time.Millisecond}, nil)
	// A client of protocol 2025-11-25: one of 2026-07-28 takes no request
	// from the server during a call.
	st, ct := mcp.NewInMemoryTransports()
	ss, err := f.gw.Server().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, copts).Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	params := &mcp.CallToolParams{Name: "push"}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(t.Context(), params)
	if err != nil || res.IsError || f.up.count("push") != 1 {
		t.Fatalf("push: %+v %v (ran %d)", res, err, f.up.count("push"))
	}
}

// When a client session that initialized ends, the inbox is told, once,
// with the session it asked for.
func TestInboxHearsTheSessionEnd(t *testing.T) {
	in := &fakeInbox{ended: make(chan mcpgateway.Session, 2), answer: func(_ context.Context, p *gate.Pending, _ func(string)) (*tool.Answer, error) {
		return &tool.Answer{ID: p.Request.ID, OK: true, By: "alice"}, nil
	}}
	f := setup(t, nil, &mcpgateway.Options{Inbox: in}, nil)
	// A client of protocol 2025-11-25: one of 2026-07-28 has no session.
	st, ct := mcp.NewInMemoryTransports()
	ss, err := f.gw.Server().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	call(t, cs, "push", nil)
	_ = cs.Close()
	s := <-in.ended
	in.mu.Lock()
	asked := in.sessions[0]
	in.mu.Unlock()
	if s.ID != asked.ID || s.Name != "client" {
		t.Errorf("ended %+v, asked for %+v", s, asked)
	}
	select {
	case again := <-in.ended:
		t.Errorf("ended twice: %+v", again)
	default:
	}
}
