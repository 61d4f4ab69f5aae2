// Package store keeps runs, their approval records and their event log so
// that a run that waits for a person survives the process, and so that hosts
// (the CLI, a server, several processes sharing one database) can claim, watch
// and page through runs (docs/architecture.md, "Suspension and approval" and
// "The store"). [Store] is the interface; package store/memory is the
// in-memory implementation, package store/sqlite the durable one in one file,
// package store/postgres the one that processes on many machines
// share, and package store/storetest the test suite every
// implementation must pass.
//
// A store knows nothing of the agent: a run's halted state, its latest result
// and the host's run configuration are opaque JSON (the agent's State and
// Result, and whatever the host needs to rebuild the same agent). It therefore
// imports only level-0 packages (tool, and internal/nofollow for its key
// file), and the agent never imports it.
//
// # Tenants
//
// Every record (run, approval, event) has a Tenant: an opaque name of the
// organisation or user space it belongs to. Approvals and events take the
// tenant of their run. Listings are scoped by the Tenant field of their
// filter: the empty tenant is the default tenant "", not "every tenant";
// AllTenants lists across tenants (for administrators and the local CLI).
// Getting or changing a record by ID (GetRun, GetApproval, Decide, Consume,
// ClaimRun, UpdateRun) does not check the tenant: it returns the record with
// its Tenant, and the caller must compare it with the caller's tenant before
// showing or changing anything.
//
// # Approvals
//
// An [Approval] is the record of one pending request of a halted run, keyed by
// its run ID and request ID. Its status moves only forward:
//
//	pending --Decide(approve)--> approved --Consume(digest)--> used
//	pending --Decide(deny)-----> denied
//	pending/approved --(at or after ExpiresAt)--> expired
//
// Deciding twice is an error ([ErrDecided]) whatever the second decision; a
// decision at or after the request's ExpiresAt is refused ([ErrExpired]) and
// marks the approval expired. Consume is the single use of an approval: it
// succeeds once, only for the arguments digest the approval was made for
// ([ErrDigestMismatch]), and never after expiry. Decide and Consume are atomic
// even across processes sharing one store. A decision appends an
// [EventApprovalDecided] event, and a recorded expiry an [EventApprovalExpired]
// event, in the same transaction, so that waiting for a run's events
// ([Store.WaitEvents]) covers waiting for its answers.
//
// # Sealed decisions
//
// A decision (approved, denied, expired, used) is sealed by the store that
// writes it: an HMAC-SHA256, with the store's decision key
// ([Options].DecisionKey), over what a resume trusts of it: the approval's
// tenant, run, ID, call, tool, kind and arguments digest, its status, who
// decided and who acted for them, the reason, the answer's data and the
// expiry (to the microsecond).
// Every approval a store reads is checked: one whose decision carries no
// MAC, or a wrong one (a row changed in the database by something other
// than tollgate: a tool that could write the SQLite file, a client of the
// PostgreSQL server; or a row decided before decisions were sealed) is
// returned with Unverified set; its [Approval.Answer] declines the request
// saying the decision was not made through tollgate, and Consume refuses it ([ErrUnverified]). A
// pending approval needs no MAC: it decides nothing. Sealing never
// launders: a step from an unverified approval (an expiry) stays
// unverified.
//
// # Runs and leases
//
// A [Run]'s status changes by compare-and-set ([RunUpdate.From]) and under a
// lease. [Store.ClaimRun] atomically moves a run from one of the expected
// statuses to a new one and gives the claimant a [Lease]: a holder name, an
// expiry on the store's clock and a fencing token that grows with every claim
// of the run. Of several concurrent claimants exactly one wins; a lease that
// expired (its holder crashed or stopped renewing it) is taken over by the next
// claim. The holder keeps the lease alive with [Store.RenewLease] and passes
// its token with every checkpoint ([RunUpdate.LeaseToken]); once another
// holder has taken the run over, both fail with [ErrLeaseLost], so a holder
// that was presumed dead cannot overwrite its successor's work. Together with
// single-use approvals, that is what makes an approved call run at most once.
//
// [Store.UpdateRun] is the checkpoint: status, state, result, the release of
// the lease, new approvals and new events are written in one transaction.
// Version counts the writes to a run.
//
// # Event log
//
// Every store has one event log. Each [Event] gets a sequence number (Seq)
// from the store: store-wide, strictly increasing, never reused, and never
// visible before every smaller one is (a reader that saw Seq n may continue
// from n and will miss nothing: this is what makes SSE Last-Event-ID resumption
// lossless). [Store.ListEvents] reads after a sequence number;
// [Store.WaitEvents] blocks until there is something to read.
//
// # Pagination
//
// [Store.ListRuns] and [Store.ListApprovals] return pages of at most
// [MaxLimit] records, oldest first, and an opaque cursor for the next page.
// A cursor is a position, not an offset: records inserted while a caller pages
// appear after the records it has seen, and no record is returned twice.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"time"

	"github.com/tollgate-dev/tollgate/tool"
)

