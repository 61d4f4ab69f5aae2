// Package store keeps halted runs and their approval records so that a run
// that waits for a person survives the process (docs/architecture.md, "Suspension
// and approval"). [Store] is the interface; [Memory] is the
// in-memory implementation, package approval/store/sqlite the durable one, and
// package approval/store/storetest the test suite every implementation must
// pass.
//
// A store knows nothing of the agent: a run's halted state, its latest result
// and the host's run configuration are opaque JSON (the agent's State and
// Result, and whatever the host needs to rebuild the same agent). It therefore
// imports only the level-0 package tool, and the agent never imports it.
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
// even across processes sharing one store.
//
// # Runs
//
// A [Run]'s status changes only by compare-and-set ([Store.UpdateRun] with the
// expected current status), so that of two processes resuming one run, one
// wins and the other gets [ErrConflict]: together with single-use approvals,
// that is what makes an approved call run at most once.
package store

import (
	"context"
	"encoding/json"
	"errors"
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
)

// RunStatus is a run's status in the store: the agent's statuses plus running
// and resuming, which a host sets while it drives the run.
type RunStatus string

// Run statuses.
const (
	RunRunning    RunStatus = "running"
	RunPending    RunStatus = "pending"
	RunResuming   RunStatus = "resuming"
	RunDone       RunStatus = "done"
	RunIncomplete RunStatus = "incomplete"
	RunError      RunStatus = "error"
)

// Run is a stored run.
type Run struct {
	// ID is the run's ID (the agent's run ID).
	ID     string    `json:"id"`
	Status RunStatus `json:"status"`
	// State is the halted run (the agent's State as JSON) while Status is
	// pending; it is what a resume starts from.
	State json.RawMessage `json:"state,omitempty"`
	// Result is the run's latest result (the agent's Result as JSON: transcript
	// and every tool call record), if the host keeps it.
	Result json.RawMessage `json:"result,omitempty"`
	// Config is the host's original run configuration, opaque to the store;
	// set by CreateRun and never changed.
	Config json.RawMessage `json:"config,omitempty"`
	// CreatedAt and UpdatedAt are set by the store.
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
	// DecidedBy and Reason come from the decision.
	DecidedBy string `json:"decidedBy,omitempty"`
	Reason    string `json:"reason,omitempty"`
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
}

// Expired reports whether a has an expiry at or before now.
func (a Approval) Expired(now time.Time) bool {
	return a.ExpiresAt != nil && !now.Before(*a.ExpiresAt)
}

// Answer returns the answer a decided approval gives its request: approved and
// used ones approve (with Data), denied ones decline with the reason, expired
// ones decline as expired. A pending approval has no answer (false).
func (a Approval) Answer() (tool.Answer, bool) {
	ans := tool.Answer{ID: a.ID, Reason: a.Reason, By: a.DecidedBy}
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

// Decision is a person's (or a program's) decision on an approval.
type Decision struct {
	// Approve approves when true, denies when false.
	Approve bool
	// By names who decided; kept as DecidedBy.
	By string
	// Reason explains the decision; on deny, the model sees it.
	Reason string
	// Data, on approve, carries edited arguments (a JSON object) or an input
	// value; ignored on deny.
	Data json.RawMessage
}

// RunFilter selects runs; zero fields select all.
type RunFilter struct {
	Status RunStatus
}

// ApprovalFilter selects approvals; zero fields select all.
type ApprovalFilter struct {
	RunID  string
	ID     string
	Status Status
}

// Store holds runs and approvals. Implementations are safe for concurrent use
// and, when durable, for use by several processes at once. Every method takes
// ctx first and returns its errors wrapped around the sentinels above.
type Store interface {
	// CreateRun stores a new run and its approvals (each set to pending, with
	// RunID set to run.ID) in one transaction; [ErrExists] if the run or an
	// approval ID is taken. CreatedAt and UpdatedAt are set from the store's
	// clock.
	CreateRun(ctx context.Context, run Run, approvals ...Approval) error
	// UpdateRun replaces the Status, State and Result of a stored run whose
	// current status is from, and adds approvals, in one transaction;
	// [ErrNotFound], [ErrConflict] when the status is not from, [ErrExists]
	// for a taken approval ID. Config and CreatedAt are kept.
	UpdateRun(ctx context.Context, run Run, from RunStatus, approvals ...Approval) error
	// GetRun returns a run or [ErrNotFound].
	GetRun(ctx context.Context, id string) (Run, error)
	// ListRuns returns the runs f selects, oldest first.
	ListRuns(ctx context.Context, f RunFilter) ([]Run, error)
	// GetApproval returns one approval or [ErrNotFound].
	GetApproval(ctx context.Context, runID, id string) (Approval, error)
	// ListApprovals returns the approvals f selects, in the order they were
	// stored.
	ListApprovals(ctx context.Context, f ApprovalFilter) ([]Approval, error)
	// Decide approves or denies a pending approval and returns it as decided.
	// Errors: [ErrNotFound]; [ErrExpired] at or after ExpiresAt (the approval
	// is then stored as expired); [ErrDecided] when it is not pending.
	Decide(ctx context.Context, runID, id string, d Decision) (Approval, error)
	// Consume uses an approved approval for arguments with the given digest,
	// once, and returns it as used. Errors: [ErrNotFound]; [ErrUsed];
	// [ErrNotApproved] (pending, denied or expired); [ErrExpired] at or after
	// ExpiresAt (then stored as expired); [ErrDigestMismatch] (nothing changes).
	Consume(ctx context.Context, runID, id, digest string) (Approval, error)
	// Close releases the store's resources.
	Close() error
}

// Options configures a store implementation; nil means defaults.
type Options struct {
	// Now returns the current time (default time.Now); for tests.
	Now func() time.Time
}

// NowFunc returns o.Now, or time.Now when o or o.Now is nil.
func (o *Options) NowFunc() func() time.Time {
	if o == nil || o.Now == nil {
		return time.Now
	}
	return o.Now
}
