package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/store"
)

// end stores how this part of the run ended and fires ON_STOP.
func (d *driver) end(ctx context.Context, res *agent.Result, runErr error) error {
	h := d.h
	stopping := errors.Is(context.Cause(ctx), ErrHostStopping)
	ctx = context.WithoutCancel(ctx)
	u := store.RunUpdate{LeaseToken: d.token, ReleaseLease: true, Events: d.takeEvents()}
	status := store.RunError
	if res != nil && runErr == nil {
		status = store.RunStatus(res.Status)
	}
	if errors.Is(runErr, runcore.ErrCancelRequested) {
		status = store.RunCancelled
	}
	if runErr != nil && stopping && !errors.Is(runErr, runcore.ErrCancelRequested) {
		return d.release(ctx, runErr)
	}
	u.Status = status
	u.Result = runcore.ResultJSON(res)
	evType := runcore.EventRunFinished
	switch {
	case status == store.RunPending && res != nil && res.State != nil:
		st, err := model.MarshalJSON(res.State)
		if err != nil {
			return errors.Join(runErr, err)
		}
		u.State = st
		known, err := runcore.KnownApprovals(ctx, h.store, d.run.ID)
		if err != nil {
			return errors.Join(runErr, fmt.Errorf("runs: storing halted run %s: %w", d.run.ID, err))
		}
		u.Approvals = runcore.ApprovalsOf(d.run.Tenant, res.State, known)
		evType = runcore.EventRunHalted
	case status == store.RunCancelled:
		evType = runcore.EventRunCancelled
	}
	reason := runcore.ReasonOf(res, runErr)
	if evType == runcore.EventRunHalted && reason == "" {
		reason = runcore.HaltReason(res.State)
	}
	data, _ := json.Marshal(map[string]any{"status": string(status), "reason": reason})
	u.Events = append(u.Events, store.Event{Tenant: d.run.Tenant, RunID: d.run.ID, Type: evType, Time: h.now(), Data: data})
	var serr error
	if _, err := h.store.UpdateRun(ctx, d.run.ID, u); err != nil {
		serr = fmt.Errorf("runs: storing the end of run %s: %w", d.run.ID, err)
	}
	if d.built.OnStop != nil {
		d.built.OnStop(ctx, d.run.ID, status)
	}
	if runErr != nil || serr != nil {
		return errors.Join(runErr, serr)
	}
	return nil
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
