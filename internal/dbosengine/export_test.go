package dbosengine

import (
	"context"
	"encoding/json"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"

	"github.com/tollgate-dev/tollgate/internal/runcore"
)

// AgeHeartbeat moves the last heartbeat of worker executorID, in the system
// database databaseURL, back by d: what d without a beat would do to a
// worker that stopped. It reports whether the worker still has a row (a
// reaper deletes the row of a worker it takes the runs of).
func AgeHeartbeat(ctx context.Context, databaseURL, executorID string, d time.Duration) (bool, error) {
	h, err := openTables(ctx, databaseURL, executorID)
	if err != nil {
		return false, err
	}
	defer h.close()
	const q = `UPDATE tollgate_workers SET beat_ms = beat_ms - $1 WHERE executor_id = $2`
	if h.pg != nil {
		tag, err := h.pg.Exec(ctx, q, d.Milliseconds(), executorID)
		return tag.RowsAffected() > 0, err
	}
	res, err := h.sql.ExecContext(ctx, q, d.Milliseconds(), executorID)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// PutStart stores the start of in on the default queue as claimed by
// executorID: what a worker that claimed it and died, before or after
// starting its workflow, leaves behind.
func PutStart(ctx context.Context, databaseURL, executorID string, in runcore.DurableRun) error {
	t, err := openTables(ctx, databaseURL, executorID)
	if err != nil {
		return err
	}
	defer t.close()
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	if _, err := t.dropStart(ctx, in.RunID); err != nil {
		return err
	}
	if err := t.addStart(ctx, DefaultQueue, in.RunID, b); err != nil {
		return err
	}
	_, err = ClaimStart(ctx, databaseURL, executorID, in.RunID)
	return err
}

// ClaimStart marks the start of runID claimed by executorID, as a worker's
// claim does; false when there is no such start.
func ClaimStart(ctx context.Context, databaseURL, executorID, runID string) (bool, error) {
	t, err := openTables(ctx, databaseURL, executorID)
	if err != nil {
		return false, err
	}
	defer t.close()
	n, err := t.exec(ctx, `UPDATE tollgate_starts SET claimed_by = $1 WHERE run_id = $2`, executorID, runID)
	return n > 0, err
}

// Starts returns the run IDs of the starts not yet removed.
func Starts(ctx context.Context, databaseURL string) ([]string, error) {
	t, err := openTables(ctx, databaseURL, "")
	if err != nil {
		return nil, err
	}
	defer t.close()
	var ids []string
	err = t.query(ctx, `SELECT run_id FROM tollgate_starts ORDER BY run_id`, func(scan func(...any) error) error {
		var id string
		err := scan(&id)
		ids = append(ids, id)
		return err
	})
	return ids, err
}

// StepNames returns the names of the steps DBOS recorded for the run's
// workflow, in order.
func StepNames(e *Engine, runID string) ([]string, error) {
	steps, err := dbos.GetWorkflowSteps(e.client, runID)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(steps))
	for i, s := range steps {
		names[i] = s.StepName
	}
	return names, nil
}
