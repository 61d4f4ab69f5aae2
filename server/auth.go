package server

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/tool"
)

// Role is what a token may do within its tenant. A token has one or more
// roles; every role but agent may read (runs, approvals, events).
type Role string

// Roles, from least to most power. Roles are a set, not a ladder: an
// operator who starts runs does not approve their calls unless the token
// also has the approver role. Admin has every power.
const (
	// RoleViewer reads runs, approvals, events and the autonomy levels.
	RoleViewer Role = "viewer"
	// RoleApprover also decides approvals and sets a run's autonomy level
	// (which decides future calls of that run).
	RoleApprover Role = "approver"
	// RoleOperator also starts and cancels runs.
	RoleOperator Role = "operator"
	// RoleAdmin may do everything in its tenant, including setting the
	// tenant's autonomy level.
	RoleAdmin Role = "admin"
	// RoleAgent is the token of an agent tollgate does not run (a Claude
	// Code or Codex hook): it may open sessions, report calls and results,
	// ask and wait (POST /v1/hooks/claude-code, POST /v1/hooks/codex), and
	// nothing else: a token with
	// only this role may not decide, list approvals or read runs (403).
	// An agent's shell can read whatever its process holds, so its token
	// must be worthless for approving.
	RoleAgent Role = "agent"
)

// Principal is who a request is from, as its bearer token says
// ([Options.Tokens]): a name, a tenant ("" is the default tenant) and
// roles. Decisions, cancels and started runs record it as the person
// "person:<Name>"; it never comes from a request body.
type Principal struct {
	Name   string `json:"name"`
	Tenant string `json:"tenant"`
	Roles  []Role `json:"roles"`
}

// Has reports whether p may act as r: every principal but one whose only
// role is agent may view, an admin may do everything, others what their
// roles list.
func (p Principal) Has(r Role) bool {
	if slices.Contains(p.Roles, RoleAdmin) || slices.Contains(p.Roles, r) {
		return true
	}
	return r == RoleViewer && slices.ContainsFunc(p.Roles, func(x Role) bool { return x != RoleAgent })
}

// decider is the principal recorded on a decision, a cancel or a started
// run: a person with p's name.
func (p Principal) decider() tool.Principal {
	return tool.Principal{Kind: tool.PrincipalPerson, Name: p.Name}
}

// hashToken returns the lowercase hex SHA-256 of a token or ticket: the
// server keeps hashes only.
func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

const maxTokenLen = 512

// ticketTTL is how long a stream ticket ([Server]'s POST /v1/events/ticket)
// authenticates GET /v1/events and /v1/ws: long enough for EventSource's
// reconnects, short enough that one in a log is of little use.
const ticketTTL = 60 * time.Second

// Default caps of the stream tickets alive at once ([Options.MaxTickets]).
const (
	defaultMaxTickets             = 8192
	defaultMaxTicketsPerPrincipal = 64
)

// tickets are short-lived stream credentials for clients that cannot send
// an Authorization header (EventSource, browser WebSockets). They are
// capped in all and per principal, so that minting cannot grow memory
// without bound, and expire in the order they were minted (one TTL): each
// mint drops the expired ones from the front of the queue, never scanning
// the live ones.
type tickets struct {
	mu                sync.Mutex
	max, perPrincipal int
	m                 map[string]ticket // by the ticket's SHA-256
	queue             []queuedTicket    // in mint order, so in expiry order
	// live are the expiry times of each principal's tickets in queue,
	// oldest first.
	live map[string][]time.Time
}

type ticket struct {
	p   Principal
	exp time.Time
}

type queuedTicket struct {
	hash, principal string
	exp             time.Time
}

// errTooManyTickets is a mint over a cap; retry is when a ticket of the
// cap expires.
type errTooManyTickets struct {
	detail string
	retry  time.Duration
}

func (e *errTooManyTickets) Error() string { return e.detail }

func principalKey(p Principal) string { return p.Tenant + "\x00" + p.Name }

