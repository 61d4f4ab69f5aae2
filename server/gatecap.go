package server

import (
	"context"
	"errors"
	"time"

	"github.com/tollgate-dev/tollgate/store"
)

// maxGatePending is the most approvals an external gateway's session may
// have pending at once (POST /v1/gate/asks; docs/gateway.md): the gateway
// caps its clients' sessions so, and a gateway that does not (its token
// is an agent's) cannot fill the page either.
const maxGatePending = 32

// gatePendingFull reports whether run, a session's run of tenant, has
// maxGatePending approvals pending that have not expired at now.
// errGatePendingFull refuses an ask of a session that has maxGatePending
// approvals pending already.
var errGatePendingFull = errors.New("the session's pending approvals are at their cap")

func (s *Server) gatePendingFull(ctx context.Context, run store.Run, now time.Time) (bool, error) {
	n := 0
	for ap, err := range store.AllApprovals(ctx, s.store, store.ApprovalFilter{Tenant: run.Tenant, RunID: run.ID, Status: store.StatusPending}) {
		if err != nil {
			return false, err
		}
		if !ap.Expired(now) {
			n++
		}
		if n >= maxGatePending {
			return true, nil
		}
	}
	return false, nil
}
