package dbosengine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// tables are tollgate's own tables in DBOS's system database, next to
// DBOS's: the live workers (tollgate_workers, their heartbeats) and the
// runs waiting for a worker (tollgate_starts).
type tables struct {
	id  string // this executor's ID; empty for an engine that only enqueues
	pg  *pgxpool.Pool
	sql *sql.DB
}

const workersTable = `CREATE TABLE IF NOT EXISTS tollgate_workers (
	executor_id TEXT PRIMARY KEY,
	app_version TEXT NOT NULL,
	beat_ms BIGINT NOT NULL)`

// startsTable holds a row per run stored and not yet started as a DBOS
// workflow: claimed_by names the worker starting it (NULL: free). The row
// goes once the workflow exists; a dead worker's claims are freed by the
// worker that reaps it.
const startsTable = `CREATE TABLE IF NOT EXISTS tollgate_starts (
	run_id TEXT PRIMARY KEY,
	queue TEXT NOT NULL,
	app_version TEXT NOT NULL,
	input TEXT NOT NULL,
	created_ms BIGINT NOT NULL,
	claimed_by TEXT)`

// startsChannel is the PostgreSQL NOTIFY channel on which a start (or a
// freed claim) wakes the workers.
const startsChannel = "tollgate_starts"

func openTables(ctx context.Context, url, id string) (*tables, error) {
	t := &tables{id: id}
	if path, ok := strings.CutPrefix(url, "sqlite:"); ok {
		db, err := sql.Open("sqlite", "file:"+strings.TrimPrefix(path, "//")+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
		if err != nil {
			return nil, fmt.Errorf("dbosengine: tollgate's tables: %w", err)
		}
		db.SetMaxOpenConns(1)
		t.sql = db
	} else {
		p, err := pgxpool.New(ctx, url)
		if err != nil {
			return nil, fmt.Errorf("dbosengine: tollgate's tables: %w", err)
		}
		t.pg = p
	}
	for _, q := range []string{workersTable, startsTable} {
		if _, err := t.exec(ctx, q); err != nil {
			t.close()
			return nil, fmt.Errorf("dbosengine: tollgate's tables: %w", err)
		}
	}
	return t, nil
}

func (t *tables) close() {
	if t.pg != nil {
		t.pg.Close()
	}
	if t.sql != nil {
		t.sql.Close()
	}
}

// exec runs q, with NOW_MS replaced by the database's clock in
// milliseconds, and returns the number of rows it changed.
func (t *tables) exec(ctx context.Context, q string, args ...any) (int64, error) {
	if t.pg != nil {
		tag, err := t.pg.Exec(ctx, strings.Replace(q, "NOW_MS", pgNow, 1), args...)
		return tag.RowsAffected(), err
	}
	res, err := t.sql.ExecContext(ctx, strings.Replace(q, "NOW_MS", sqliteNow, 1), args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// query runs q (NOW_MS as for exec) and calls scan for each row.
func (t *tables) query(ctx context.Context, q string, scan func(func(...any) error) error, args ...any) error {
	if t.pg != nil {
		rows, err := t.pg.Query(ctx, strings.Replace(q, "NOW_MS", pgNow, 1), args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if err := scan(rows.Scan); err != nil {
				return err
			}
		}
		return rows.Err()
	}
	rows, err := t.sql.QueryContext(ctx, strings.Replace(q, "NOW_MS", sqliteNow, 1), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}

// The database's clock decides, so that workers' clocks need not agree.
const (
	pgNow     = `(extract(epoch from clock_timestamp()) * 1000)::bigint`
	sqliteNow = `CAST(unixepoch('subsec') * 1000 AS INTEGER)`
)

// beat records that this worker is alive.
func (t *tables) beat(ctx context.Context) error {
	_, err := t.exec(ctx, `INSERT INTO tollgate_workers (executor_id, app_version, beat_ms) VALUES ($1, $2, NOW_MS)
		ON CONFLICT (executor_id) DO UPDATE SET beat_ms = excluded.beat_ms, app_version = excluded.app_version`, t.id, ApplicationVersion)
	if err != nil {
		return fmt.Errorf("dbosengine: heartbeat: %w", err)
	}
	return nil
}

// reap removes the workers of this version whose heartbeat is older than
// deadAfter and returns them; a row is removed by one reaper only.
func (t *tables) reap(ctx context.Context, deadAfter time.Duration) ([]string, error) {
	var ids []string
	err := t.query(ctx, `DELETE FROM tollgate_workers WHERE app_version = $1 AND executor_id <> $2 AND beat_ms < NOW_MS - $3 RETURNING executor_id`,
		func(scan func(...any) error) error {
			var id string
			err := scan(&id)
			ids = append(ids, id)
			return err
		}, ApplicationVersion, t.id, deadAfter.Milliseconds())
	return ids, err
}

// addStart stores the run's start on queue (its workflow input, JSON) and,
// on PostgreSQL, notifies the workers in the same statement. A second
// start of one run is a no-op.
func (t *tables) addStart(ctx context.Context, queue, runID string, input []byte) error {
	const ins = `INSERT INTO tollgate_starts (run_id, queue, app_version, input, created_ms) VALUES ($1, $2, $3, $4, NOW_MS) ON CONFLICT (run_id) DO NOTHING`
	q := ins
	if t.pg != nil {
		q = `WITH ins AS (` + ins + ` RETURNING 1) SELECT pg_notify('` + startsChannel + `', '') FROM ins`
	}
	_, err := t.exec(ctx, q, runID, queue, ApplicationVersion, string(input))
	return err
}

// claimedStart is a start a worker claimed: the run and its workflow input.
type claimedStart struct {
	runID string
	input []byte
}

// claimStarts claims up to n free starts of queue, oldest first, for this
// worker. On PostgreSQL, workers claiming at once skip each other's rows.
func (t *tables) claimStarts(ctx context.Context, queue string, n int) ([]claimedStart, error) {
	lock := ""
	if t.pg != nil {
		lock = " FOR UPDATE SKIP LOCKED"
	}
	var out []claimedStart
	err := t.query(ctx, `UPDATE tollgate_starts SET claimed_by = $1 WHERE run_id IN (
		SELECT run_id FROM tollgate_starts WHERE queue = $2 AND app_version = $3 AND claimed_by IS NULL
		ORDER BY created_ms, run_id LIMIT $4`+lock+`) RETURNING run_id, input`,
		func(scan func(...any) error) error {
			var c claimedStart
			var input string
			err := scan(&c.runID, &input)
			c.input = []byte(input)
			out = append(out, c)
			return err
		}, t.id, queue, ApplicationVersion, n)
	return out, err
}

// doneStart removes this worker's claimed start of runID once its workflow
// exists; false when the row was no longer there (the run was cancelled
// meanwhile).
func (t *tables) doneStart(ctx context.Context, runID string) (bool, error) {
	n, err := t.exec(ctx, `DELETE FROM tollgate_starts WHERE run_id = $1 AND claimed_by = $2`, runID, t.id)
	return n > 0, err
}

// dropStart removes the start of runID, claimed or not; true when there
// was one.
func (t *tables) dropStart(ctx context.Context, runID string) (bool, error) {
	n, err := t.exec(ctx, `DELETE FROM tollgate_starts WHERE run_id = $1`, runID)
	return n > 0, err
}

// releaseStart frees this worker's claim on the start of runID, for
// another try, at the next sweep (not notified: a start that fails again
// at once would be tried in a loop).
func (t *tables) releaseStart(ctx context.Context, runID string) error {
	_, err := t.exec(ctx, `UPDATE tollgate_starts SET claimed_by = NULL WHERE run_id = $1 AND claimed_by = $2`, runID, t.id)
	return err
}

// releaseStarts frees the starts claimed by the given workers (dead ones,
// or this one restarted) and wakes the workers when there were any.
func (t *tables) releaseStarts(ctx context.Context, executorIDs ...string) error {
	var total int64
	for _, id := range executorIDs {
		n, err := t.exec(ctx, `UPDATE tollgate_starts SET claimed_by = NULL WHERE claimed_by = $1`, id)
		if err != nil {
			return err
		}
		total += n
	}
	if total > 0 && t.pg != nil {
		_, err := t.pg.Exec(ctx, `SELECT pg_notify('`+startsChannel+`', '')`)
		return err
	}
	return nil
}

// errNoListener: the system database is not PostgreSQL.
var errNoListener = errors.New("dbosengine: no LISTEN on this database")

// listen calls woken whenever a start is notified on PostgreSQL, and
// listening(true) once its LISTEN is in place (a start notified before
// that is found by the claim that follows), listening(false) when the
// connection is lost. It returns when ctx ends or the connection fails.
func (t *tables) listen(ctx context.Context, listening func(bool), woken func()) error {
	if t.pg == nil {
		return errNoListener
	}
	c, err := t.pg.Acquire(ctx)
	if err != nil {
		return err
	}
	// The connection keeps its LISTEN: it never goes back to the pool.
	conn := c.Hijack()
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+startsChannel); err != nil {
		return err
	}
	listening(true)
	defer listening(false)
	woken()
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		woken()
	}
}
