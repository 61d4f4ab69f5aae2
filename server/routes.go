package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/store"
)

// routes mounts every endpoint on s.mux: the /v1 API by role, the
// gateway, /healthz, /readyz, /metrics, and the page or 404 for the rest.
func (s *Server) routes() {
	mux := http.NewServeMux()
	s.mux = mux
	mux.HandleFunc("POST /v1/runs", s.auth(RoleOperator, s.startRun))
	mux.HandleFunc("GET /v1/runs", s.auth(RoleViewer, s.listRuns))
	mux.HandleFunc("GET /v1/runs/{id}", s.auth(RoleViewer, s.getRun))
	mux.HandleFunc("POST /v1/runs/{id}/cancel", s.auth(RoleOperator, s.cancelRun))
	mux.HandleFunc("GET /v1/approvals", s.auth(RoleViewer, s.listApprovals))
	mux.HandleFunc("GET /v1/approvals/{id}", s.auth(RoleViewer, s.getApproval))
	mux.HandleFunc("POST /v1/approvals/{id}/decision", s.auth(RoleApprover, s.decide))
	mux.HandleFunc("GET /v1/autonomy", s.auth(RoleViewer, s.getAutonomy))
	mux.HandleFunc("PUT /v1/autonomy", s.auth(RoleViewer, s.putAutonomy))
	mux.HandleFunc("POST /v1/events/ticket", s.auth(RoleViewer, s.mintTicket))
	mux.HandleFunc("GET /v1/events", s.streamAuth(s.events))
	mux.HandleFunc("GET /v1/ws", s.streamAuth(s.websocket))
	mux.HandleFunc("GET /v1/agents", s.auth(RoleViewer, s.listAgents))
	mux.HandleFunc("GET /v1/agents/{name}/policy", s.auth(RoleViewer, s.agentPolicy))
	mux.HandleFunc("POST /v1/hooks/claude-code", s.auth(RoleAgent, s.claudeHook))
	mux.HandleFunc("GET /v1/shadow", s.auth(RoleViewer, s.shadowCounts))
	mux.HandleFunc("GET /v1/audit", s.auth(RoleViewer, s.audit))
	mux.HandleFunc("POST /v1/policy/replay", s.auth(RoleApprover, s.replayPolicy))
	mux.HandleFunc("POST /v1/hooks/codex", s.auth(RoleAgent, s.codexHook))
	mux.HandleFunc("GET /v1/rules", s.auth(RoleViewer, s.getRules))
	mux.HandleFunc("POST /v1/rules/proposals", s.auth(RoleApprover, s.proposeRule))
	mux.HandleFunc("POST /v1/rules/{id}/accept", s.auth(RoleAdmin, s.acceptRule))
	mux.HandleFunc("DELETE /v1/rules/{id}", s.auth(RoleAdmin, s.removeRule))
	if s.mcpLogins != nil {
		mux.HandleFunc("GET /v1/mcp/logins", s.auth(RoleApprover, s.listMCPLogins))
		mux.HandleFunc("POST /v1/mcp/logins", s.auth(RoleApprover, s.startMCPLogin))
		mux.HandleFunc("GET /v1/mcp/oauth/callback", s.mcpCallback)
		mux.HandleFunc("POST /v1/mcp/oauth/callback", s.mcpCallback) // the confirmation of another browser
	}
	mux.HandleFunc("POST /v1/gate/asks", s.auth(RoleAgent, s.gateAsk))
	mux.HandleFunc("GET /v1/gate/asks/{run}/{id}", s.auth(RoleAgent, s.gateAnswer))
	mux.HandleFunc("DELETE /v1/gate/asks/{run}/{id}", s.auth(RoleAgent, s.gateWithdraw))
	mux.HandleFunc("POST /v1/gate/records", s.auth(RoleAgent, s.gateRecord))
	mux.HandleFunc("POST /v1/gate/sessions/end", s.auth(RoleAgent, s.gateEnd))
	mux.HandleFunc("/mcp", s.gatewayRoute)
	mux.HandleFunc("GET /v1/me", s.auth(RoleViewer, func(w http.ResponseWriter, r *http.Request, p Principal) {
		writeJSON(w, http.StatusOK, p)
	}))
	// A path no pattern has is 404; one that other methods have is 405
	// with Allow (RFC 9110, 15.5.6): both as problem details.
	mux.HandleFunc("/v1/", s.noRoute)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.Handle("GET /metrics", s.metrics.handler)
	if s.page != nil {
		// Every other GET is the page's (/, /assets/..., its own views).
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				w.Header().Set("Allow", "GET, HEAD")
				problemf(w, r, http.StatusMethodNotAllowed, "the page answers GET only")
				return
			}
			s.page.ServeHTTP(w, r)
		})
	} else {
		mux.HandleFunc("/", s.noRoute)
	}
}

