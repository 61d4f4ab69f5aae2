package dbosengine

import (
	"context"
	"time"
)

// AgeHeartbeat moves the last heartbeat of worker executorID, in the system
// database databaseURL, back by d: what d without a beat would do to a
// worker that stopped. It reports whether the worker still has a row (a
// reaper deletes the row of a worker it takes the runs of).
func AgeHeartbeat(ctx context.Context, databaseURL, executorID string, d time.Duration) (bool, error) {
	h, err := openHeartbeat(ctx, databaseURL, executorID)
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
