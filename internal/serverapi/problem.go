package serverapi

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
	// (server.Options.MaxStreams) are reached.
	ProblemTooManyStreams = "https://tollgate.dev/problems/too-many-streams"
	// ProblemTooManyRuns: 429, POST /v1/runs while the caller's tenant
	// has as many runs running on this server as server.Options.MaxRunsPerTenant
	// allows; Retry-After says when to try again.
	ProblemTooManyRuns = "https://tollgate.dev/problems/too-many-runs"
	// ProblemTooManyTickets: 429, POST /v1/events/ticket while the caller,
	// or all principals together, hold as many live tickets as
	// server.Options.MaxTickets allows.
	ProblemTooManyTickets = "https://tollgate.dev/problems/too-many-tickets"
)