// routeMethods are the methods noRoute looks for other routes of a path
// with; a GET route answers HEAD too (net/http.ServeMux).
var routeMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// noRoute answers a request no route takes: 405 Method Not Allowed with
// an Allow header listing the methods the path has (RFC 9110, 15.5.6 and
// 10.2.1), or 404 when it has none; both as problem details (RFC 9457).
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range routeMethods {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "" && pattern != "/v1/" && pattern != "/" {
			allow = append(allow, m)
		}
	}
	if len(allow) == 0 {
		problemf(w, r, http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
		return
	}
	w.Header().Set("Allow", strings.Join(allow, ", "))
	problemf(w, r, http.StatusMethodNotAllowed, fmt.Sprintf("%s %s: this endpoint answers %s", r.Method, r.URL.Path, strings.Join(allow, ", ")))
}

// principalHandler is an API handler with the authenticated principal.
type principalHandler func(w http.ResponseWriter, r *http.Request, p Principal)

// auth authenticates a request by its Authorization header and checks role.
func (s *Server) auth(role Role, h principalHandler) http.HandlerFunc {
	return s.authWith(role, false, h)
}

// streamAuth authenticates an event stream by header or ticket.
func (s *Server) streamAuth(h principalHandler) http.HandlerFunc {
	return s.authWith(RoleViewer, true, func(w http.ResponseWriter, r *http.Request, p Principal) {
		release, ok := s.streams.take(p)
		if !ok {
			w.Header().Set("Retry-After", "10")
			writeProblem(w, r, serverapi.Problem{Type: serverapi.ProblemTooManyStreams, Title: "Too Many Requests", Status: http.StatusTooManyRequests,
				Detail: fmt.Sprintf("too many event streams open (at most %d per principal, %d in all); close one or retry later", s.streams.perPrincipal, s.streams.max)})
			return
		}
		defer release()
		h(w, r, p)
	})
}

// streamSlots counts the open event streams, in all and per principal.
type streamSlots struct {
	mu                sync.Mutex
	max, perPrincipal int
	// perTenant, if positive, caps the places of one tenant's principals
	// together, so that one tenant's many tokens cannot take them all.
	perTenant int
	total     int
	open      map[string]int // by tenant and name
	tenants   map[string]int // by tenant, when perTenant is set
}

// take reserves a stream for p; release gives it back.
func (t *streamSlots) take(p Principal) (release func(), ok bool) {
	key := principalKey(p)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.total >= t.max || t.open[key] >= t.perPrincipal || (t.perTenant > 0 && t.tenants[p.Tenant] >= t.perTenant) {
		return nil, false
	}
	t.total++
	t.open[key]++
	if t.perTenant > 0 {
		if t.tenants == nil {
			t.tenants = map[string]int{}
		}
		t.tenants[p.Tenant]++
	}
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.total--
		if t.open[key]--; t.open[key] == 0 {
			delete(t.open, key)
		}
		if t.perTenant > 0 {
			if t.tenants[p.Tenant]--; t.tenants[p.Tenant] == 0 {
				delete(t.tenants, p.Tenant)
			}
		}
	}, true
}

func (s *Server) authWith(role Role, ticketOK bool, h principalHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := s.authenticate(r, ticketOK)
		if err != nil {
			detail := err.Error()
			if errors.Is(err, errNoToken) {
				detail = "this endpoint needs an Authorization: Bearer token"
			}
			writeProblem(w, r, serverapi.Problem{Status: http.StatusUnauthorized, Detail: detail})
			return
		}
		if !p.Has(role) {
			writeProblem(w, r, serverapi.Problem{Type: serverapi.ProblemForbidden, Title: "Forbidden", Status: http.StatusForbidden,
				Detail: fmt.Sprintf("this needs the %s role; the token of %s has %v", role, p.Name, p.Roles)})
			return
		}
		h(w, r, p)
	}
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ready := s.ready
	s.mu.Unlock()
	select {
	case <-s.done:
		problemf(w, r, http.StatusServiceUnavailable, "the server is shutting down")
		return
	default:
	}
	if !ready {
		problemf(w, r, http.StatusServiceUnavailable, "the server has not taken its stored runs up yet")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if _, err := s.store.ListRuns(ctx, store.RunFilter{AllTenants: true, Limit: 1}); err != nil {
		problemf(w, r, http.StatusServiceUnavailable, "the store does not answer")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}
