package mcpgateway

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// sessionCounts are the open streamable HTTP sessions of each token: a
// client chooses how many it opens, and each holds the gateway's memory
// until it ends or idles out.
type sessionCounts struct {
	mu sync.Mutex
	// owner is the token's key (auth.TokenInfo.UserID) of each session
	// opened through the handler, by session ID.
	owner map[string]string
	// starting counts each token's initializes being served.
	starting map[string]int
}

// capSessions serves h, refusing with 429 an initialize outside a session
// (the request that opens one) when its token has n sessions open or
// opening already. A session counts until the gateway's server no longer
// has it (the client's DELETE, or idle for idle). Bodies are read up to
// maxBody bytes here (h refuses larger ones).
func (gw *Gateway) capSessions(n int, idle time.Duration, maxBody int64, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" || !initializes(r, maxBody) {
			h.ServeHTTP(w, r)
			return
		}
		key := ""
		if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
			key = ti.UserID
		}
		opened, ok := gw.httpSessions.reserve(key, n, gw.liveSessions)
		if !ok {
			http.Error(w, fmt.Sprintf("this token has %d MCP sessions open already, the most one token may have: end one (the client's DELETE of its session) or wait until one has been idle for %s", n, idle), http.StatusTooManyRequests)
			return
		}
		h.ServeHTTP(w, r)
		opened(w.Header().Get("Mcp-Session-Id"))
	})
}

// initializes reports whether r's body, read up to maxBody bytes and put
// back for the handler, may open a session: anything but one JSON-RPC
// message whose method is not initialize (server/discover of protocol
// 2026-07-28 opens none). A body that is not one message (a batch,
// garbage) counts as opening one, so that no spelling passes the cap.
func initializes(r *http.Request, maxBody int64) bool {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b), r.Body))
	if err != nil {
		return true // the handler reads the rest and fails alike
	}
	// Read as the SDK reads it: encoding/json matches keys without case
	// and keeps the last, so {"method":"initialize","Method":"ping"} was
	// a ping here and a session there.
	msg, err := jsonrpc.DecodeMessage(b)
	if err != nil {
		return true
	}
	req, isReq := msg.(*jsonrpc.Request)
	return isReq && req.Method == "initialize"
}

// liveSessions are the IDs of the sessions the gateway's server has.
func (gw *Gateway) liveSessions() map[string]bool {
	live := map[string]bool{}
	for ss := range gw.server.Sessions() {
		if id := ss.ID(); id != "" {
			live[id] = true
		}
	}
	return live
}

// reserve counts a session being opened by key's token, unless it has n
// sessions open or opening already (sessions live no longer has are
// forgotten first); opened, given the new session's ID ("" when none was
// opened), ends the reservation and counts that session.
func (sc *sessionCounts) reserve(key string, n int, live func() map[string]bool) (opened func(id string), ok bool) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.owner == nil {
		sc.owner, sc.starting = map[string]string{}, map[string]int{}
	}
	mine := sc.starting[key]
	if mine >= n {
		return nil, false
	}
	alive := live()
	for id, k := range sc.owner {
		switch {
		case !alive[id]:
			delete(sc.owner, id)
		case k == key:
			mine++
		}
	}
	if mine >= n {
		return nil, false
	}
	sc.starting[key]++
	return func(id string) {
		sc.mu.Lock()
		defer sc.mu.Unlock()
		down(sc.starting, key)
		if id != "" {
			if _, seen := sc.owner[id]; !seen {
				sc.owner[id] = key
			}
		}
	}, true
}