// Errors of [Store] methods; test with errors.Is. Implementations wrap them
// with the IDs concerned.
var (
	// ErrNotFound: no run or approval has the ID.
	ErrNotFound = errors.New("store: not found")
	// ErrExists: a run, or an approval of the run, already has the ID.
	ErrExists = errors.New("store: already exists")
	// ErrConflict: the run's status is not the expected one (another process
	// changed it first); reload the run and decide again.
	ErrConflict = errors.New("store: run status changed concurrently")
	// ErrDecided: the approval was already decided (or expired or used).
	ErrDecided = errors.New("store: approval already decided")
	// ErrExpired: the approval's request expired; it cannot be decided or used.
	ErrExpired = errors.New("store: approval expired")
	// ErrNotApproved: Consume on an approval that is not approved.
	ErrNotApproved = errors.New("store: approval is not approved")
	// ErrUsed: Consume on an approval that was already used.
	ErrUsed = errors.New("store: approval already used")
	// ErrDigestMismatch: Consume with arguments other than the approved ones.
	ErrDigestMismatch = errors.New("store: approval was given for other arguments")
	// ErrLeased: ClaimRun on a run whose lease another holder still holds;
	// the message names the holder and the expiry (RFC 3339); try again
	// after the expiry.
	ErrLeased = errors.New("store: run is leased to another holder")
	// ErrLeaseLost: RenewLease or a fenced UpdateRun by a holder whose lease
	// was released or taken over by another claim; the holder must stop
	// working on the run.
	ErrLeaseLost = errors.New("store: lease lost")
	// ErrBadCursor: a page cursor that this store did not make for this
	// listing (corrupt, truncated, or from another listing).
	ErrBadCursor = errors.New("store: bad page cursor")
	// ErrUnverified: Consume on an approval whose decision carries no valid
	// MAC: it was not made through tollgate (see "Sealed decisions" in the
	// package doc). The call must not run.
	ErrUnverified = errors.New("store: the decision in the store was not made through tollgate")
	// ErrInvalid: a malformed argument (an empty holder or event type, a
	// non-positive TTL, a negative limit, invalid JSON); the message says
	// which.
	ErrInvalid = errors.New("store: invalid argument")
)

// RunStatus is a run's status in the store: the agent's statuses plus running,
// resuming and cancelled, which a host sets while it drives the run.
type RunStatus string

// Run statuses.
const (
	RunRunning    RunStatus = "running"
	RunPending    RunStatus = "pending"
	RunResuming   RunStatus = "resuming"
	RunDone       RunStatus = "done"
	RunIncomplete RunStatus = "incomplete"
	RunError      RunStatus = "error"
	RunCancelled  RunStatus = "cancelled"
)

// Finished reports whether s is a final status (done, incomplete, error,
// cancelled): a run in it is not resumed again.
func (s RunStatus) Finished() bool {
	switch s {
	case RunDone, RunIncomplete, RunError, RunCancelled:
		return true
	}
	return false
}

// Lease is a run's claim by one holder (a process, a worker) until ExpiresAt
// on the store's clock.
type Lease struct {
	// Holder names the claimant, as given to ClaimRun.
	Holder string `json:"holder"`
	// Token is the fencing token: it increases with every claim of the run
	// (never reused, even after a release), so that a stale holder's writes
	// can be refused.
	Token int64 `json:"token"`
	// ExpiresAt is when the lease lapses unless renewed.
	ExpiresAt time.Time `json:"expiresAt"`
}

// Expired reports whether the lease has expired at now (at or after
// ExpiresAt).
func (l Lease) Expired(now time.Time) bool { return !now.Before(l.ExpiresAt) }

