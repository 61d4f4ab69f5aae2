package runcore

import (
	"context"
	"errors"
	"fmt"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// CarriedDeclined is the answer a halted call gets, in the runtime's name,
// when the approval it carries over its tool's request
// ([gate.Pending].Approved) is not the one the store holds: the state was
// written around tollgate. It declines: the call is never run on it.
func CarriedDeclined(req string, why string) tool.Answer {
	return tool.Answer{ID: req, Principal: approval.Runtime,
		Reason: "the approval this call carries is not the one tollgate recorded (" + why + "); the call was not run; to run it, ask for it again"}
}

// CheckCarried checks the approval w carries over its tool's request
// against the store's record of that approval, which a store seals
// (package store, "Sealed decisions") and a run's state does not: the approval must be in
// the store, sealed, approved (or used, as the pass that ran the call
// used it), for the same call, kind and arguments' digest, decided by the
// same principal with the same actor and data. It returns why not, ""
// when w carries none or it holds; err only when the store fails.
func CheckCarried(ctx context.Context, s store.Store, runID string, w agent.WaitingCall) (why string, err error) {
	ap := w.Pending.Approved
	if ap == nil {
		return "", nil
	}
	a, err := s.GetApproval(ctx, runID, ap.Request)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Sprintf("no approval %s in the store", ap.Request), nil
	case err != nil:
		return "", err
	case a.Unverified:
		return fmt.Sprintf("the decision on %s carries no valid MAC", a.ID), nil
	case a.Status != store.StatusUsed && a.Status != store.StatusApproved:
		return fmt.Sprintf("%s is %s, not approved", a.ID, a.Status), nil
	case a.CallID != w.Call.ID || a.Tool != w.Call.Name || a.Kind != tool.KindApproval || a.Digest != ap.Digest:
		return fmt.Sprintf("%s was given for another call or other arguments", a.ID), nil
	}
	ans, _ := a.Answer()
	if ans.Who() != ap.Answer.Who() || ans.Actor != ap.Answer.Actor || ans.Reason != ap.Answer.Reason ||
		approval.Digest(ans.Data) != approval.Digest(ap.Answer.Data) {
		return fmt.Sprintf("%s was decided otherwise", a.ID), nil
	}
	return "", nil
}
