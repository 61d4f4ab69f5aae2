// Package sqlite is the durable [store.Store] on SQLite (modernc.org/sqlite, no
// cgo): one database file. Several processes may share the file: it runs in
// WAL mode with a busy timeout of ten seconds, and every write runs in an
// IMMEDIATE transaction that takes the database's write lock before it reads,
// so Decide, Consume, ClaimRun, RenewLease and UpdateRun check and write
// atomically across processes.
//
// # Event order
//
// Because every write holds the one write lock from its first read to its
// commit, writes are serialised: event sequence numbers (an AUTOINCREMENT key,
// never reused) are assigned and committed in order, so a reader never sees
// sequence number n+1 before n.
//
// # Connections and batches
//
// A store keeps a bounded pool of connections open for its reads (eight,
// all of them kept when idle: a new connection opens the file and runs its
// pragmas again), and one more connection for its writes: SQLite has one
// writer, and the writes of one process queue in the store rather than on
// SQLite's busy handler, which sleeps and retries. A writer never waits for
// a connection that readers hold (WAL: readers never wait for the writer
// either). The writes that queue while a transaction commits are made
// together in the next one, each in a savepoint of its own that a failure
// rolls back alone: one COMMIT, and each page written once, for all of
// them (batch.go). A write returns once its transaction has committed.
//
// # Waiting
//
// WaitEvents is woken at once by writes through the same store, and
// otherwise polls the database (another process may write the file), first
// after 10 ms, then backing off to 250 ms.
//
// # Schema
//
// The schema is versioned: embedded migrations (migrations/*.sql) run in
// order, in one transaction, when a database is opened, and the version is
// kept in the schema_version table (and in PRAGMA user_version, which older
// programs check, so that they refuse a newer file). A database of version 1
// (user_version 1, no schema_version table) is migrated in place, keeping its
// runs and approvals in the default tenant. A database of a newer version is
// refused.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-dev/tollgate/internal/bounded"
	"github.com/tollgate-dev/tollgate/internal/jsonenc"
	"github.com/tollgate-dev/tollgate/internal/nofollow"
	"github.com/tollgate-dev/tollgate/internal/sqlmigrate"
	"github.com/tollgate-dev/tollgate/internal/storeimpl"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// busyTimeout is how long a statement waits for another process's lock before
// it fails with SQLITE_BUSY.
const busyTimeout = 10 * time.Second

// maxConns is how many connections a sqliteStore keeps open to its file for
// reads; its writes have one more of their own.
const maxConns = 8

