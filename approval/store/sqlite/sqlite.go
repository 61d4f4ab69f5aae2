// Package sqlite is the durable [store.Store] on SQLite (modernc.org/sqlite, no
// cgo): one database file, by default .tollgate/tollgate.db under the working
// directory. Several processes may share the file: it runs in WAL mode with a
// busy timeout, every write is one IMMEDIATE transaction, and Decide, Consume
// and UpdateRun read and write inside it, so their checks are atomic across
// processes.
package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/approval/store"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// DefaultDir and DefaultFile make the default database path,
// .tollgate/tollgate.db.
const (
	DefaultDir  = ".tollgate"
	DefaultFile = "tollgate.db"
)

// BusyTimeout is how long a statement waits for another process's lock before
// it fails with SQLITE_BUSY.
const BusyTimeout = 10 * time.Second

const schemaVersion = 1

const schema = `
CREATE TABLE IF NOT EXISTS runs (
	id         TEXT PRIMARY KEY,
	status     TEXT NOT NULL,
	state      TEXT,
	result     TEXT,
	config     TEXT,
	created_at TEXT NOT NULL,
	updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_status ON runs(status);
CREATE TABLE IF NOT EXISTS approvals (
	seq        INTEGER PRIMARY KEY AUTOINCREMENT,
	run_id     TEXT NOT NULL REFERENCES runs(id),
	id         TEXT NOT NULL,
	call_id    TEXT NOT NULL,
	tool       TEXT NOT NULL,
	digest     TEXT NOT NULL,
	kind       TEXT NOT NULL,
	prompt     TEXT NOT NULL,
	request    TEXT NOT NULL,
	status     TEXT NOT NULL,
	decided_by TEXT NOT NULL DEFAULT '',
	reason     TEXT NOT NULL DEFAULT '',
	data       TEXT,
	created_at TEXT NOT NULL,
	updated_at TEXT NOT NULL,
	decided_at TEXT,
	used_at    TEXT,
	expires_at TEXT,
	UNIQUE (run_id, id)
);
CREATE INDEX IF NOT EXISTS approvals_status ON approvals(status);
CREATE INDEX IF NOT EXISTS approvals_id ON approvals(id);
`

// Store is the SQLite [store.Store]. Open it with [Open]; it is safe for
// concurrent use and for use by several processes on one file.
type Store struct {
	db   *sql.DB
	now  func() time.Time
	path string
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the database at path, creating its
// directory, and migrates the schema. The path must not contain '?'. Errors
// come from the file system and from SQLite; a database written by a newer
// schema version is refused.
func Open(ctx context.Context, path string, opts *store.Options) (*Store, error) {
	if strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("sqlite store: path %q must not contain '?'", path)
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("sqlite store: %w", err)
		}
	}
	dsn := fmt.Sprintf("file:%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate",
		path, BusyTimeout.Milliseconds())
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite store %s: %w", path, err)
	}
	s := &Store{db: db, now: opts.NowFunc(), path: path}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite store %s: %w", path, err)
	}
	return s, nil
}

// Path returns the database file's path.
func (s *Store) Path() string { return s.path }

func (s *Store) migrate(ctx context.Context) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		var v int
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
			return err
		}
		if v > schemaVersion {
			return fmt.Errorf("database schema version %d is newer than this program's %d", v, schemaVersion)
		}
		if _, err := tx.ExecContext(ctx, schema); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion))
		return err
	})
}

// tx runs fn in one IMMEDIATE transaction (the DSN's _txlock), committing when
// fn returns nil or an error marked with keep.
func (s *Store) tx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	err = fn(tx)
	var k keep
	if err != nil && !errors.As(err, &k) {
		tx.Rollback()
		return err
	}
	if cerr := tx.Commit(); cerr != nil {
		return cerr
	}
	if k.err != nil {
		return k.err
	}
	return nil
}

// keep marks an error whose transaction must still commit (an expiry that is
// recorded while the call fails).
type keep struct{ err error }

func (k keep) Error() string { return k.err.Error() }

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func tsPtr(t *time.Time) sql.NullString {
	if t == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: ts(*t), Valid: true}
}

