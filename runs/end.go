package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/internal/jsonenc"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/store"
)

// end stores how this part of the run ended, releases the lease and fires
// ON_STOP; a part that a stopping host cut short is released instead.
func (d *driver) end(ctx context.Context, res *agent.Result, runErr error) error {
	stopping := errors.Is(context.Cause(ctx), ErrHostStopping)
	ctx = context.WithoutCancel(ctx)
	if runErr != nil && stopping && !errors.Is(runErr, runcore.ErrCancelRequested) {
		return d.release(ctx, runErr)
	}
	status := runcore.EndStatus(res, runErr)
	u, err := d.endUpdate(ctx, res, runErr, status)
	if err != nil {
		return errors.Join(runErr, err)
	}
	var serr error
	if run, err := d.h.store.UpdateRun(ctx, d.run.ID, u); err != nil {
		serr = fmt.Errorf("runs: storing the end of run %s: %w", d.run.ID, err)
	} else if d.drv.Ended != nil {
		d.drv.Ended(run)
	}
	if d.built.OnStop != nil {
		d.built.OnStop(ctx, d.run.ID, status)
	}
	return errors.Join(runErr, serr)
}

// endUpdate is the store's update for the part's end in status: the
// result, the events not yet stored and the run.finished, run.halted or
// run.cancelled event; for a halt, the state and the requests not yet
// stored.
func (d *driver) endUpdate(ctx context.Context, res *agent.Result, runErr error, status store.RunStatus) (store.RunUpdate, error) {
	u := store.RunUpdate{LeaseToken: d.token, ReleaseLease: true, Events: d.takeEvents(), Status: status, Result: runcore.ResultJSON(res)}
	evType := runcore.EventRunFinished
	reason := runcore.ReasonOf(res, runErr)
	switch {
	case status == store.RunPending && res != nil && res.State != nil:
		st, err := jsonenc.Marshal(res.State)
		if err != nil {
			return u, err
		}
		known, err := runcore.KnownApprovals(ctx, d.h.store, d.run.ID)
		if err != nil {
			return u, fmt.Errorf("runs: storing halted run %s: %w", d.run.ID, err)
		}
		u.State = st
		u.Approvals = runcore.ApprovalsOf(d.run.Tenant, res.State, known)
		evType = runcore.EventRunHalted
		if reason == "" {
			reason = runcore.HaltReason(res.State)
		}
	case status == store.RunCancelled:
		evType = runcore.EventRunCancelled
	}
	data, _ := json.Marshal(map[string]any{"status": string(status), "reason": reason})
	u.Events = append(u.Events, store.Event{Tenant: d.run.Tenant, RunID: d.run.ID, Type: evType, Time: d.h.now(), Data: data})
	return u, nil
}

// release stores that this host stopped driving the run without ending it:
// status and latest checkpoint stay, the lease is released (see
// [ErrHostStopping]).
func (d *driver) release(ctx context.Context, runErr error) error {
	h := d.h
	data, _ := json.Marshal(map[string]any{"status": string(d.runningStatus()), "holder": h.holder})
	u := store.RunUpdate{LeaseToken: d.token, ReleaseLease: true, Events: append(d.takeEvents(),
		store.Event{Tenant: d.run.Tenant, RunID: d.run.ID, Type: runcore.EventRunReleased, Time: h.now(), Data: data})}
	if _, err := h.store.UpdateRun(ctx, d.run.ID, u); err != nil {
		return errors.Join(runErr, fmt.Errorf("runs: releasing run %s: %w", d.run.ID, err))
	}
	if d.built.OnStop != nil {
		d.built.OnStop(ctx, d.run.ID, d.runningStatus())
	}
	return errors.Join(ErrHostStopping, runErr)
}