// minPoll and maxPoll bound the interval at which WaitEvents polls the
// database for events written by other processes: it starts at minPoll and
// doubles up to maxPoll.
const (
	minPoll = 10 * time.Millisecond
	maxPoll = 250 * time.Millisecond
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrations returns the embedded migrations in order; migration i (from 0)
// brings the schema to version i+1.
func migrations() ([]string, error) { return sqlmigrate.Load(migrationFS) }

// schemaVersion is the schema version this package writes.
const schemaVersion = 6

// sqliteStore is the SQLite [store.Store]. Open it with [Open]; it is safe for
// concurrent use and for use by several processes on one file.
type sqliteStore struct {
	db   *sql.DB // for reads
	wdb  *sql.DB // one connection, for the one write at a time
	now  func() time.Time
	path string
	seal *storeimpl.Sealer

	// writes holds the writes waiting for the next batch (batch.go).
	writes writeQueue

	mu sync.Mutex
	// appended is closed and replaced after every commit that appended
	// events through this sqliteStore, to wake WaitEvents.
	appended chan struct{}
	// written is the largest event Seq this sqliteStore inserted or found
	// at Open (set before the insert commits): a WaitEvents after it has
	// nothing of this process's to find, and polls only for other
	// processes' events instead of asking the database at once.
	written atomic.Int64
	// firstPoll is WaitEvents' first poll interval (minPoll; tests set
	// it), and waitQueries counts the queries WaitEvents made.
	firstPoll   time.Duration
	waitQueries atomic.Int64
}

var _ store.Store = (*sqliteStore)(nil)

// Open opens (creating if needed) the database at path, creating its
// directory, and migrates the schema. The path must not contain '?'. Errors
// come from the file system and from SQLite; a database written by a newer
// schema version is refused. The store also keeps the rule layer that
// the server and the command edit and apply.
func Open(ctx context.Context, path string, opts *store.Options) (store.Store, error) {
	if strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("sqlite store: path %q must not contain '?'", path)
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("sqlite store: %w", err)
		}
	}
	if err := ownerOnly(path); err != nil {
		return nil, fmt.Errorf("sqlite store: %w", err)
	}
	dsn := fmt.Sprintf("file:%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate",
		path, busyTimeout.Milliseconds())
	// Each connection keeps the statements it prepared (stmtcache.go).
	conn, err := newCachingConnector(dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite store %s: %w", path, err)
	}
	seal, err := storeimpl.NewSealer(opts)
	if err != nil {
		return nil, fmt.Errorf("sqlite store %s: %w", path, err)
	}
	db, wdb := sql.OpenDB(conn), sql.OpenDB(conn)
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	s := &sqliteStore{db: db, wdb: wdb, now: storeimpl.Now(opts), path: path, seal: seal, appended: make(chan struct{}), firstPoll: minPoll}
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlite store %s: %w", path, err)
	}
	var last int64
	if err := db.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM events`).Scan(&last); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlite store %s: %w", path, err)
	}
	s.written.Store(last)
	return s, nil
}

// ownerOnly makes the database file at path (created empty when missing)
// readable and writable by its owner only, as are then the write-ahead log
// and shared memory files SQLite creates next to it, which take the
// database's mode: the store holds transcripts, tool arguments and outputs,
// which no other local user may read, whatever the directory allows. A
// file made by an earlier version with a wider mode is narrowed; a file
// this process does not own is left as it is.
//
// A database path whose last element is a symbolic link is refused: the
// state directory may lie in the workspace, where a tool could have put a
// link to a file of the user's, which the store would then create, narrow
// and overwrite.
func ownerOnly(path string) error {
	f, err := nofollow.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := f.Chmod(fi.Mode().Perm() &^ 0o077); err != nil && !errors.Is(err, os.ErrPermission) {
			return err
		}
		// The log and shared memory an earlier version left, if any.
		for _, suffix := range []string{"-wal", "-shm", "-journal"} {
			if fi, err := os.Stat(path + suffix); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o077 != 0 {
				_ = os.Chmod(path+suffix, fi.Mode().Perm()&^0o077)
			}
		}
	}
	return nil
}

// version returns the schema version of the database: schema_version's, or
// user_version for a file of version 1 (or an empty one, 0).
func version(ctx context.Context, tx *sql.Tx) (int, error) {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'`).Scan(&n); err != nil {
		return 0, err
	}
	var v int
	if n == 0 {
		err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
		return v, err
	}
	err := tx.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("reading schema_version: %w", err)
	}
	return v, nil
}

func (s *sqliteStore) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	if len(ms) != schemaVersion {
		return fmt.Errorf("%d embedded migrations, want %d", len(ms), schemaVersion)
	}
	return s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		v, err := version(ctx, tx)
		if err != nil {
			return err
		}
		if v > schemaVersion {
			return fmt.Errorf("database schema version %d is newer than this program's %d", v, schemaVersion)
		}
		if v == schemaVersion {
			return nil
		}
		for i := v; i < len(ms); i++ {
			if _, err := tx.ExecContext(ctx, ms[i]); err != nil {
				return fmt.Errorf("migrating the schema to version %d: %w", i+1, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
			DELETE FROM schema_version;`); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (?)`, schemaVersion); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion))
		return err
	})
}

// notify wakes the WaitEvents calls of this sqliteStore. The channel is
// swapped under the lock and closed after it: closing wakes every waiter,
// and each write calls notify, so that waking many while holding the lock
// made the writers queue for it.
func (s *sqliteStore) notify() {
	s.mu.Lock()
	woken := s.appended
	s.appended = make(chan struct{})
	s.mu.Unlock()
	close(woken)
}

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