func raw(b json.RawMessage) sql.NullString {
	if b == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: string(b), Valid: true}
}

func parseTS(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }

func parseTSPtr(n sql.NullString) (*time.Time, error) {
	if !n.Valid {
		return nil, nil
	}
	t, err := parseTS(n.String)
	return &t, err
}

func rawOf(n sql.NullString) json.RawMessage {
	if !n.Valid {
		return nil
	}
	return json.RawMessage(n.String)
}

func isUnique(err error) bool {
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
}

func (s *Store) insertApprovals(ctx context.Context, tx *sql.Tx, runID string, now time.Time, as []store.Approval) error {
	for _, a := range as {
		req, err := model.MarshalJSON(a.Request)
		if err != nil {
			return fmt.Errorf("approval %s: %w", a.ID, err)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO approvals
			(run_id, id, call_id, tool, digest, kind, prompt, request, status, created_at, updated_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			runID, a.ID, a.CallID, a.Tool, a.Digest, string(a.Kind), a.Prompt, string(req), string(store.StatusPending), ts(now), ts(now), tsPtr(a.ExpiresAt))
		if isUnique(err) {
			return fmt.Errorf("%w: approval %s of run %s", store.ErrExists, a.ID, runID)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// CreateRun implements [store.Store].
func (s *Store) CreateRun(ctx context.Context, run store.Run, approvals ...store.Approval) error {
	now := s.now()
	return s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO runs (id, status, state, result, config, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			run.ID, string(run.Status), raw(run.State), raw(run.Result), raw(run.Config), ts(now), ts(now))
		if isUnique(err) {
			return fmt.Errorf("%w: run %s", store.ErrExists, run.ID)
		}
		if err != nil {
			return err
		}
		return s.insertApprovals(ctx, tx, run.ID, now, approvals)
	})
}

// UpdateRun implements [store.Store].
func (s *Store) UpdateRun(ctx context.Context, run store.Run, from store.RunStatus, approvals ...store.Approval) error {
	now := s.now()
	return s.tx(ctx, func(tx *sql.Tx) error {
		var cur string
		err := tx.QueryRowContext(ctx, `SELECT status FROM runs WHERE id = ?`, run.ID).Scan(&cur)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: run %s", store.ErrNotFound, run.ID)
		}
		if err != nil {
			return err
		}
		if store.RunStatus(cur) != from {
			return fmt.Errorf("%w: run %s is %s, not %s", store.ErrConflict, run.ID, cur, from)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET status = ?, state = ?, result = ?, updated_at = ? WHERE id = ?`,
			string(run.Status), raw(run.State), raw(run.Result), ts(now), run.ID); err != nil {
			return err
		}
		return s.insertApprovals(ctx, tx, run.ID, now, approvals)
	})
}

type scanner interface{ Scan(dest ...any) error }

const runCols = `id, status, state, result, config, created_at, updated_at`

func scanRun(sc scanner) (store.Run, error) {
	var r store.Run
	var status, created, updated string
	var state, result, config sql.NullString
	if err := sc.Scan(&r.ID, &status, &state, &result, &config, &created, &updated); err != nil {
		return r, err
	}
	r.Status, r.State, r.Result, r.Config = store.RunStatus(status), rawOf(state), rawOf(result), rawOf(config)
	var err1, err2 error
	r.CreatedAt, err1 = parseTS(created)
	r.UpdatedAt, err2 = parseTS(updated)
	return r, errors.Join(err1, err2)
}

// GetRun implements [store.Store].
func (s *Store) GetRun(ctx context.Context, id string) (store.Run, error) {
	r, err := scanRun(s.db.QueryRowContext(ctx, `SELECT `+runCols+` FROM runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("%w: run %s", store.ErrNotFound, id)
	}
	return r, err
}

// ListRuns implements [store.Store].
func (s *Store) ListRuns(ctx context.Context, f store.RunFilter) ([]store.Run, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+runCols+` FROM runs WHERE (? = '' OR status = ?) ORDER BY created_at, rowid`, string(f.Status), string(f.Status))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

const approvalCols = `run_id, id, call_id, tool, digest, kind, prompt, request, status, decided_by, reason, data, created_at, updated_at, decided_at, used_at, expires_at`

func scanApproval(sc scanner) (store.Approval, error) {
	var a store.Approval
	var kind, req, status, created, updated string
	var data, decided, used, expires sql.NullString
	if err := sc.Scan(&a.RunID, &a.ID, &a.CallID, &a.Tool, &a.Digest, &kind, &a.Prompt, &req, &status, &a.DecidedBy, &a.Reason, &data, &created, &updated, &decided, &used, &expires); err != nil {
		return a, err
	}
	a.Kind, a.Status, a.Data = tool.Kind(kind), store.Status(status), rawOf(data)
	errs := []error{json.Unmarshal([]byte(req), &a.Request)}
	var err error
	a.CreatedAt, err = parseTS(created)
	errs = append(errs, err)
	a.UpdatedAt, err = parseTS(updated)
	errs = append(errs, err)
	a.DecidedAt, err = parseTSPtr(decided)
	errs = append(errs, err)
	a.UsedAt, err = parseTSPtr(used)
	errs = append(errs, err)
	a.ExpiresAt, err = parseTSPtr(expires)
	errs = append(errs, err)
	return a, errors.Join(errs...)
}

func getApproval(ctx context.Context, q interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}, runID, id string) (store.Approval, error) {
	a, err := scanApproval(q.QueryRowContext(ctx, `SELECT `+approvalCols+` FROM approvals WHERE run_id = ? AND id = ?`, runID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("%w: approval %s of run %s", store.ErrNotFound, id, runID)
	}
	return a, err
}

// GetApproval implements [store.Store].
func (s *Store) GetApproval(ctx context.Context, runID, id string) (store.Approval, error) {
	return getApproval(ctx, s.db, runID, id)
}

// ListApprovals implements [store.Store].
func (s *Store) ListApprovals(ctx context.Context, f store.ApprovalFilter) ([]store.Approval, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+approvalCols+` FROM approvals
		WHERE (? = '' OR run_id = ?) AND (? = '' OR id = ?) AND (? = '' OR status = ?) ORDER BY seq`,
		f.RunID, f.RunID, f.ID, f.ID, string(f.Status), string(f.Status))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Approval
	for rows.Next() {
		a, err := scanApproval(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// transition loads an approval, applies a state machine step and writes the
// result back, in one transaction; an expiry is written and returned.
func (s *Store) transition(ctx context.Context, runID, id string, step func(store.Approval, time.Time) (store.Approval, error)) (store.Approval, error) {
	var out store.Approval
	err := s.tx(ctx, func(tx *sql.Tx) error {
		a, err := getApproval(ctx, tx, runID, id)
		if err != nil {
			return err
		}
		next, serr := step(a, s.now())
		out = next
		if serr != nil && !errors.Is(serr, store.ErrExpired) {
			return serr
		}
		if _, err := tx.ExecContext(ctx, `UPDATE approvals SET status = ?, decided_by = ?, reason = ?, data = ?, updated_at = ?, decided_at = ?, used_at = ?
			WHERE run_id = ? AND id = ?`,
			string(next.Status), next.DecidedBy, next.Reason, raw(next.Data), ts(next.UpdatedAt), tsPtr(next.DecidedAt), tsPtr(next.UsedAt), runID, id); err != nil {
			return err
		}
		if serr != nil {
			return keep{serr}
		}
		return nil
	})
	return out, err
}

// Decide implements [store.Store].
func (s *Store) Decide(ctx context.Context, runID, id string, d store.Decision) (store.Approval, error) {
	return s.transition(ctx, runID, id, func(a store.Approval, now time.Time) (store.Approval, error) {
		return store.ApplyDecision(a, d, now)
	})
}

// Consume implements [store.Store].
func (s *Store) Consume(ctx context.Context, runID, id, digest string) (store.Approval, error) {
	return s.transition(ctx, runID, id, func(a store.Approval, now time.Time) (store.Approval, error) {
		return store.ApplyConsume(a, digest, now)
	})
}

// Close implements [store.Store]: it closes the database.
func (s *Store) Close() error { return s.db.Close() }