// mint returns a new ticket for p and when it expires, or
// *errTooManyTickets when p, or all principals together, hold as many live
// tickets as the caps allow.
func (ts *tickets) mint(p Principal, now time.Time) (string, time.Time, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.m == nil {
		ts.m, ts.live = map[string]ticket{}, map[string][]time.Time{}
	}
	ts.expire(now)
	key := principalKey(p)
	if mine := ts.live[key]; len(mine) >= ts.perPrincipal || len(ts.queue) >= ts.max {
		// Retry when the oldest ticket of the cap that was hit expires.
		retry := ts.queue[0].exp.Sub(now)
		if len(mine) >= ts.perPrincipal {
			retry = mine[0].Sub(now)
		}
		return "", time.Time{}, &errTooManyTickets{
			detail: fmt.Sprintf("too many live stream tickets (at most %d per principal, %d in all); each lasts %s and may be used again until then: reuse one, or retry later", ts.perPrincipal, ts.max, ticketTTL),
			retry:  retry,
		}
	}
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	id := "tkt_" + hex.EncodeToString(b)
	exp := now.Add(ticketTTL)
	h := hashToken(id)
	ts.m[h] = ticket{p: p, exp: exp}
	ts.queue = append(ts.queue, queuedTicket{hash: h, principal: key, exp: exp})
	ts.live[key] = append(ts.live[key], exp)
	return id, exp, nil
}

// expire forgets the tickets expired at now, from the front of the queue.
func (ts *tickets) expire(now time.Time) {
	n := 0
	for n < len(ts.queue) && !now.Before(ts.queue[n].exp) {
		q := ts.queue[n]
		delete(ts.m, q.hash)
		if mine := ts.live[q.principal][1:]; len(mine) > 0 {
			ts.live[q.principal] = mine
		} else {
			delete(ts.live, q.principal)
		}
		ts.queue[n] = queuedTicket{}
		n++
	}
	ts.queue = ts.queue[n:]
}

func (ts *tickets) lookup(id string, now time.Time) (Principal, bool) {
	if id == "" || len(id) > maxTokenLen {
		return Principal{}, false
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t, ok := ts.m[hashToken(id)]
	if !ok || !now.Before(t.exp) {
		return Principal{}, false
	}
	return t.p, true
}

var errNoToken = errors.New("no bearer token")

// authenticate returns the request's principal from its Authorization
// header, or, when ticketOK, from a ?ticket= minted by POST /v1/events/ticket.
func (s *Server) authenticate(r *http.Request, ticketOK bool) (Principal, error) {
	h := r.Header.Get("Authorization")
	if h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return Principal{}, errors.New("the Authorization header must be \"Bearer TOKEN\"")
		}
		p, ok := s.lookupToken(strings.TrimSpace(tok))
		if !ok {
			return Principal{}, errors.New("the bearer token is not known")
		}
		return p, nil
	}
	if t := r.URL.Query().Get("ticket"); ticketOK && t != "" {
		p, ok := s.tickets.lookup(t, s.now())
		if !ok {
			return Principal{}, errors.New("the ticket is not known or expired; mint another with POST /v1/events/ticket")
		}
		// A ticket only reads: it travels in a URL, which proxies and logs
		// keep, so whoever replays it within its TTL must not decide.
		return Principal{Name: p.Name, Tenant: p.Tenant, Roles: []Role{RoleViewer}}, nil
	}
	return Principal{}, errNoToken
}

func (s *Server) mintTicket(w http.ResponseWriter, r *http.Request, p Principal) {
	t, exp, err := s.tickets.mint(p, s.now())
	var many *errTooManyTickets
	if errors.As(err, &many) {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int((many.retry+time.Second-1)/time.Second))))
		writeProblem(w, r, serverapi.Problem{Type: serverapi.ProblemTooManyTickets, Title: "Too Many Requests", Status: http.StatusTooManyRequests, Detail: many.detail})
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"ticket": t, "expiresAt": exp})
}

// lookupToken returns the principal of a bearer token by Options.Tokens;
// none is known without it, nor one longer than maxTokenLen.
func (s *Server) lookupToken(token string) (Principal, bool) {
	if s.tokens == nil || token == "" || len(token) > maxTokenLen {
		return Principal{}, false
	}
	return s.tokens(token)
}
