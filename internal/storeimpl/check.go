package storeimpl

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/store"
)

// ApprovalEventOf returns the event that records a's current status (decided
// or expired), for implementations: Type, Tenant, RunID, Time (a.UpdatedAt)
// and Data are set; Seq is left to the store.
func ApprovalEventOf(a store.Approval) store.Event {
	typ := store.EventApprovalDecided
	if a.Status == store.StatusExpired {
		typ = store.EventApprovalExpired
	}
	data, _ := json.Marshal(store.ApprovalEvent{ApprovalID: a.ID, CallID: a.CallID, Tool: a.Tool, Status: a.Status, DecidedBy: a.DecidedBy, Actor: a.Actor, Reason: a.Reason})
	return store.Event{Tenant: a.Tenant, RunID: a.RunID, Type: typ, Time: a.UpdatedAt, Data: data}
}

// RunsCursorKind is the kind of the cursors of a run listing in the
// order f asks for ([EncodeCursor], [DecodeCursor]).
func RunsCursorKind(f store.RunFilter) string {
	if f.Newest {
		return "runs-newest"
	}
	return "runs"
}

// Now returns the clock of o (o.Now, or time.Now when o or o.Now is nil)
// giving times in UTC without a monotonic reading: the times a store
// returns from a write are then those a read of it returns (a SQLite or
// PostgreSQL store reads its times back in UTC).
func Now(o *store.Options) func() time.Time {
	now := time.Now
	if o != nil && o.Now != nil {
		now = o.Now
	}
	return func() time.Time { return now().UTC() }
}

// PageLimit returns the page size a filter's limit asks for ([DefaultLimit]
// for 0, at most [store.MaxLimit]); [store.ErrInvalid] when negative. For
// implementations.
func PageLimit(limit int) (int, error) {
	switch {
	case limit < 0:
		return 0, fmt.Errorf("%w: limit %d is negative", store.ErrInvalid, limit)
	case limit == 0:
		return DefaultLimit, nil
	case limit > store.MaxLimit:
		return store.MaxLimit, nil
	}
	return limit, nil
}

// EncodeCursor returns the opaque cursor of a position (a positive, store
// assigned, increasing number) in the listing named kind ("runs",
// "approvals"). For implementations.
func EncodeCursor(kind string, pos int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(kind + ":" + strconv.FormatInt(pos, 10)))
}