// Run is a stored run.
type Run struct {
	// ID is the run's ID (the agent's run ID), unique in the store across
	// tenants.
	ID string `json:"id"`
	// Tenant is the run's tenant (see the package doc); set at creation and
	// never changed.
	Tenant string `json:"tenant"`
	// Owner names the principal that started the run, in its canonical text
	// form ([tool.Principal.String]: "person:alice"), empty for no one; set
	// at creation and never changed. A store keeps and returns the text as
	// given; [Run.OwnerPrincipal] reads it typed, rows written with a bare
	// user name included.
	Owner  string    `json:"owner,omitempty"`
	Status RunStatus `json:"status"`
	// State is the halted run (the agent's State as JSON) while Status is
	// pending, or the latest checkpoint while it runs; it is what a resume
	// starts from.
	State json.RawMessage `json:"state,omitempty"`
	// Result is the run's latest result (the agent's Result as JSON: transcript
	// and every tool call record), if the host keeps it.
	Result json.RawMessage `json:"result,omitempty"`
	// Config is the host's original run configuration, opaque to the store;
	// set at creation and never changed.
	Config json.RawMessage `json:"config,omitempty"`
	// Lease is the run's current lease, nil when nobody has claimed the run
	// or the holder released it. A lease is kept after it expires, until the
	// next claim or release: compare ExpiresAt with the time.
	Lease *Lease `json:"lease,omitempty"`
	// Version is 1 at creation and grows by one with every write to the run
	// (update, claim, renewal).
	Version int64 `json:"version"`
	// CreatedAt and UpdatedAt are set by the store (UpdatedAt by every write).
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// Status is an approval's status.
type Status string

// Approval statuses.
const (
	StatusPending  Status = "pending"
	StatusApproved Status = "approved"
	StatusDenied   Status = "denied"
	StatusExpired  Status = "expired"
	StatusUsed     Status = "used"
)

// Approval is the record of one pending request of a run.
type Approval struct {
	// ID is the request's ID, unique within the run.
	ID    string `json:"id"`
	RunID string `json:"runId"`
	// Tenant is the run's tenant, set by the store.
	Tenant string `json:"tenant"`
	// CallID and Tool name the tool call that raised the request.
	CallID string `json:"callId"`
	Tool   string `json:"tool"`
	// Digest is the digest of the arguments the request is about
	// (approval.Digest); Consume requires it.
	Digest string    `json:"digest"`
	Kind   tool.Kind `json:"kind"`
	Prompt string    `json:"prompt"`
	// Request is the whole request as the agent made it (its Data holds the
	// arguments for an approval).
	Request tool.Request `json:"request"`
	Status  Status       `json:"status"`
	// DecidedBy, Actor and Reason come from the decision ([Answer]):
	// DecidedBy is who decided, Actor who acted on DecidedBy's behalf (an
	// administrator answering for a person; zero otherwise). In JSON objects
	// {"kind": "person", "name": "alice"}, left out when zero.
	DecidedBy tool.Principal `json:"decidedBy,omitzero"`
	Actor     tool.Principal `json:"actor,omitzero"`
	Reason    string         `json:"reason,omitempty"`
	// Data is the answer's data: edited arguments for an approval, the value
	// for an input request.
	Data json.RawMessage `json:"data,omitempty"`
	// CreatedAt and UpdatedAt are set by the store; DecidedAt and UsedAt when
	// those happen.
	CreatedAt time.Time  `json:"createdAt"`
	UpdatedAt time.Time  `json:"updatedAt"`
	DecidedAt *time.Time `json:"decidedAt,omitempty"`
	UsedAt    *time.Time `json:"usedAt,omitempty"`
	// ExpiresAt is the request's expiry, if any.
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	// MAC seals the decision (see "Sealed decisions" in the package doc): base64 of an
	// HMAC-SHA256, empty while pending. Kept by the store, never shown.
	MAC string `json:"-"`
	// Unverified is set by the store that read the approval when its
	// decision carries no valid MAC: it was not made through tollgate, and
	// nothing may act on it (see "Sealed decisions" in the package doc).
	Unverified bool `json:"unverified,omitempty"`
}

// Expired reports whether a has an expiry at or before now.
func (a Approval) Expired(now time.Time) bool {
	return a.ExpiresAt != nil && !now.Before(*a.ExpiresAt)
}

// Answer returns the answer a decided approval gives its request: approved and
// used ones approve (with Data), denied ones decline with the reason, expired
// ones decline as expired, and an unverified one (see "Sealed decisions" in
// the package doc) declines in the runtime's name, saying so,
// whatever its status says. A pending approval has no answer (false).
func (a Approval) Answer() (tool.Answer, bool) {
	ans := tool.Answer{ID: a.ID, Reason: a.Reason, Principal: a.DecidedBy, Actor: a.Actor}
	if a.Unverified && a.Status != StatusPending {
		return tool.Answer{ID: a.ID, Principal: tool.Principal{Kind: tool.PrincipalRuntime}, Reason: unverifiedReason}, true
	}
	switch a.Status {
	case StatusApproved, StatusUsed:
		ans.OK, ans.Data = true, a.Data
	case StatusDenied:
	case StatusExpired:
		ans.Reason = "the request expired before it was approved"
	default:
		return tool.Answer{}, false
	}
	return ans, true
}

// Answer is a person's (or a program's) answer to an approval request:
// approve or deny, by whom, why, and edited data.
type Answer struct {
	// Approve approves when true, denies when false.
	Approve bool
	// By is who decided (a person, a flag that answers for everyone);
	// required, with a valid kind and a name of at most 512
	// bytes. Kept as DecidedBy.
	By tool.Principal
	// Actor, when not zero, is who acted on By's behalf: an administrator
	// who answers for the person named in By (the "act" claim of RFC 8693,
	// section 4.1). Kept as the approval's Actor, and given to the agent in
	// the answer, so that its decision record names both.
	Actor tool.Principal
	// Reason explains the decision; on deny, the model sees it.
	Reason string
	// Data, on approve, carries edited arguments (a JSON object) or an input
	// value; ignored on deny.
	Data json.RawMessage
}

// Event types the store itself appends.
const (
	// EventApprovalDecided is appended by Decide; its Data is an
	// [ApprovalEvent] with the new status (approved or denied).
	EventApprovalDecided = "approval.decided"
	// EventApprovalExpired is appended when the store records an approval as
	// expired (Decide, Consume or ExpireApprovals at or after its ExpiresAt);
	// its Data is an [ApprovalEvent].
	EventApprovalExpired = "approval.expired"
)

// ApprovalEvent is the Data of the events the store appends for approvals. It
// names the approval and the decision, never the arguments or edited data.
type ApprovalEvent struct {
	ApprovalID string         `json:"approvalId"`
	CallID     string         `json:"callId"`
	Tool       string         `json:"tool"`
	Status     Status         `json:"status"`
	DecidedBy  tool.Principal `json:"decidedBy,omitzero"`
	Actor      tool.Principal `json:"actor,omitzero"`
	Reason     string         `json:"reason,omitempty"`
}

// Event is one entry of the store's event log.
type Event struct {
	// Seq is assigned by the store: store-wide, strictly increasing, never
	// reused; ignored on input.
	Seq int64 `json:"seq"`
	// Tenant and RunID place the event. An event of a run takes the run's
	// tenant (a different Tenant on input is an error); an event with no
	// RunID belongs to the store as a whole and keeps its Tenant.
	Tenant string `json:"tenant"`
	RunID  string `json:"runId,omitempty"`
	// Type names what happened, dotted ("run.started", "approval.decided");
	// required, at most 128 bytes.
	Type string `json:"type"`
	// Time is when it happened; the store's clock when zero on input.
	Time time.Time `json:"time"`
	// Data is the event's payload, valid JSON or nil, at most
	// 1 MiB.
	Data json.RawMessage `json:"data,omitempty"`
}

// MaxLimit is the largest page of a listing, in records; larger Limits
// are lowered to it.
const MaxLimit = 1000

// CreateRunRequest is what CreateRun stores in one transaction.
type CreateRunRequest struct {
	// Run is the new run: ID, Tenant, Owner, Status, State, Result and
	// Config are taken from it; Lease, Version and the times are set by the
	// store.
	Run Run
	// Approvals are the run's pending requests; each is stored pending, with
	// the run's ID and tenant, whatever its Status and decision fields say.
	Approvals []Approval
	// Events are appended to the log after the run is stored, with the run's
	// ID and tenant.
	Events []Event
	// Holder, when set, creates the run leased to Holder for LeaseTTL (on the
	// store's clock), as if claimed at once; LeaseTTL must then be positive.
	Holder   string
	LeaseTTL time.Duration
}

// Claim is a request to take a run over (see [Store.ClaimRun]).
type Claim struct {
	// Holder names the claimant; required. A holder may claim again a run it
	// holds (it gets a new token).
	Holder string
	// TTL is how long the lease lasts unless renewed; must be positive.
	TTL time.Duration
	// From lists the statuses the run may have; required.
	From []RunStatus
	// To is the status the run gets; empty keeps the current one.
	To RunStatus
	// Version, when non-zero, is the version the run must have
	// ([ErrConflict] otherwise): a claim made on the run as the claimant
	// read it, with its state and its approvals.
	Version int64
	// Use lists approvals of the run to use once in the claim's
	// transaction, as [Store.Consume] does, in order (see [Store.ClaimRun]).
	Use []Use
	// Events are appended to the log with the run's ID and tenant, in the
	// claim's transaction.
	Events []Event
}

// Use names an approval of a run that a [Claim] uses once: its ID and the
// digest of the arguments it is used for (as [Store.Consume] takes them).
type Use struct {
	ID, Digest string
}

// RunUpdate is one checkpoint of a run (see [Store.UpdateRun]); zero fields
// change nothing.
type RunUpdate struct {
	// From, when set, is the status the run must have ([ErrConflict]
	// otherwise): a compare-and-set.
	From RunStatus
	// LeaseToken, when non-zero, fences the update: the run's current lease
	// must have this token ([ErrLeaseLost] otherwise). A lease that expired
	// but was not taken over still counts as held.
	LeaseToken int64
	// Status, when set, is the run's new status.
	Status RunStatus
	// State and Result, when non-nil, replace the run's; the JSON value null
	// clears them.
	State, Result json.RawMessage
	// ReleaseLease drops the run's lease (after the other changes), so that
	// the next claim needs no expiry.
	ReleaseLease bool
	// Approvals are added to the run, pending, as in CreateRun.
	Approvals []Approval
	// Events are appended to the log with the run's ID and tenant.
	Events []Event
}

// OwnerPrincipal returns [Run.Owner] as a principal: the zero Principal
// when it is empty, else the text read as [tool.PrincipalOf] reads it
// ("person:alice" is that person; a bare "alice", as older hosts stored it,
// is the person alice).
func (r Run) OwnerPrincipal() tool.Principal {
	if r.Owner == "" {
		return tool.Principal{}
	}
	return tool.PrincipalOf(r.Owner)
}

// RunFilter selects a page of runs.
type RunFilter struct {
	// Tenant scopes the listing to one tenant ("" is the default tenant)
	// unless AllTenants is set.
	Tenant     string
	AllTenants bool
	// Status, when set, selects runs with that status.
	Status RunStatus
	// Owner, when set, selects the runs that principal started: its
	// canonical text form ([tool.Principal.String]), compared exactly with
	// [Run.Owner].
	Owner string
	// Limit is the page size: 0 means 100, more than [MaxLimit]
	// means MaxLimit; negative is an error.
	Limit int
	// Cursor is the Next of the previous page, or empty for the first.
	Cursor string
	// Newest lists the runs newest first (a cursor of one order is not
	// one of the other: [ErrBadCursor]).
	Newest bool
}

// RunPage is one page of runs, oldest first unless the filter asked for
// newest first.
type RunPage struct {
	Runs []Run
	// Next is the cursor of the next page, empty when this is the last.
	Next string
}

// ApprovalFilter selects a page of approvals.
type ApprovalFilter struct {
	// Tenant and AllTenants scope the listing as in [RunFilter].
	Tenant     string
	AllTenants bool
	// RunID, ID and Status, when set, select approvals with those values.
	RunID  string
	ID     string
	Status Status
	// Limit and Cursor page as in [RunFilter].
	Limit  int
	Cursor string
}

// ApprovalPage is one page of approvals, in the order they were stored.
type ApprovalPage struct {
	Approvals []Approval
	// Next is the cursor of the next page, empty when this is the last.
	Next string
}

// EventFilter selects events of the log.
type EventFilter struct {
	// Tenant and AllTenants scope the events as in [RunFilter].
	Tenant     string
	AllTenants bool
	// RunID, when set, selects the events of one run.
	RunID string
	// AfterSeq selects events with a larger Seq (0 = from the start).
	AfterSeq int64
	// Limit caps the events returned as in [RunFilter]; ListEvents returns
	// fewer only when no more exist yet.
	Limit int
}

// PruneFilter selects the runs DeleteRuns removes.
type PruneFilter struct {
	// Tenant and AllTenants scope the deletion as in [RunFilter].
	Tenant     string
	AllTenants bool
	// Statuses lists the statuses to delete; empty means the finished ones
	// (done, incomplete, error, cancelled). A pending run is deleted only if
	// pending is listed.
	Statuses []RunStatus
	// Before, when not zero, deletes only runs last updated before it.
	Before time.Time
}

// Store holds runs, approvals and the event log. Implementations are safe for
// concurrent use and, when durable, for use by several processes at once.
// Every method takes ctx first and returns its errors wrapped around the
// sentinels above.
type Store interface {
	// CreateRun stores a new run, its approvals and its first events in one
	// transaction and returns the run as stored. Errors: [ErrExists] if the
	// run or an approval ID is taken; [ErrInvalid] for a run with no ID or
	// status, an approval with no ID, a bad event or lease request.
	CreateRun(ctx context.Context, r CreateRunRequest) (Run, error)
	// UpdateRun applies one checkpoint to a run in one transaction and
	// returns the run as stored. Errors: [ErrNotFound]; [ErrConflict] when
	// u.From is set and is not the status; [ErrLeaseLost] when u.LeaseToken
	// is set and is not the current lease's; [ErrExists] for a taken
	// approval ID; [ErrInvalid] for an approval with no ID or a bad event.
	// Nothing changes on error.
	UpdateRun(ctx context.Context, id string, u RunUpdate) (Run, error)
	// ClaimRun atomically takes a run over: if its status is one of c.From
	// and it has no lease, or an expired one (store clock), or one of
	// c.Holder's, it gets status c.To and a new lease of c.Holder for c.TTL
	// with a new, larger token. In the same transaction it uses the
	// approvals of c.Use, as Consume does, and appends c.Events: a resume's
	// claim, the answers it takes and its first event are one write. It
	// returns the run as claimed and the approvals of c.Use as used, in
	// order; one that had expired is returned, and stored, as expired (with
	// its [EventApprovalExpired] event), and the claim holds. Errors:
	// [ErrNotFound]; [ErrLeased] (wrapped with the holder and the expiry)
	// while another holder's lease lasts; [ErrConflict] when the status is
	// not in c.From or the version not c.Version; Consume's, but
	// [ErrExpired], for a use; [ErrInvalid] for an empty holder or From, a
	// non-positive TTL, a use without ID or digest, or a bad event. Nothing
	// changes on error.
	ClaimRun(ctx context.Context, id string, c Claim) (Run, []Approval, error)
	// RenewLease extends the lease (holder, token) of a run to ttl from now
	// (store clock) and returns it. Errors: [ErrNotFound]; [ErrLeaseLost]
	// when the run's lease is not (holder, token): released, or taken over
	// after an expiry (a lease that expired but was not taken over is
	// renewed); [ErrInvalid] for a non-positive ttl.
	RenewLease(ctx context.Context, id, holder string, token int64, ttl time.Duration) (Lease, error)
	// GetRun returns a run, whatever its tenant, or [ErrNotFound].
	GetRun(ctx context.Context, id string) (Run, error)
	// ListRuns returns a page of the runs f selects, oldest first.
	// [ErrBadCursor], [ErrInvalid] for a negative limit.
	ListRuns(ctx context.Context, f RunFilter) (RunPage, error)
	// DeleteRuns deletes the runs f selects, with their approvals and
	// events, and returns how many runs it deleted. A run whose lease has not
	// expired is never deleted.
	DeleteRuns(ctx context.Context, f PruneFilter) (int, error)
	// GetApproval returns one approval, whatever its tenant, or
	// [ErrNotFound].
	GetApproval(ctx context.Context, runID, id string) (Approval, error)
	// ListApprovals returns a page of the approvals f selects, in the order
	// they were stored. [ErrBadCursor], [ErrInvalid] for a negative limit.
	ListApprovals(ctx context.Context, f ApprovalFilter) (ApprovalPage, error)
	// Decide approves or denies a pending approval, appends an
	// [EventApprovalDecided] event, and returns the approval as decided.
	// Errors: [ErrNotFound]; [ErrExpired] at or after ExpiresAt (the approval
	// is then stored as expired, with an [EventApprovalExpired] event);
	// [ErrDecided] when it is not pending; [ErrInvalid] when d.By is zero or
	// d.By or d.Actor has an unknown kind or a name longer than
	// 512 bytes (nothing changes then).
	Decide(ctx context.Context, runID, id string, d Answer) (Approval, error)
	// Consume uses an approved approval for arguments with the given digest,
	// once, and returns it as used, with its answer's data. The answer to
	// a request that asks a person for something (input, a question, an
	// authorization) is given once: the store then keeps as its Data
	// {"redacted":"the answer was used and is no longer kept"}. Errors:
	// [ErrNotFound]; [ErrUsed]; [ErrNotApproved] (pending, denied or
	// expired); [ErrUnverified] (a decision not made through tollgate);
	// [ErrExpired] at or after ExpiresAt (then stored as expired, with an
	// [EventApprovalExpired] event); [ErrDigestMismatch] (nothing changes).
	Consume(ctx context.Context, runID, id, digest string) (Approval, error)
	// ExpireApprovals records as expired every pending or approved approval
	// whose ExpiresAt has passed (store clock), appending an
	// [EventApprovalExpired] event for each, and returns them.
	ExpireApprovals(ctx context.Context) ([]Approval, error)
	// AppendEvents appends events to the log in one transaction and returns
	// their sequence numbers, in order. Errors: [ErrNotFound] for an event of
	// an unknown run; [ErrInvalid] for an empty or too long Type, invalid or
	// too large Data, or a Tenant other than its run's.
	AppendEvents(ctx context.Context, evs ...Event) ([]int64, error)
	// ListEvents returns the events f selects with Seq > f.AfterSeq, in Seq
	// order, at most f.Limit of them. [ErrInvalid] for a negative limit.
	ListEvents(ctx context.Context, f EventFilter) ([]Event, error)
	// WaitEvents returns nil as soon as an event f selects with Seq >
	// f.AfterSeq exists (at once if one does), or ctx.Err() when ctx ends
	// first. Implementations wake without polling where the backend allows;
	// each documents how it waits.
	WaitEvents(ctx context.Context, f EventFilter) error
	// Close releases the store's resources.
	Close() error
}

// Options configures a store implementation; nil means defaults.
type Options struct {
	// Now returns the current time (default time.Now); for tests.
	Now func() time.Time
	// DecisionKey is the key of the MACs that seal the store's decisions
	// (32 random bytes, kept secret; see "Sealed decisions" in the package
	// doc; the command keeps it in a file of its state directory). Every
	// process that shares a durable store must be given the same key. Nil means a key made at random for
	// this process: decisions written by another process, or before a
	// restart, are then refused.
	DecisionKey []byte
}

// AllRuns iterates over every run f selects, page after page, starting at
// f.Cursor; it stops at the first error, which it yields.
func AllRuns(ctx context.Context, s Store, f RunFilter) iter.Seq2[Run, error] {
	return func(yield func(Run, error) bool) {
		for {
			p, err := s.ListRuns(ctx, f)
			if err != nil {
				yield(Run{}, err)
				return
			}
			for _, r := range p.Runs {
				if !yield(r, nil) {
					return
				}
			}
			if p.Next == "" {
				return
			}
			f.Cursor = p.Next
		}
	}
}

// AllApprovals iterates over every approval f selects, page after page,
// starting at f.Cursor; it stops at the first error, which it yields.
func AllApprovals(ctx context.Context, s Store, f ApprovalFilter) iter.Seq2[Approval, error] {
	return func(yield func(Approval, error) bool) {
		for {
			p, err := s.ListApprovals(ctx, f)
			if err != nil {
				yield(Approval{}, err)
				return
			}
			for _, a := range p.Approvals {
				if !yield(a, nil) {
					return
				}
			}
			if p.Next == "" {
				return
			}
			f.Cursor = p.Next
		}
	}
}