// Limits of every JSON document read back from the database (a run's state,
// result and configuration, an approval's request and data, an event's
// data): 256 MiB, nested at most 1000 deep (a model's own arguments may nest
// deeply). A document beyond them is refused before anything decodes it:
// the database file is written by other processes and is input like any
// other.
const (
	maxStoredDocument = 256 << 20
	maxStoredDepth    = 1000
)

var storedLimits = bounded.Limits{MaxBytes: maxStoredDocument, MaxDepth: maxStoredDepth}

// boundedOf is rawOf for a document that must lie within storedLimits; what
// names it in the error ("run RUN: state").
func boundedOf(what func() string, n sql.NullString) (json.RawMessage, error) {
	if !n.Valid {
		return nil, nil
	}
	if err := checkStored(what, n.String); err != nil {
		return nil, err
	}
	return json.RawMessage(n.String), nil
}

// checkStored checks the document doc against storedLimits
// (bounded.CheckJSON, which does not scan a document too short to nest
// past them); what names it in the error, and is called only then: most
// events and approvals are small, and each stream and follower reads them.
func checkStored(what func() string, doc string) error {
	err := bounded.CheckJSON("", []byte(doc), storedLimits)
	if e, ok := errors.AsType[*bounded.Error](err); ok {
		e.File = "sqlite: " + what()
	}
	return err
}

