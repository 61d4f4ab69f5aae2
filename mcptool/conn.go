package mcptool

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/tool"
)

// Renewal bounds: a session that is gone is renewed with at most
// renewAttempts tries, waiting renewBackoff before the second and twice as
// long before each further one.
const (
	renewAttempts = 3
	renewBackoff  = 200 * time.Millisecond
)

// errClosed is returned by renew after [Set.Close].
var errClosed = errors.New("the MCP servers are closed")

// conn is one server and its current session. A streamable-HTTP session the
// server no longer knows (HTTP 404, after a restart), or a stdio server that
// exited, is replaced by a new one on the next call (see renew); tools hold
// the conn, not the session.
type conn struct {
	name  string
	sc    *ServerConfig
	o     *Options
	oauth auth.OAuthHandler // nil: no OAuth

	renewMu sync.Mutex // held by one renewal at a time, while it dials

	mu       sync.Mutex // guards what follows; never held while dialing
	session  *mcp.ClientSession
	dead     chan struct{} // closed when session has ended
	gen      int           // bumped by every renewal
	closed   bool
	renewals int

	// listChanged is set when the server announces that its tool list
	// changed (notifications/tools/list_changed), or when a new session
	// started (a restarted server may list other tools); [Set.Refresh]
	// lists the tools again.
	listChanged atomic.Bool
	// progress maps the progress token of every call in flight to the
	// call's context, which carries its tool.Reporter.
	progress sync.Map
	// calls maps the progress token of every call in flight to its
	// *callState, which the elicitation handler reads (elicitLater).
	calls  sync.Map
	tokens atomic.Uint64
	// oversized is the last HTTP message over the size limit, which the
	// SDK may report only as a request without a response; a failed call
	// takes it to say why.
	oversized atomic.Pointer[error]

	// tools are the server's tools as last listed; guarded by the Set's mu
	// once Open has returned.
	tools []*Tool
}

// clientOptions are the options of every client of c: its logger, and the
// handlers of the notifications tollgate acts on.
func (c *conn) clientOptions() *mcp.ClientOptions {
	o := &mcp.ClientOptions{
		Logger: c.o.Logger.With("server", c.name),
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			c.listChanged.Store(true)
			c.o.Logger.Info("mcp server says its tools changed", "server", c.name)
		},
		ProgressNotificationHandler: c.onProgress,
		// Elicitation is always declared, form and URL mode: with nobody to
		// ask ([Options].Elicit nil) it is declined, never left unanswered.
		Capabilities: &mcp.ClientCapabilities{
			RootsV2:     &mcp.RootCapabilities{ListChanged: true},
			Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
		},
		ElicitationHandler: c.onElicit,
	}
	c.forward(o)
	return o
}

// newProgressToken returns a token for one call, unique within the set's
// life, and registers ctx to receive its progress until done is called.
func (c *conn) newProgressToken(ctx context.Context) (token string, done func()) {
	token = fmt.Sprintf("tollgate-%d", c.tokens.Add(1))
	c.progress.Store(token, ctx)
	return token, func() { c.progress.Delete(token) }
}

// onProgress hands a notifications/progress for a call in flight to the
// call's reporter; one for an unknown token (a finished call, or one the
// server made up) is dropped.
func (c *conn) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	if req == nil || req.Params == nil {
		return
	}
	token, ok := req.Params.ProgressToken.(string)
	if !ok {
		return
	}
	v, ok := c.progress.Load(token)
	if !ok {
		return
	}
	p := req.Params
	if math.IsNaN(p.Progress) || math.IsInf(p.Progress, 0) || math.IsNaN(p.Total) || math.IsInf(p.Total, 0) {
		return
	}
	tool.InvocationFrom(v.(context.Context)).Progress(tool.Progress{Progress: p.Progress, Total: p.Total, Message: p.Message})
}

// set makes s the current session; c.mu is held or c is new.
func (c *conn) set(s *mcp.ClientSession) {
	dead := make(chan struct{})
	go func() {
		_ = s.Wait()
		close(dead)
	}()
	c.session, c.dead = s, dead
}

// current returns the session, its generation and whether it has ended.
func (c *conn) current() (*mcp.ClientSession, int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.dead:
		return c.session, c.gen, true
	default:
		return c.session, c.gen, false
	}
}

// renewable reports whether the server's sessions can be replaced: a stdio or
// streamable-HTTP server can; a transport set in code may not connect twice.
func (c *conn) renewable() bool { return c.sc.Transport == nil }

// renew replaces the session of generation gen by a new one (a new process
// for stdio, a new initialize for HTTP; MCP specification 2025-06-18,
// "Transports: Session management": a client that gets 404 for its session
// "MUST start a new session"), with at most renewAttempts tries, backing off
// between them. When another call has renewed it already, renew returns that
// session. Each try is bounded by the server's Timeout; ctx bounds the whole.
func (c *conn) renew(ctx context.Context, gen int, why error) (*mcp.ClientSession, int, error) {
	c.renewMu.Lock()
	defer c.renewMu.Unlock()
	c.mu.Lock()
	closed, cur, curGen := c.closed, c.session, c.gen
	c.mu.Unlock()
	switch {
	case closed:
		return nil, curGen, errClosed
	case curGen != gen:
		return cur, curGen, nil
	case !c.renewable():
		return nil, curGen, why
	}
	s, err := c.dialRetrying(ctx, why)
	if err != nil {
		return nil, curGen, err
	}
	c.mu.Lock()
	if c.closed {
		// Closed while dialing: the new session must not outlive the set.
		c.mu.Unlock()
		_ = closeWithin(s, 3*c.o.ShutdownGrace+time.Second)
		return nil, curGen, errClosed
	}
	old := c.session
	c.set(s)
	c.gen++
	c.renewals++
	gen = c.gen
	c.mu.Unlock()
	c.listChanged.Store(true)
	go func() { _ = closeWithin(old, 3*c.o.ShutdownGrace+time.Second) }()
	return s, gen, nil
}

// dialRetrying dials with at most renewAttempts tries and backoff.
func (c *conn) dialRetrying(ctx context.Context, why error) (*mcp.ClientSession, error) {
	start := time.Now()
	wait := renewBackoff
	var err error
	for attempt := 1; attempt <= renewAttempts; attempt++ {
		if attempt > 1 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, fmt.Errorf("%w (while starting a new session after: %v)", ctx.Err(), why)
			case <-t.C:
			}
			wait *= 2
		}
		var stderr *tailBuffer
		var s *mcp.ClientSession
		s, err = dial(ctx, c, &stderr)
		if err == nil {
			c.o.Logger.Warn("mcp server session renewed", "server", c.name, "reason", why.Error(),
				"attempt", attempt, "took", time.Since(start))
			return s, nil
		}
		if stderr != nil {
			if tail := lastLines(stderr.String(), 5); tail != "" {
				err = fmt.Errorf("%w; stderr: %s", err, tail)
			}
		}
		c.o.Logger.Warn("mcp server session could not be renewed", "server", c.name, "attempt", attempt, "error", err)
	}
	return nil, fmt.Errorf("%v; a new session failed %d times, last: %w", why, renewAttempts, err)
}

// close closes the current session; no renewal happens afterwards.
func (c *conn) close(d time.Duration) error {
	c.mu.Lock()
	c.closed = true
	s := c.session
	c.mu.Unlock()
	return closeWithin(s, d)
}

// renewCount returns how many times the session was renewed.
func (c *conn) renewCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.renewals
}
