package server

import (
	"encoding/json"
	"net/http"
)

// Problem is an error response: RFC 9457 problem details, served as
// application/problem+json. Type is a URI reference naming the kind of
// problem ("about:blank" with the status's title, or one of the
// https://tollgate.dev/problems/... types below), Detail what went wrong with
// this request, and Errors, for an invalid edit, each violation of the
// tool's input schema.
type Problem struct {
	Type     string   `json:"type"`
	Title    string   `json:"title"`
	Status   int      `json:"status"`
	Detail   string   `json:"detail,omitempty"`
	Instance string   `json:"instance,omitempty"`
	Errors   []string `json:"errors,omitempty"`
}

// Problem types of the API beyond the plain HTTP statuses.
const (
	ProblemDecided        = "https://tollgate.dev/problems/already-decided"
	ProblemExpired        = "https://tollgate.dev/problems/expired"
	ProblemDigestMismatch = "https://tollgate.dev/problems/digest-mismatch"
	ProblemInvalidEdit    = "https://tollgate.dev/problems/invalid-edit"
	ProblemForbidden      = "https://tollgate.dev/problems/role"
	// ProblemIdempotencyKeyReused: 422, POST /v1/runs with the
	// Idempotency-Key of an earlier run and another agent or prompt.
	ProblemIdempotencyKeyReused = "https://tollgate.dev/problems/idempotency-key-reused"
	// ProblemTooManyStreams: 429, the caps on open event streams
	// ([Options.MaxStreams]) are reached.
	ProblemTooManyStreams = "https://tollgate.dev/problems/too-many-streams"
	// ProblemTooManyRuns: 429, POST /v1/runs while the caller's tenant
	// has as many runs running on this server as Options.MaxRunsPerTenant
	// allows; Retry-After says when to try again.
	ProblemTooManyRuns = "https://tollgate.dev/problems/too-many-runs"
	// ProblemTooManyTickets: 429, POST /v1/events/ticket while the caller,
	// or all principals together, hold as many live tickets as
	// [Options.MaxTickets] allows.
	ProblemTooManyTickets = "https://tollgate.dev/problems/too-many-tickets"
)

func writeProblem(w http.ResponseWriter, r *http.Request, p Problem) {
	if p.Type == "" {
		p.Type = "about:blank"
	}
	if p.Title == "" {
		p.Title = http.StatusText(p.Status)
	}
	if r != nil {
		p.Instance = r.URL.Path
	}
	if p.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="tollgate"`)
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

func problemf(w http.ResponseWriter, r *http.Request, status int, detail string) {
	writeProblem(w, r, Problem{Status: status, Detail: detail})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	// Arguments and prompts as written ("a && b > c", not "\u0026\u0026"
	// and "\u003e"): the body is application/json with nosniff, never HTML.
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