func isUnique(err error) bool {
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (s *sqliteStore) insertApprovals(ctx context.Context, tx *sql.Tx, run store.Run, now time.Time, as []store.Approval) error {
	for _, a := range as {
		a = storeimpl.NewApproval(a, run, now)
		req, err := jsonenc.Marshal(a.Request)
		if err != nil {
			return fmt.Errorf("approval %s: %w", a.ID, err)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO approvals
			(run_id, tenant, id, call_id, tool, digest, kind, prompt, request, status, created_at, updated_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			a.RunID, a.Tenant, a.ID, a.CallID, a.Tool, a.Digest, string(a.Kind), a.Prompt, string(req), string(a.Status), ts(now), ts(now), tsPtr(a.ExpiresAt))
		if isUnique(err) {
			return fmt.Errorf("%w: approval %s of run %s", store.ErrExists, a.ID, run.ID)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// insertEvents appends events in tx; run, when not nil, is the run they all
// belong to; otherwise each event's run (if any) is looked up.
func (s *sqliteStore) insertEvents(ctx context.Context, tx *sql.Tx, run *store.Run, now time.Time, evs []store.Event) ([]int64, error) {
	seqs := make([]int64, 0, len(evs))
	for _, ev := range evs {
		var tenant *string
		switch {
		case run != nil:
			ev.RunID, tenant = run.ID, &run.Tenant
		case ev.RunID != "":
			var t string
			err := tx.QueryRowContext(ctx, `SELECT tenant FROM runs WHERE id = ?`, ev.RunID).Scan(&t)
			if errors.Is(err, sql.ErrNoRows) {
				return nil, fmt.Errorf("%w: run %s of event %s", store.ErrNotFound, ev.RunID, ev.Type)
			}
			if err != nil {
				return nil, err
			}
			tenant = &t
		}
		ev, err := storeimpl.CheckEvent(ev, tenant, now)
		if err != nil {
			return nil, err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO events (tenant, run_id, type, time, data) VALUES (?, ?, ?, ?, ?)`,
			ev.Tenant, ev.RunID, ev.Type, ts(ev.Time), raw(ev.Data))
		if err != nil {
			return nil, err
		}
		seq, err := res.LastInsertId()
		if err != nil {
			return nil, err
		}
		s.wrote(seq)
		seqs = append(seqs, seq)
	}
	return seqs, nil
}

// CreateRun implements [store.Store].
func (s *sqliteStore) CreateRun(ctx context.Context, r store.CreateRunRequest) (store.Run, error) {
	now := s.now()
	run, err := storeimpl.NewRun(r, now)
	if err != nil {
		return store.Run{}, err
	}
	err = s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		holder, expires := leaseCols(run.Lease)
		_, err := tx.ExecContext(ctx, `INSERT INTO runs (id, tenant, owner, status, state, result, config, lease_holder, lease_token, lease_expires_at, version, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			run.ID, run.Tenant, run.Owner, string(run.Status), raw(run.State), raw(run.Result), raw(run.Config), holder, storeimpl.LeaseToken(run), expires, run.Version, ts(now), ts(now))
		if isUnique(err) {
			return fmt.Errorf("%w: run %s", store.ErrExists, run.ID)
		}
		if err != nil {
			return err
		}
		return storeimpl.AddRecords(ctx, runTx{s: s, tx: tx}, &run, now, r.Approvals, r.Events)
	})
	if err != nil {
		return store.Run{}, err
	}
	if len(r.Events) > 0 {
		s.notify()
	}
	return run, nil
}

func leaseCols(l *store.Lease) (holder, expires sql.NullString) {
	if l == nil {
		return
	}
	return sql.NullString{String: l.Holder, Valid: true}, sql.NullString{String: ts(l.ExpiresAt), Valid: true}
}

// runTx is a transaction as the methods that change a run use it
// ([storeimpl.RunTx]); the write lock taken when it began serialises it.
type runTx struct {
	s  *sqliteStore
	tx *sql.Tx
	// state and result are true when the change replaces the run's
	// document: LoadRun neither reads nor checks it (see runColsOf).
	state, result bool
}

// AddApprovals stores new pending approvals of run.
func (t runTx) AddApprovals(ctx context.Context, run store.Run, now time.Time, as []store.Approval) error {
	return t.s.insertApprovals(ctx, t.tx, run, now, as)
}

// AppendEvents appends events of run.
func (t runTx) AppendEvents(ctx context.Context, run *store.Run, now time.Time, evs []store.Event) error {
	_, err := t.s.insertEvents(ctx, t.tx, run, now, evs)
	return err
}

// WriteRun stores the mutable fields of r; lastToken is the largest token
// the run ever had.
func (t runTx) WriteRun(ctx context.Context, r *store.Run, lastToken int64) error {
	holder, expires := leaseCols(r.Lease)
	_, err := t.tx.ExecContext(ctx, `UPDATE runs SET status = ?, state = ?, result = ?, lease_holder = ?, lease_token = ?, lease_expires_at = ?, version = ?, updated_at = ?
		WHERE id = ?`,
		string(r.Status), raw(r.State), raw(r.Result), holder, lastToken, expires, r.Version, ts(r.UpdatedAt), r.ID)
	return err
}

// LoadRun reads run id, with the largest token it ever had, but for the
// documents the change replaces.
func (t runTx) LoadRun(ctx context.Context, id string) (store.Run, int64, error) {
	return loadRunCols(ctx, t.tx, id, runColsOf(t.state, t.result))
}

// runColsOfs are runCols with NULL in place of the state (index 1), the
// result (2), or both (3).
var runColsOfs = func() (out [4]string) {
	for i := range out {
		c := runCols
		if i&1 != 0 {
			c = strings.Replace(c, " state,", " NULL,", 1)
		}
		if i&2 != 0 {
			c = strings.Replace(c, " result,", " NULL,", 1)
		}
		out[i] = c
	}
	return out
}()

// runColsOf is runCols without the state and the result a change
// replaces: a write transaction does not read, and check, a document it
// is about to replace.
func runColsOf(state, result bool) string {
	i := 0
	if state {
		i |= 1
	}
	if result {
		i |= 2
	}
	return runColsOfs[i]
}

// loadRun reads run id with q, with the largest token it ever had.
func loadRun(ctx context.Context, q queryer, id string) (store.Run, int64, error) {
	return loadRunCols(ctx, q, id, runCols)
}

// loadRunCols is loadRun reading cols, runCols or one of runColsOf.
func loadRunCols(ctx context.Context, q queryer, id, cols string) (store.Run, int64, error) {
	r, last, err := scanRun(q.QueryRowContext(ctx, `SELECT `+cols+` FROM runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, 0, fmt.Errorf("%w: run %s", store.ErrNotFound, id)
	}
	return r, last, err
}

// UpdateRun implements [store.Store].
func (s *sqliteStore) UpdateRun(ctx context.Context, id string, u store.RunUpdate) (store.Run, error) {
	now := s.now()
	var out store.Run
	err := s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		out, err = storeimpl.UpdateRun(ctx, runTx{s: s, tx: tx, state: u.State != nil, result: u.Result != nil}, id, u, now)
		return err
	})
	if err != nil {
		return store.Run{}, err
	}
	if len(u.Events) > 0 {
		s.notify()
	}
	return out, nil
}

// ClaimRun implements [store.Store].
func (s *sqliteStore) ClaimRun(ctx context.Context, id string, c store.Claim) (store.Run, []store.Approval, error) {
	if err := storeimpl.CheckClaim(id, c); err != nil {
		return store.Run{}, nil, err
	}
	var out store.Run
	var used []store.Approval
	err := s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		out, used, err = storeimpl.ClaimRun(ctx, runTx{s: s, tx: tx}, id, c, s.now())
		return err
	})
	if err != nil {
		return store.Run{}, nil, err
	}
	if len(c.Events) > 0 || len(used) > 0 {
		s.notify()
	}
	return out, used, nil
}

// RenewLease implements [store.Store].
func (s *sqliteStore) RenewLease(ctx context.Context, id, holder string, token int64, ttl time.Duration) (store.Lease, error) {
	var out store.Lease
	err := s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		out, err = storeimpl.RenewLease(ctx, runTx{s: s, tx: tx}, id, holder, token, ttl, s.now())
		return err
	})
	return out, err
}

type scanner interface{ Scan(dest ...any) error }

const runCols = `seq, id, tenant, owner, status, state, result, config, lease_holder, lease_token, lease_expires_at, version, created_at, updated_at`

// scanRun reads a row of runCols; it returns the run and the largest lease
// token the run ever had. The row's seq is not returned (see scanRunPos).
func scanRun(sc scanner) (store.Run, int64, error) {
	r, last, _, err := scanRunPos(sc)
	return r, last, err
}

func scanRunPos(sc scanner) (store.Run, int64, int64, error) {
	var r store.Run
	var seq, token int64
	var status, created, updated string
	var state, result, config, holder, expires sql.NullString
	if err := sc.Scan(&seq, &r.ID, &r.Tenant, &r.Owner, &status, &state, &result, &config, &holder, &token, &expires, &r.Version, &created, &updated); err != nil {
		return r, 0, 0, err
	}
	r.Status = store.RunStatus(status)
	var errs []error
	for _, d := range []struct {
		name string
		src  sql.NullString
		dst  *json.RawMessage
	}{{"state", state, &r.State}, {"result", result, &r.Result}, {"config", config, &r.Config}} {
		var err error
		*d.dst, err = boundedOf(func() string { return "run " + r.ID + ": " + d.name }, d.src)
		errs = append(errs, err)
	}
	if holder.Valid {
		exp, err := parseTS(expires.String)
		errs = append(errs, err)
		r.Lease = &store.Lease{Holder: holder.String, Token: token, ExpiresAt: exp}
	}
	var err error
	r.CreatedAt, err = parseTS(created)
	errs = append(errs, err)
	r.UpdatedAt, err = parseTS(updated)
	errs = append(errs, err)
	return r, token, seq, errors.Join(errs...)
}

// GetRun implements [store.Store].
func (s *sqliteStore) GetRun(ctx context.Context, id string) (store.Run, error) {
	r, _, err := loadRun(ctx, s.db, id)
	return r, err
}

// ListRuns implements [store.Store].
func (s *sqliteStore) ListRuns(ctx context.Context, f store.RunFilter) (store.RunPage, error) {
	limit, err := storeimpl.PageLimit(f.Limit)
	if err != nil {
		return store.RunPage{}, err
	}
	kind := storeimpl.RunsCursorKind(f)
	from, err := storeimpl.DecodeCursor(kind, f.Cursor)
	if err != nil {
		return store.RunPage{}, err
	}
	q, args := runsQuery(f, from, limit+1)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return store.RunPage{}, err
	}
	defer rows.Close()
	var p store.RunPage
	p.Runs, p.Next, err = storeimpl.ReadPage(rows, limit, kind, func(rows storeimpl.Rows) (store.Run, int64, error) {
		r, _, seq, err := scanRunPos(rows)
		return r, seq, err
	})
	if err != nil {
		return store.RunPage{}, err
	}
	return p, nil
}

// DeleteRuns implements [store.Store].
func (s *sqliteStore) DeleteRuns(ctx context.Context, f store.PruneFilter) (int, error) {
	n := 0
	err := s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		now := s.now()
		rows, err := tx.QueryContext(ctx, `SELECT `+runCols+` FROM runs WHERE (? OR tenant = ?)`, f.AllTenants, f.Tenant)
		if err != nil {
			return err
		}
		var gone []string
		for rows.Next() {
			r, _, err := scanRun(rows)
			if err != nil {
				rows.Close()
				return err
			}
			if storeimpl.Prunable(r, f, now) {
				gone = append(gone, r.ID)
			}
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
		for _, id := range gone {
			for _, q := range []string{`DELETE FROM events WHERE run_id = ?`, `DELETE FROM approvals WHERE run_id = ?`, `DELETE FROM runs WHERE id = ?`} {
				if _, err := tx.ExecContext(ctx, q, id); err != nil {
					return err
				}
			}
		}
		n = len(gone)
		return nil
	})
	return n, err
}

const approvalCols = `seq, run_id, tenant, id, call_id, tool, digest, kind, prompt, request, status, decided_by, actor, reason, data, created_at, updated_at, decided_at, used_at, expires_at, mac`

func scanApproval(sc scanner) (store.Approval, int64, error) {
	var a store.Approval
	var seq int64
	var kind, req, status, created, updated, decidedBy, actor string
	var data, decided, used, expires sql.NullString
	if err := sc.Scan(&seq, &a.RunID, &a.Tenant, &a.ID, &a.CallID, &a.Tool, &a.Digest, &kind, &a.Prompt, &req, &status, &decidedBy, &actor, &a.Reason, &data, &created, &updated, &decided, &used, &expires, &a.MAC); err != nil {
		return a, 0, err
	}
	a.Kind, a.Status = tool.Kind(kind), store.Status(status)
	a.DecidedBy, a.Actor = storeimpl.PrincipalsFromText(decidedBy, actor)
	what := func(doc string) func() string {
		return func() string { return "approval " + a.ID + " of run " + a.RunID + ": " + doc }
	}
	var errs []error
	var err error
	a.Data, err = boundedOf(what("data"), data)
	errs = append(errs, err)
	if err = checkStored(what("request"), req); err == nil {
		err = json.Unmarshal([]byte(req), &a.Request)
	}
	errs = append(errs, err)
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
	return a, seq, errors.Join(errs...)
}

func getApproval(ctx context.Context, q queryer, runID, id string) (store.Approval, error) {
	a, _, err := scanApproval(q.QueryRowContext(ctx, `SELECT `+approvalCols+` FROM approvals WHERE run_id = ? AND id = ?`, runID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("%w: approval %s of run %s", store.ErrNotFound, id, runID)
	}
	return a, err
}

// GetApproval implements [store.Store].
func (s *sqliteStore) GetApproval(ctx context.Context, runID, id string) (store.Approval, error) {
	a, err := getApproval(ctx, s.db, runID, id)
	return s.seal.Check(a), err
}

// ListApprovals implements [store.Store].
func (s *sqliteStore) ListApprovals(ctx context.Context, f store.ApprovalFilter) (store.ApprovalPage, error) {
	limit, err := storeimpl.PageLimit(f.Limit)
	if err != nil {
		return store.ApprovalPage{}, err
	}
	after, err := storeimpl.DecodeCursor("approvals", f.Cursor)
	if err != nil {
		return store.ApprovalPage{}, err
	}
	q, args := approvalsQuery(f, after, limit+1)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return store.ApprovalPage{}, err
	}
	defer rows.Close()
	var p store.ApprovalPage
	p.Approvals, p.Next, err = storeimpl.ReadPage(rows, limit, "approvals", s.scanChecked)
	if err != nil {
		return store.ApprovalPage{}, err
	}
	return p, nil
}

// scanChecked reads a row of approvalCols, its seal checked, and its
// position.
func (s *sqliteStore) scanChecked(rows storeimpl.Rows) (store.Approval, int64, error) {
	a, seq, err := scanApproval(rows)
	return s.seal.Check(a), seq, err
}

func writeApproval(ctx context.Context, tx *sql.Tx, a store.Approval) error {
	_, err := tx.ExecContext(ctx, `UPDATE approvals SET status = ?, decided_by = ?, actor = ?, reason = ?, data = ?, updated_at = ?, decided_at = ?, used_at = ?, mac = ?
		WHERE run_id = ? AND id = ?`,
		string(a.Status), storeimpl.PrincipalText(a.DecidedBy), storeimpl.PrincipalText(a.Actor), a.Reason, raw(a.Data), ts(a.UpdatedAt), tsPtr(a.DecidedAt), tsPtr(a.UsedAt), a.MAC, a.RunID, a.ID)
	return err
}

// transition applies t to one approval in one transaction and appends its
// event; an expiry is stored, other errors change nothing.
func (s *sqliteStore) transition(ctx context.Context, runID, id string, t storeimpl.Transition) (store.Approval, error) {
	var out store.Approval
	appended := false
	err := s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var serr error
		out, appended, serr = s.transitionIn(ctx, tx, nil, runID, id, t, s.now())
		if !storeimpl.Kept(serr) {
			return serr
		}
		return storeimpl.Outcome(serr)
	})
	if appended {
		s.notify()
	}
	return out, err
}

// transitionIn applies t at now to one approval in tx and, when
// [storeimpl.Kept] says so, stores it and its event (of run, when not nil),
// reporting whether it appended one. It returns the step's error, or the
// store's.
func (s *sqliteStore) transitionIn(ctx context.Context, tx *sql.Tx, run *store.Run, runID, id string, t storeimpl.Transition, now time.Time) (store.Approval, bool, error) {
	a, err := getApproval(ctx, tx, runID, id)
	if err != nil {
		return a, false, err
	}
	next, evs, serr := t.Apply(s.seal, a, now)
	if !storeimpl.Kept(serr) {
		return next, false, serr
	}
	if err := writeApproval(ctx, tx, next); err != nil {
		return next, false, err
	}
	if _, err := s.insertEvents(ctx, tx, run, now, evs); err != nil {
		return next, false, err
	}
	return next, len(evs) > 0, serr
}

// Transition applies t to the approval id of run in the transaction
// ([storeimpl.RunTx]).
func (t runTx) Transition(ctx context.Context, run store.Run, id string, tr storeimpl.Transition, now time.Time) (store.Approval, error) {
	a, _, err := t.s.transitionIn(ctx, t.tx, &run, run.ID, id, tr, now)
	return a, err
}

// Decide implements [store.Store].
func (s *sqliteStore) Decide(ctx context.Context, runID, id string, d store.Answer) (store.Approval, error) {
	return s.transition(ctx, runID, id, storeimpl.Decision(d))
}

// Consume implements [store.Store].
func (s *sqliteStore) Consume(ctx context.Context, runID, id, digest string) (store.Approval, error) {
	return storeimpl.Consume(digest, func(t storeimpl.Transition) (store.Approval, error) { return s.transition(ctx, runID, id, t) })
}

// expiryMargin is how far past now ExpireApprovals's SQL filter reaches,
// beyond the millisecond rounding of SQLite's julianday.
const expiryMargin = time.Second

// ExpireApprovals implements [store.Store]: the approvals due are found in
// SQL (by the status index and julianday of expires_at), not by decoding
// every pending one.
func (s *sqliteStore) ExpireApprovals(ctx context.Context) ([]store.Approval, error) {
	var out []store.Approval
	err := s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		now := s.now()
		// Only the approvals due are read and decoded. SQLite's date
		// functions keep milliseconds: the SQL bound is a second late,
		// and Approval.Expired decides to the nanosecond.
		rows, err := tx.QueryContext(ctx, `SELECT `+approvalCols+` FROM approvals
			WHERE status IN (?, ?) AND expires_at IS NOT NULL AND julianday(expires_at) <= julianday(?) ORDER BY seq`,
			string(store.StatusPending), string(store.StatusApproved), ts(now.Add(expiryMargin)))
		if err != nil {
			return err
		}
		var due []store.Approval
		for rows.Next() {
			a, _, err := scanApproval(rows)
			if err != nil {
				rows.Close()
				return err
			}
			if a.Expired(now) {
				due = append(due, storeimpl.Expire(s.seal, a, now))
			}
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
		var evs []store.Event
		for _, a := range due {
			if err := writeApproval(ctx, tx, a); err != nil {
				return err
			}
			evs = append(evs, storeimpl.ApprovalEventOf(a))
		}
		if _, err := s.insertEvents(ctx, tx, nil, now, evs); err != nil {
			return err
		}
		out = due
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) > 0 {
		s.notify()
	}
	return out, nil
}

// AppendEvents implements [store.Store].
func (s *sqliteStore) AppendEvents(ctx context.Context, evs ...store.Event) ([]int64, error) {
	if len(evs) == 0 {
		return nil, nil
	}
	var seqs []int64
	err := s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		seqs, err = s.insertEvents(ctx, tx, nil, s.now(), evs)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.notify()
	return seqs, nil
}

// ListEvents implements [store.Store].
func (s *sqliteStore) ListEvents(ctx context.Context, f store.EventFilter) ([]store.Event, error) {
	limit, err := storeimpl.PageLimit(f.Limit)
	if err != nil {
		return nil, err
	}
	q, args := eventsQuery(f, limit)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Event
	for rows.Next() {
		var e store.Event
		var t string
		var data sql.NullString
		if err := rows.Scan(&e.Seq, &e.Tenant, &e.RunID, &e.Type, &t, &data); err != nil {
			return nil, err
		}
		if e.Data, err = boundedOf(func() string { return fmt.Sprintf("event %d: data", e.Seq) }, data); err != nil {
			return nil, err
		}
		if e.Time, err = parseTS(t); err != nil {
			return nil, fmt.Errorf("event %d: %w", e.Seq, err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// WaitEvents implements [store.Store]: writes through this sqliteStore wake it at
// once; writes by other processes are seen by polling, every [minPoll] at
// first, backing off to [maxPoll].
//
// It asks the database when this process wrote an event after f.AfterSeq
// (woken by the commit), and at each poll (other processes' events); a
// waiter after every event this process wrote waits for one first: a
// follower that has just read the log found nothing there at each call.
func (s *sqliteStore) WaitEvents(ctx context.Context, f store.EventFilter) error {
	poll := s.firstPoll
	timer := time.NewTimer(poll)
	defer timer.Stop()
	polled := false
	for {
		s.mu.Lock()
		woken := s.appended
		s.mu.Unlock()
		if polled || f.AfterSeq < s.written.Load() {
			var one int
			w := eventsWhere(f)
			s.waitQueries.Add(1)
			err := s.db.QueryRowContext(ctx, `SELECT 1 FROM events WHERE `+w.String()+` LIMIT 1`, w.args...).Scan(&one)
			switch {
			case err == nil:
				return nil
			case ctx.Err() != nil:
				return ctx.Err()
			case !errors.Is(err, sql.ErrNoRows):
				return err
			}
		}
		timer.Reset(poll)
		polled = false
		select {
		case <-woken:
		case <-timer.C:
			poll = min(2*poll, maxPoll)
			polled = true
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// wrote notes that this process inserted the event seq.
func (s *sqliteStore) wrote(seq int64) {
	for {
		cur := s.written.Load()
		if seq <= cur || s.written.CompareAndSwap(cur, seq) {
			return
		}
	}
}

// Close implements [store.Store]: it closes the database.
func (s *sqliteStore) Close() error { return errors.Join(s.db.Close(), s.wdb.Close()) }
