package storeimpl

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

func cloneApproval(a store.Approval) store.Approval {
	a.Data = slices.Clone(a.Data)
	a.Request.Data = slices.Clone(a.Request.Data)
	for _, p := range []**time.Time{&a.DecidedAt, &a.UsedAt, &a.ExpiresAt, &a.Request.ExpiresAt} {
		if *p != nil {
			t := **p
			*p = &t
		}
	}
	return a
}

// NewApproval returns a as stored when added to a run: pending, with the run's
// ID and tenant and the store's times, its decision fields cleared. For
// implementations.
func NewApproval(a store.Approval, run store.Run, now time.Time) store.Approval {
	a = cloneApproval(a)
	a.RunID, a.Tenant, a.Status, a.CreatedAt, a.UpdatedAt = run.ID, run.Tenant, store.StatusPending, now, now
	a.DecidedBy, a.Actor, a.Reason, a.Data, a.DecidedAt, a.UsedAt = tool.Principal{}, tool.Principal{}, "", nil, nil, nil
	return a
}

// ExpireApproval returns a marked expired at now, for implementations.
func ExpireApproval(a store.Approval, now time.Time) store.Approval {
	a.Status, a.UpdatedAt = store.StatusExpired, now
	return a
}

// ApplyDecision is the state machine of [store.Store.Decide], for implementations:
// given the stored approval, it returns the approval as it must be stored and
// the error to return ([store.ErrInvalid] for an answer that names no principal
// or an invalid one, [store.ErrDecided], [store.ErrExpired]). On store.ErrExpired the returned
// approval is marked expired and must be stored (with its
// [store.EventApprovalExpired] event); on store.ErrDecided it is unchanged.
func ApplyDecision(a store.Approval, d store.Answer, now time.Time) (store.Approval, error) {
	if err := checkAnswer(d); err != nil {
		return a, fmt.Errorf("approval %s of run %s: %w", a.ID, a.RunID, err)
	}
	if a.Status != store.StatusPending {
		return a, fmt.Errorf("%w: approval %s of run %s is %s", store.ErrDecided, a.ID, a.RunID, a.Status)
	}
	if a.Expired(now) {
		return ExpireApproval(a, now), fmt.Errorf("%w: approval %s of run %s expired at %s", store.ErrExpired, a.ID, a.RunID, a.ExpiresAt.Format(time.RFC3339))
	}
	a.Status = store.StatusDenied
	a.Data = nil
	if d.Approve {
		a.Status, a.Data = store.StatusApproved, slices.Clone(d.Data)
	}
	a.DecidedBy, a.Actor, a.Reason = d.By, d.Actor, d.Reason
	a.DecidedAt, a.UpdatedAt = &now, now
	return a, nil
}

// RedactedAnswer is the Data a request for input keeps once its answer
// was used ([RedactUsed]): what a person typed into a form (a
// value an MCP server asked for) is given to the call once, then no
// longer kept; the status (used), who answered and when stay.
var RedactedAnswer = json.RawMessage(`{"redacted":"the answer was used and is no longer kept"}`)

// RedactUsed returns a, a used approval as [ApplyConsume] made it, as a
// store keeps it, for implementations: the answer data of a request that
// asks a person for something ([tool.KindInput], [tool.KindQuestion],
// [tool.KindAuthorization]: an MCP server's elicitation, the question
// tool) is replaced by [RedactedAnswer]; an approval ([tool.KindApproval])
// is returned as it is (its edited arguments are what the call ran with,
// and stay). The store seals and writes the redacted approval
// and returns the approval with its data to the caller of Consume, the
// one use of the answer.
func RedactUsed(a store.Approval) store.Approval {
	if a.Status == store.StatusUsed && a.Kind != tool.KindApproval && len(a.Data) > 0 {
		a.Data = slices.Clone(RedactedAnswer)
	}
	return a
}

// ConsumeStep is the step of [store.Store.Consume] for implementations whose
// transition stores what the step returns: [ApplyConsume], then
// [RedactUsed]; the answer's data, before redaction, is put in *answer for
// the approval Consume returns.
func ConsumeStep(digest string, answer *json.RawMessage) func(store.Approval, time.Time) (store.Approval, error) {
	return func(a store.Approval, now time.Time) (store.Approval, error) {
		next, err := ApplyConsume(a, digest, now)
		if err != nil {
			return next, err
		}
		*answer = next.Data
		return RedactUsed(next), nil
	}
}

// ApplyConsume is the state machine of [store.Store.Consume], for implementations,
// like [ApplyDecision]: an unverified approval (see [Sealer.Check]) is
// refused with [store.ErrUnverified]; on store.ErrExpired the returned approval is marked expired
// and must be stored (with its [store.EventApprovalExpired] event); on other errors
// it is unchanged.
func ApplyConsume(a store.Approval, digest string, now time.Time) (store.Approval, error) {
	if a.Unverified && a.Status != store.StatusPending {
		return a, fmt.Errorf("%w: approval %s of run %s is %s, but its decision carries no valid MAC", store.ErrUnverified, a.ID, a.RunID, a.Status)
	}
	switch a.Status {
	case store.StatusUsed:
		return a, fmt.Errorf("%w: approval %s of run %s", store.ErrUsed, a.ID, a.RunID)
	case store.StatusApproved:
	default:
		return a, fmt.Errorf("%w: approval %s of run %s is %s", store.ErrNotApproved, a.ID, a.RunID, a.Status)
	}
	if a.Expired(now) {
		return ExpireApproval(a, now), fmt.Errorf("%w: approval %s of run %s expired at %s", store.ErrExpired, a.ID, a.RunID, a.ExpiresAt.Format(time.RFC3339))
	}
	if digest != a.Digest {
		return a, fmt.Errorf("%w: approval %s of run %s is for %s, not %s", store.ErrDigestMismatch, a.ID, a.RunID, a.Digest, digest)
	}
	a.Status, a.UsedAt, a.UpdatedAt = store.StatusUsed, &now, now
	return a, nil
}
