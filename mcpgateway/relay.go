package mcpgateway

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/mcptool"
)

// Relay hands what an upstream server asks of its client (sampling,
// elicitation, log messages) on to the client session of the gateway
// whose tools/call to that server is in flight. When calls of several
// client sessions are in flight to the server, nothing tells whose call
// the server asks for (one connection carries them all): an elicitation
// is cancelled, a sampling request refused and a log message dropped,
// rather than handed to a session that may be another tenant's. Pass [Relay.Forward] as [mcptool.Options].Forward when opening
// the set, and the relay as [Options].Relay. What comes while no call to
// the server is in flight is refused (a request) or dropped (a log
// message). An updated resource is told to the clients subscribed to it.
// The zero Relay has no call in flight and is ready to use; it is safe
// for concurrent use and must not be copied.
type Relay struct {
	// server is the gateway's, which tells its subscribed clients of an
	// updated resource; nil until a gateway takes the relay.
	server atomic.Pointer[mcp.Server]

	mu      sync.Mutex
	flights map[string][]*flight
	last    map[string]*mcp.ServerSession // the session of the call to each server that ended last, alone
}

// flight is one tools/call in flight to a server: the gateway client's
// session, and the call's context (on streamable HTTP, what is sent with
// it goes on the call's stream).
type flight struct {
	ctx     context.Context
	session *mcp.ServerSession
	// shared is set once a call of another session was in flight to the
	// same server at the same time (guarded by the relay's mu).
	shared bool
}

// errNoCall refuses an upstream's request that no client call is waiting on.
var errNoCall = errors.New("no client of the gateway has a call in flight to this server to ask")

// errSeveralSessions refuses an upstream's request while calls of several
// client sessions are in flight to it.
var errSeveralSessions = errors.New("calls of several clients of the gateway are in flight to this server, and nothing tells whose call asks: refused rather than asking the wrong client")

// Forward returns the handlers to give [mcptool.Open].
func (r *Relay) Forward() *mcptool.Forward {
	return &mcptool.Forward{
		CreateMessage: func(_ context.Context, server string, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			f, several := r.current(server)
			if several {
				return nil, errSeveralSessions
			}
			if f == nil {
				return nil, errNoCall
			}
			return f.session.CreateMessage(f.ctx, req.Params)
		},
		Elicit: func(_ context.Context, server string, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			f, several := r.current(server)
			if several {
				// No one was asked: the spec's "dismissed without a choice".
				return &mcp.ElicitResult{Action: "cancel"}, nil
			}
			if f == nil {
				return nil, errNoCall
			}
			return f.session.Elicit(f.ctx, req.Params)
		},
		ResourceUpdated: func(ctx context.Context, _ string, req *mcp.ResourceUpdatedNotificationRequest) {
			if s := r.server.Load(); s != nil && req.Params != nil {
				_ = s.ResourceUpdated(ctx, req.Params)
			}
		},
		Log: func(_ context.Context, server string, req *mcp.LoggingMessageRequest) {
			f, several := r.current(server)
			if several {
				return
			}
			if f != nil {
				_ = f.session.Log(f.ctx, req.Params)
				return
			}
			// A message handled after its call's answer (the SDK hands
			// notifications on while the answer goes its own way) goes to
			// the session of the last call, outside any call.
			if s := r.lastSession(server); s != nil {
				_ = s.Log(context.Background(), req.Params)
			}
		},
	}
}

// begin registers a call in flight to server until end is called.
func (r *Relay) begin(server string, ctx context.Context, s *mcp.ServerSession) (end func()) {
	if s == nil {
		return func() {}
	}
	f := &flight{ctx: ctx, session: s}
	r.mu.Lock()
	for _, g := range r.flights[server] {
		if g.session != s {
			g.shared, f.shared = true, true
		}
	}
	if r.flights == nil {
		r.flights = map[string][]*flight{}
	}
	r.flights[server] = append(r.flights[server], f)
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		fs := r.flights[server]
		for i, g := range fs {
			if g == f {
				r.flights[server] = append(fs[:i:i], fs[i+1:]...)
				break
			}
		}
		if len(r.flights[server]) == 0 {
			delete(r.flights, server)
		}
		// What comes after the answer is this call's only when no other
		// session's call overlapped it.
		if f.shared {
			delete(r.last, server)
		} else {
			if r.last == nil {
				r.last = map[string]*mcp.ServerSession{}
			}
			r.last[server] = s
		}
	}
}

// current returns the call in flight to server that what it sends now
// is for: the latest, when every call in flight to it is of one client
// session and none of them overlapped another session's call; nil when
// none is in flight; several when calls of more than one session are, or
// one in flight overlapped another session's call that has ended (nil
// then too). A call that ended leaves what the server sent for it to
// come late (the SDK hands on notifications apart from answers, and a
// cancelled call's elicitation may still be queued), so while a call
// that overlapped it is in flight, nothing tells the two apart.
func (r *Relay) current(server string) (f *flight, several bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fs := r.flights[server]
	if len(fs) == 0 {
		return nil, false
	}
	last := fs[len(fs)-1]
	for _, g := range fs {
		if g.session != last.session || g.shared {
			return nil, true
		}
	}
	return last, false
}

// lastSession returns the session of the call to server that ended last,
// when no other session's call overlapped it; nil otherwise.
func (r *Relay) lastSession(server string) *mcp.ServerSession {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last[server]
}