// DecodeCursor returns the position a cursor of the listing kind holds; 0 for
// the empty cursor; [store.ErrBadCursor] for anything EncodeCursor(kind, ...) did
// not make. For implementations.
func DecodeCursor(kind, cursor string) (int64, error) {
	if cursor == "" {
		return 0, nil
	}
	bad := func(why string) (int64, error) {
		if len(cursor) > 20 {
			cursor = cursor[:20] + "..."
		}
		return 0, fmt.Errorf("%w: %q is not a cursor of %s (%s)", store.ErrBadCursor, cursor, kind, why)
	}
	if len(cursor) > maxCursor {
		return bad("too long")
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(cursor)
	if err != nil {
		return bad("not base64url")
	}
	k, n, ok := strings.Cut(string(b), ":")
	if !ok || k != kind {
		return bad("wrong listing")
	}
	pos, err := strconv.ParseInt(n, 10, 64)
	if err != nil || pos <= 0 || strconv.FormatInt(pos, 10) != n {
		return bad("bad position")
	}
	return pos, nil
}

// CheckEvent validates an event for appending and fills its Time from now
// when zero; runTenant, when the event belongs to a run, is the run's tenant
// (store.ErrInvalid if ev.Tenant differs and is not empty). For implementations.
func CheckEvent(ev store.Event, runTenant *string, now time.Time) (store.Event, error) {
	where := "event"
	if ev.RunID != "" {
		where = "event of run " + ev.RunID
	}
	switch {
	case ev.Type == "":
		return ev, fmt.Errorf("%w: %s: empty type", store.ErrInvalid, where)
	case len(ev.Type) > MaxEventType:
		return ev, fmt.Errorf("%w: %s: type is %d bytes, more than %d", store.ErrInvalid, where, len(ev.Type), MaxEventType)
	case len(ev.Data) > MaxEventData:
		return ev, fmt.Errorf("%w: %s %s: data is %d bytes, more than %d", store.ErrInvalid, where, ev.Type, len(ev.Data), MaxEventData)
	case ev.Data != nil && !json.Valid(ev.Data):
		return ev, fmt.Errorf("%w: %s %s: data is not valid JSON", store.ErrInvalid, where, ev.Type)
	}
	if runTenant != nil {
		if ev.Tenant != "" && ev.Tenant != *runTenant {
			return ev, fmt.Errorf("%w: %s %s: tenant %q is not the run's %q", store.ErrInvalid, where, ev.Type, ev.Tenant, *runTenant)
		}
		ev.Tenant = *runTenant
	}
	if ev.Time.IsZero() {
		ev.Time = now
	}
	ev.Data = slices.Clone(ev.Data)
	return ev, nil
}

// CheckRun validates a new run and its approvals: the run needs an ID and a
// status, each approval an ID; [store.ErrInvalid]. For implementations.
func CheckRun(r store.CreateRunRequest) error {
	switch {
	case r.Run.ID == "":
		return fmt.Errorf("%w: run with no ID", store.ErrInvalid)
	case r.Run.Status == "":
		return fmt.Errorf("%w: run %s has no status", store.ErrInvalid, r.Run.ID)
	}
	return checkApprovals(r.Run.ID, r.Approvals)
}

func checkApprovals(runID string, as []store.Approval) error {
	for i, a := range as {
		if a.ID == "" {
			return fmt.Errorf("%w: approval %d of run %s has no ID", store.ErrInvalid, i, runID)
		}
	}
	return nil
}

// CheckClaim validates a claim; [store.ErrInvalid]. For implementations.
func CheckClaim(id string, c store.Claim) error {
	switch {
	case c.Holder == "":
		return fmt.Errorf("%w: claim of run %s: empty holder", store.ErrInvalid, id)
	case c.TTL <= 0:
		return fmt.Errorf("%w: claim of run %s: lease TTL %s is not positive", store.ErrInvalid, id, c.TTL)
	case len(c.From) == 0:
		return fmt.Errorf("%w: claim of run %s: no statuses to claim from", store.ErrInvalid, id)
	}
	for _, u := range c.Use {
		if u.ID == "" || u.Digest == "" {
			return fmt.Errorf("%w: claim of run %s: a use of an approval needs its ID and digest", store.ErrInvalid, id)
		}
	}
	return nil
}

// ApplyClaim is the state machine of [store.Store.ClaimRun], for implementations:
// given the stored run, the largest token the run ever had (the current
// lease's, or a released one's) and the store's time, it returns the run as
// it must be stored, or the error to return (and nothing is stored).
func ApplyClaim(r store.Run, lastToken int64, c store.Claim, now time.Time) (store.Run, error) {
	if err := CheckClaim(r.ID, c); err != nil {
		return r, err
	}
	if l := r.Lease; l != nil && l.Holder != c.Holder && !l.Expired(now) {
		return r, &LeasedError{RunID: r.ID, Holder: l.Holder, ExpiresAt: l.ExpiresAt}
	}
	if !slices.Contains(c.From, r.Status) {
		return r, fmt.Errorf("%w: run %s is %s, not one of %v", store.ErrConflict, r.ID, r.Status, c.From)
	}
	if c.Version != 0 && r.Version != c.Version {
		return r, fmt.Errorf("%w: run %s is at version %d, not %d", store.ErrConflict, r.ID, r.Version, c.Version)
	}
	if c.To != "" {
		r.Status = c.To
	}
	r.Lease = &store.Lease{Holder: c.Holder, Token: lastToken + 1, ExpiresAt: now.Add(c.TTL)}
	r.Version++
	r.UpdatedAt = now
	return r, nil
}

// ApplyRenew is the state machine of [store.Store.RenewLease], for
// implementations: it returns the run as it must be stored.
func ApplyRenew(r store.Run, holder string, token int64, ttl time.Duration, now time.Time) (store.Run, error) {
	if ttl <= 0 {
		return r, fmt.Errorf("%w: renewal of run %s: lease TTL %s is not positive", store.ErrInvalid, r.ID, ttl)
	}
	l := r.Lease
	if l == nil {
		return r, fmt.Errorf("%w: run %s has no lease (released or never claimed); %q held token %d", store.ErrLeaseLost, r.ID, holder, token)
	}
	if l.Holder != holder || l.Token != token {
		return r, fmt.Errorf("%w: run %s is leased to %q with token %d, not %q with token %d", store.ErrLeaseLost, r.ID, l.Holder, l.Token, holder, token)
	}
	r.Lease = &store.Lease{Holder: holder, Token: token, ExpiresAt: now.Add(ttl)}
	r.Version++
	r.UpdatedAt = now
	return r, nil
}

// ApplyUpdate is the state machine of [store.Store.UpdateRun] for the run record
// (approvals and events are the implementation's), for implementations: it
// returns the run as it must be stored, or the error to return.
func ApplyUpdate(r store.Run, u store.RunUpdate, now time.Time) (store.Run, error) {
	if err := checkApprovals(r.ID, u.Approvals); err != nil {
		return r, err
	}
	if u.From != "" && r.Status != u.From {
		return r, fmt.Errorf("%w: run %s is %s, not %s", store.ErrConflict, r.ID, r.Status, u.From)
	}
	if u.LeaseToken != 0 && (r.Lease == nil || r.Lease.Token != u.LeaseToken) {
		held := "no lease"
		if r.Lease != nil {
			held = fmt.Sprintf("a lease of %q with token %d", r.Lease.Holder, r.Lease.Token)
		}
		return r, fmt.Errorf("%w: run %s has %s, not token %d", store.ErrLeaseLost, r.ID, held, u.LeaseToken)
	}
	if u.Status != "" {
		r.Status = u.Status
	}
	r.State = replaceRaw(r.State, u.State)
	r.Result = replaceRaw(r.Result, u.Result)
	if u.ReleaseLease {
		r.Lease = nil
	}
	r.Version++
	r.UpdatedAt = now
	return r, nil
}

func replaceRaw(cur, next json.RawMessage) json.RawMessage {
	switch {
	case next == nil:
		return cur
	case string(next) == "null":
		return nil
	}
	return slices.Clone(next)
}

// Prunable reports whether DeleteRuns with f deletes r at now (tenant
// scoping aside). For implementations.
func Prunable(r store.Run, f store.PruneFilter, now time.Time) bool {
	if r.Lease != nil && !r.Lease.Expired(now) {
		return false
	}
	if !f.Before.IsZero() && !r.UpdatedAt.Before(f.Before) {
		return false
	}
	if len(f.Statuses) == 0 {
		return r.Status.Finished()
	}
	return slices.Contains(f.Statuses, r.Status)
}

// Limits on what the store accepts and returns.
const (
	// DefaultLimit is the page size when a filter's Limit is zero.
	DefaultLimit = 100
	// MaxEventType is the longest event type, in bytes.
	MaxEventType = 128
	// MaxEventData is the largest event payload, in bytes.
	MaxEventData = 1 << 20
	// maxCursor is the longest cursor accepted, in bytes.
	maxCursor = 128
)
