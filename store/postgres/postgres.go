// Package postgres is the [store.Store] on PostgreSQL (github.com/jackc/pgx/v5,
// a pgxpool of connections), for several processes or machines sharing one
// store. It passes the shared store suite (package storetest) with the same
// semantics as the SQLite store.
//
// # Transactions and locks
//
// Every write is one transaction at PostgreSQL's default isolation (read
// committed) that locks the rows it changes before it reads them: Decide and
// Consume lock the approval (SELECT ... FOR UPDATE), ClaimRun, RenewLease and
// UpdateRun the run (FOR NO KEY UPDATE), so that the check and the write are
// atomic across processes and exactly one of several concurrent claimants or
// deciders wins. Locks are always taken in one order (runs, sorted by ID;
// then approvals; then the counters below), and no approval or event of a
// run is touched unless its run is locked (a run deleted while its lock
// waited is looked up again, or left alone), so that a DeleteRuns, which
// locks its runs before its deletion cascades to their approvals and
// events, never meets a row held by a writer waiting for one of its runs.
// PostgreSQL can still pick a deadlock's victim among transactions that
// lock the old and the new version of a run just updated; such a write is
// run again (three attempts in all).
//
// # Event order
//
// Runs, approvals and events get their positions (the cursor positions of
// runs and approvals, an event's Seq) from one counter row each, which a
// transaction increments and so locks until it commits: writers of the same
// kind are serialised, and positions are committed in increasing order. A
// reader therefore never sees event n+1 before event n, and a page cursor
// never skips a record committed after it. The event counter is taken last,
// just before the events are inserted, to keep the serialised part short.
//
// # Waiting
//
// A transaction that appends events also sends a NOTIFY on the channel
// tollgate_events (it is delivered when, and only if, the transaction
// commits) naming the tenants and runs of its events as JSON
// ({"tenants": [...], "runs": [...]}, or "*" when that would be longer than
// 4,000 bytes). A store listens on a connection of its
// own, opened at the first WaitEvents and kept until Close, and on every
// notification wakes the waiters whose filter it can concern, which read the
// log again: a waiter in any process sharing the database wakes without
// polling, and an append wakes only the waiters of its tenant or run. While
// that connection is lost, waiters poll every second until it is back.
//
// # Schema
//
// The schema is versioned: embedded migrations (migrations/*.sql) are applied
// in order when a store is opened, in one transaction that first takes an
// advisory lock (key 0x746f6c6c67617465, "tollgate"), so that processes starting at once do not
// race; the version is kept in the schema_version table. A database of a
// newer version is refused.
//
// # Data
//
// Times are stored as TIMESTAMPTZ, with microsecond precision: the store
// truncates its clock and the times it is given to the microsecond, and
// returns them in UTC. State, result, configuration, requests and event data
// are stored as JSON (the text as given, key order kept) and checked against
// size and depth limits (256 MiB, 1,000 levels) when read back. Text
// that PostgreSQL cannot store (a NUL byte, invalid UTF-8) is refused with
// [store.ErrInvalid].
package postgres

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/tollgate-dev/tollgate/internal/bounded"
	"github.com/tollgate-dev/tollgate/internal/jsonenc"
	"github.com/tollgate-dev/tollgate/internal/sqlmigrate"
	"github.com/tollgate-dev/tollgate/internal/storeimpl"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// channel is the NOTIFY channel on which appends of events are announced.
// The payload is the JSON of [notice]: the tenants and runs of the
// transaction's events, the log they were appended to (the store's schema:
// stores of several schemas share a database's channels) and the Seqs of
// its first and last events; or "*" (any tenant and run) when that would
// be longer than [maxNotice]. A waiter reads the log again only when a
// notice can concern it. Appends commit in the order of their Seqs (the
// counter's row is locked until commit), and PostgreSQL delivers notices
// in commit order.
const channel = "tollgate_events"

// notice is the payload of a notification on [channel].
type notice struct {
	// Tenants are the tenants of the events appended.
	Tenants []string `json:"tenants"`
	// Runs are the runs of the events appended (events of the store as a
	// whole have none).
	Runs []string `json:"runs"`
	// Log is the schema of the store the events were appended to.
	Log string `json:"log,omitempty"`
	// First and Last are the Seqs of the first and last events appended.
	First int64 `json:"first,omitempty"`
	Last  int64 `json:"last,omitempty"`
}

// maxNotice is the longest payload sent, in bytes (PostgreSQL's limit is
// 8000).
const maxNotice = 4000

// migrationLock is the key of the transaction-level advisory lock
// (pg_advisory_xact_lock) under which the schema is checked and migrated.
const migrationLock int64 = 0x746f6c6c67617465 // "tollgate"

// idleInTransaction is the idle_in_transaction_session_timeout of the
// store's connections, unless the URL sets one: the server ends a session
// that stays this long inside a transaction (a process frozen between two
// statements), so that the rows and counters it locked are not held for
// ever.
const idleInTransaction = time.Minute

// fallbackPoll is how often WaitEvents polls while its listening connection
// is lost.
const fallbackPoll = time.Second

// Limits on the JSON read back from the database: a document larger or
// deeper than these is refused with an error naming the record, before it
// is parsed or returned.
const (
	// maxJSON is the largest JSON value of a column, in bytes (256 MiB, the
	// largest halted state a host restores).
	maxJSON = 256 << 20
	// maxJSONDepth is the deepest nesting of a JSON column.
	maxJSONDepth = 1000
)

// schemaVersion is the schema version this package writes.
const schemaVersion = 5

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrations returns the embedded migrations in order; migration i (from 0)
// brings the schema to version i+1.
func migrations() ([]string, error) { return sqlmigrate.Load(migrationFS) }

// pgStore is the PostgreSQL [store.Store]. Open it with [Open]; it is safe for
// concurrent use, and any number of Stores (in any number of processes) may
// share one database.
type pgStore struct {
	pool *pgxpool.Pool
	now  func() time.Time
	seal *storeimpl.Sealer
	// where names the database in errors, without credentials.
	where string
	// deadlocks counts the transactions run again after a deadlock.
	deadlocks atomic.Int64
	// waitQueries counts the reads of the log WaitEvents makes.
	waitQueries atomic.Int64

	listen listener
}

var _ store.Store = (*pgStore)(nil)

// Open connects to the database at url (a PostgreSQL URL or key=value
// connection string, as pgx accepts: postgres://user@host:5432/db?sslmode=...,
// with pool settings such as pool_max_conns) and migrates its schema. The
// database must exist; the store's tables are created in the connection's
// current schema (see search_path). Errors say which server and database
// failed, never the password; a database of a newer schema version is
// refused. Sessions get an idle_in_transaction_session_timeout of one
// minute unless the URL sets one: the server then ends a session frozen
// inside a transaction, so that its locks are not held for ever. The store
// also keeps the rule layer that the server and the command edit and
// apply.
func Open(ctx context.Context, url string, opts *store.Options) (store.Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's parse errors do not repeat the password.
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	where := fmt.Sprintf("postgres store %s:%d/%s", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
	if _, set := cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"]; !set {
		cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.FormatInt(idleInTransaction.Milliseconds(), 10)
	}
	seal, err := storeimpl.NewSealer(opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	now := storeimpl.Now(opts)
	s := &pgStore{pool: pool, now: func() time.Time { return pgTime(now()) }, seal: seal, where: where}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	var schema string
	if err := pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	s.listen.init(cfg.ConnConfig, schema)
	return s, nil
}

// pgTime returns t as PostgreSQL stores it: in UTC, to the microsecond.
func pgTime(t time.Time) time.Time { return t.Truncate(time.Microsecond).UTC() }

func pgTimePtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := pgTime(*t)
	return &u
}

func (s *pgStore) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	if len(ms) != schemaVersion {
		return fmt.Errorf("%d embedded migrations, want %d", len(ms), schemaVersion)
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
			return fmt.Errorf("taking the migration lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
			return fmt.Errorf("creating schema_version: %w", err)
		}
		v := 0
		err := tx.QueryRow(ctx, `SELECT version FROM schema_version`).Scan(&v)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("reading schema_version: %w", err)
		}
		if v > schemaVersion {
			return fmt.Errorf("database schema version %d is newer than this program's %d", v, schemaVersion)
		}
		if v == schemaVersion {
			return nil
		}
		for i := v; i < len(ms); i++ {
			if _, err := tx.Exec(ctx, ms[i]); err != nil {
				return fmt.Errorf("migrating the schema to version %d: %w", i+1, err)
			}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM schema_version`); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO schema_version (version) VALUES ($1)`, schemaVersion)
		return err
	})
}

// deadlockAttempts is how many times a write is run in all when PostgreSQL
// ends its transaction as the victim of a deadlock (SQLSTATE 40P01,
// deadlock_detected). The store takes its locks in one order, but
// PostgreSQL locks the versions of an updated row one after the other, so
// a shared lock and an exclusive one taken by two transactions on a run
// that a third has just updated can still form a cycle. The server rolls
// the victim back entirely, and every write reads what it depends on inside
// its own transaction, so the write is run again from the start, after a
// pause of deadlockPause to twice that (times the attempt's number), so
// that the transaction that won goes ahead first; the last deadlock error
// is returned when every attempt was a victim.
const deadlockAttempts = 3

// deadlockPause is the shortest pause before a deadlock's victim is run
// again; see [deadlockAttempts].
const deadlockPause = 5 * time.Millisecond

// tx runs fn in one transaction, committing when fn returns nil or an error
// marked with [storeimpl.Commit], and maps PostgreSQL's errors to the store's. A
// transaction chosen as a deadlock's victim is run again, up to
// deadlockAttempts in all; fn must therefore set its results afresh on
// every call.
func (s *pgStore) tx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	var err error
	for attempt := 1; ; attempt++ {
		if err = s.tx1(ctx, fn); !isDeadlock(err) || attempt == deadlockAttempts {
			return err
		}
		s.deadlocks.Add(1)
		pause := time.Duration(attempt) * (deadlockPause + rand.N(deadlockPause))
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
	}
}

// isDeadlock reports whether err is PostgreSQL's deadlock_detected.
func isDeadlock(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "40P01"
}

// tx1 is one attempt of tx.
func (s *pgStore) tx1(ctx context.Context, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return s.wrap(err)
	}
	// Rolls back on an error or a panic; after a commit it does nothing.
	defer tx.Rollback(context.WithoutCancel(ctx))
	err = fn(tx)
	var k storeimpl.Commit
	if err != nil && !errors.As(err, &k) {
		return s.wrap(err)
	}
	if cerr := tx.Commit(ctx); cerr != nil {
		return s.wrap(cerr)
	}
	return k.Err
}

// wrap maps errors of PostgreSQL that are the caller's to store.ErrInvalid,
// and names the database in the others; the store's own errors pass as they
// are.
func (s *pgStore) wrap(err error) error {
	if err == nil {
		return nil
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "22021", "22P05", "22P02", "22025":
			// character_not_in_repertoire (NUL, invalid UTF-8),
			// untranslatable_character, invalid_text_representation
			// (bad JSON), invalid_escape_sequence.
			return fmt.Errorf("%w: %s", store.ErrInvalid, pe.Message)
		}
		return fmt.Errorf("%s: %w", s.where, err)
	}
	for _, sentinel := range []error{store.ErrNotFound, store.ErrExists, store.ErrConflict, store.ErrDecided, store.ErrExpired,
		store.ErrNotApproved, store.ErrUsed, store.ErrDigestMismatch, store.ErrLeased, store.ErrLeaseLost, store.ErrBadCursor, store.ErrInvalid,
		context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, sentinel) {
			return err
		}
	}
	return fmt.Errorf("%s: %w", s.where, err)
}

// uniqueViolation reports whether err is a unique violation of constraint.
func uniqueViolation(err error, constraint string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == constraint
}

// jsonArg returns b as a query argument of a JSON column: NULL for nil.
func jsonArg(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

// checkJSON bounds a JSON column read back before anything parses it.
func checkJSON(what string, b []byte) error {
	if b == nil {
		return nil
	}
	if err := bounded.CheckJSON(what, b, bounded.Limits{MaxBytes: maxJSON, MaxDepth: maxJSONDepth}); err != nil {
		return fmt.Errorf("postgres store: %w", err)
	}
	return nil
}

// next takes n positions of counter (runs, approvals or events) and returns
// the first; the counter's row stays locked until the transaction ends.
func next(ctx context.Context, tx pgx.Tx, counter string, n int) (int64, error) {
	var last int64
	if err := tx.QueryRow(ctx, `UPDATE counters SET last = last + $2 WHERE name = $1 RETURNING last`, counter, n).Scan(&last); err != nil {
		return 0, fmt.Errorf("taking %d positions of %s: %w", n, counter, err)
	}
	return last - int64(n) + 1, nil
}

func (s *pgStore) insertApprovals(ctx context.Context, tx pgx.Tx, run store.Run, now time.Time, as []store.Approval) error {
	if len(as) == 0 {
		return nil
	}
	first, err := next(ctx, tx, "approvals", len(as))
	if err != nil {
		return err
	}
	for i, a := range as {
		a = storeimpl.NewApproval(a, run, now)
		a.ExpiresAt = pgTimePtr(a.ExpiresAt)
		req, err := marshalRequest(a)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO approvals
			(run_id, id, seq, tenant, call_id, tool, digest, kind, prompt, request, status, created_at, updated_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12, $13)`,
			a.RunID, a.ID, first+int64(i), a.Tenant, a.CallID, a.Tool, a.Digest, string(a.Kind), a.Prompt, req, string(a.Status), now, a.ExpiresAt)
		if uniqueViolation(err, "approvals_pkey") {
			return fmt.Errorf("%w: approval %s of run %s", store.ErrExists, a.ID, run.ID)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// insertEvents appends events in tx and sends the NOTIFY; run, when not nil,
// is the run they all belong to (locked by the caller); otherwise the run of
// each event (if any) is looked up and locked against deletion.
func (s *pgStore) insertEvents(ctx context.Context, tx pgx.Tx, run *store.Run, now time.Time, evs []store.Event) ([]int64, error) {
	if len(evs) == 0 {
		return nil, nil
	}
	if run != nil {
		evs = slices.Clone(evs)
		for i := range evs {
			evs[i].RunID = run.ID
		}
		return s.insertEventsOf(ctx, tx, nil, map[string]string{run.ID: run.Tenant}, now, evs)
	}
	var ids []string
	for _, ev := range evs {
		if ev.RunID != "" && !slices.Contains(ids, ev.RunID) {
			ids = append(ids, ev.RunID)
		}
	}
	tenants := map[string]string{}
	if len(ids) > 0 {
		slices.Sort(ids)
		rows, err := tx.Query(ctx, `SELECT id, tenant FROM runs WHERE id = ANY($1) ORDER BY id FOR KEY SHARE`, ids)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id, tenant string
			if err := rows.Scan(&id, &tenant); err != nil {
				rows.Close()
				return nil, err
			}
			tenants[id] = tenant
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return s.insertEventsOf(ctx, tx, nil, tenants, now, evs)
}

// insertEventsOf appends events whose runs the caller locked against
// deletion; tenants maps each run ID to its tenant (an event of a run not in
// it is ErrNotFound). The statements queued in pre, if any, are sent first,
// in the same round trip as the events, the counter and the NOTIFY.
func (s *pgStore) insertEventsOf(ctx context.Context, tx pgx.Tx, pre *pgx.Batch, tenants map[string]string, now time.Time, evs []store.Event) ([]int64, error) {
	checked := make([]store.Event, len(evs))
	for i, ev := range evs {
		var tenant *string
		if ev.RunID != "" {
			t, ok := tenants[ev.RunID]
			if !ok {
				return nil, fmt.Errorf("%w: run %s of event %s", store.ErrNotFound, ev.RunID, ev.Type)
			}
			tenant = &t
		}
		ev, err := storeimpl.CheckEvent(ev, tenant, now)
		if err != nil {
			return nil, err
		}
		checked[i] = ev
	}
	b := pre
	if b == nil {
		b = &pgx.Batch{}
	}
	npre := b.Len()
	if len(checked) > 0 {
		// The counter first: its row stays locked until commit. Each event
		// takes its Seq from the counter as this transaction left it.
		b.Queue(`UPDATE counters SET last = last + $1 WHERE name = 'events' RETURNING last`, len(checked))
		for i, ev := range checked {
			var runID any
			if ev.RunID != "" {
				runID = ev.RunID
			}
			b.Queue(`INSERT INTO events (seq, tenant, run_id, type, time, data)
				VALUES ((SELECT last FROM counters WHERE name = 'events') - $1, $2, $3, $4, $5, $6)`,
				len(checked)-1-i, ev.Tenant, runID, ev.Type, pgTime(ev.Time), jsonArg(ev.Data))
		}
		if head, ok := s.noticeOf(checked); ok {
			// The Seqs, known only to the counter, end the notice's JSON.
			b.Queue(`SELECT pg_notify($1, $2 || (last - $3)::text || ',"last":' || last::text || '}') FROM counters WHERE name = 'events'`,
				channel, head, len(checked)-1)
		} else {
			b.Queue(`SELECT pg_notify($1, '*')`, channel)
		}
	}
	if b.Len() == 0 {
		return nil, nil
	}
	br := tx.SendBatch(ctx, b)
	for range npre {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return nil, err
		}
	}
	var seqs []int64
	if len(checked) > 0 {
		var last int64
		if err := br.QueryRow().Scan(&last); err != nil {
			br.Close()
			return nil, fmt.Errorf("taking %d event positions: %w", len(checked), err)
		}
		for i := range checked {
			seqs = append(seqs, last-int64(len(checked)-1-i))
		}
	}
	if err := br.Close(); err != nil {
		return nil, err
	}
	return seqs, nil
}

// CreateRun implements [store.Store].
func (s *pgStore) CreateRun(ctx context.Context, r store.CreateRunRequest) (store.Run, error) {
	now := s.now()
	run, err := storeimpl.NewRun(r, now)
	if err != nil {
		return store.Run{}, err
	}
	if run.Lease != nil {
		run.Lease.ExpiresAt = pgTime(run.Lease.ExpiresAt)
	}
	err = s.tx(ctx, func(tx pgx.Tx) error {
		seq, err := next(ctx, tx, "runs", 1)
		if err != nil {
			return err
		}
		holder, expires := leaseCols(run.Lease)
		_, err = tx.Exec(ctx, `INSERT INTO runs (id, seq, tenant, owner, status, state, result, config, lease_holder, lease_token, lease_expires_at, version, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13)`,
			run.ID, seq, run.Tenant, run.Owner, string(run.Status), jsonArg(run.State), jsonArg(run.Result), jsonArg(run.Config), holder, storeimpl.LeaseToken(run), expires, run.Version, now)
		if uniqueViolation(err, "runs_pkey") {
			return fmt.Errorf("%w: run %s", store.ErrExists, run.ID)
		}
		if err != nil {
			return err
		}
		return storeimpl.AddRecords(ctx, runTx{s, tx}, &run, now, r.Approvals, r.Events)
	})
	if err != nil {
		return store.Run{}, err
	}
	return run, nil
}

func leaseCols(l *store.Lease) (holder *string, expires *time.Time) {
	if l == nil {
		return nil, nil
	}
	return &l.Holder, &l.ExpiresAt
}

// runTx is a transaction as the methods that change a run use it
// ([storeimpl.RunTx]): its reads lock the run.
type runTx struct {
	s  *pgStore
	tx pgx.Tx
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

// WriteRun stores the mutable fields of r, its lease's expiry to the
// microsecond; lastToken is the largest token the run ever had.
func (t runTx) WriteRun(ctx context.Context, r *store.Run, lastToken int64) error {
	if r.Lease != nil {
		r.Lease.ExpiresAt = pgTime(r.Lease.ExpiresAt)
	}
	holder, expires := leaseCols(r.Lease)
	_, err := t.tx.Exec(ctx, `UPDATE runs SET status = $1, state = $2, result = $3, lease_holder = $4, lease_token = $5, lease_expires_at = $6, version = $7, updated_at = $8
		WHERE id = $9`,
		string(r.Status), jsonArg(r.State), jsonArg(r.Result), holder, lastToken, expires, r.Version, r.UpdatedAt, r.ID)
	return err
}

// LoadRun reads run id and locks it for a change (FOR NO KEY UPDATE:
// events and approvals may still be added by others), with the largest
// token it ever had.
func (t runTx) LoadRun(ctx context.Context, id string) (store.Run, int64, error) {
	r, last, _, err := scanRun(t.tx.QueryRow(ctx, `SELECT `+runCols+` FROM runs WHERE id = $1 FOR NO KEY UPDATE`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return r, 0, fmt.Errorf("%w: run %s", store.ErrNotFound, id)
	}
	return r, last, err
}

const runCols = `seq, id, tenant, owner, status, state, result, config, lease_holder, lease_token, lease_expires_at, version, created_at, updated_at`

// scanRun reads a row of runCols; it returns the run, the largest lease
// token the run ever had and its position.
func scanRun(row pgx.Row) (store.Run, int64, int64, error) {
	var r store.Run
	var seq, token int64
	var status string
	var state, result, config []byte
	var holder *string
	var expires *time.Time
	if err := row.Scan(&seq, &r.ID, &r.Tenant, &r.Owner, &status, &state, &result, &config, &holder, &token, &expires, &r.Version, &r.CreatedAt, &r.UpdatedAt); err != nil {
		return r, 0, 0, err
	}
	r.Status = store.RunStatus(status)
	for _, c := range []struct {
		name string
		b    []byte
		dst  *[]byte
	}{{"state", state, (*[]byte)(&r.State)}, {"result", result, (*[]byte)(&r.Result)}, {"config", config, (*[]byte)(&r.Config)}} {
		if err := checkJSON("run "+r.ID+" "+c.name, c.b); err != nil {
			return r, 0, 0, err
		}
		*c.dst = c.b
	}
	if holder != nil && expires != nil {
		r.Lease = &store.Lease{Holder: *holder, Token: token, ExpiresAt: expires.UTC()}
	}
	r.CreatedAt, r.UpdatedAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC()
	return r, token, seq, nil
}

// UpdateRun implements [store.Store].
func (s *pgStore) UpdateRun(ctx context.Context, id string, u store.RunUpdate) (store.Run, error) {
	now := s.now()
	var out store.Run
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = storeimpl.UpdateRun(ctx, runTx{s, tx}, id, u, now)
		return err
	})
	if err != nil {
		return store.Run{}, err
	}
	return out, nil
}

// ClaimRun implements [store.Store].
func (s *pgStore) ClaimRun(ctx context.Context, id string, c store.Claim) (store.Run, []store.Approval, error) {
	if err := storeimpl.CheckClaim(id, c); err != nil {
		return store.Run{}, nil, err
	}
	var out store.Run
	var used []store.Approval
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		out, used, err = storeimpl.ClaimRun(ctx, runTx{s, tx}, id, c, s.now())
		return err
	})
	if err != nil {
		return store.Run{}, nil, err
	}
	return out, used, nil
}

// RenewLease implements [store.Store].
func (s *pgStore) RenewLease(ctx context.Context, id, holder string, token int64, ttl time.Duration) (store.Lease, error) {
	var out store.Lease
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = storeimpl.RenewLease(ctx, runTx{s, tx}, id, holder, token, ttl, s.now())
		return err
	})
	if err != nil {
		return store.Lease{}, err
	}
	return out, nil
}

// GetRun implements [store.Store].
func (s *pgStore) GetRun(ctx context.Context, id string) (store.Run, error) {
	r, _, _, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runCols+` FROM runs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Run{}, fmt.Errorf("%w: run %s", store.ErrNotFound, id)
	}
	if err != nil {
		return store.Run{}, s.wrap(err)
	}
	return r, nil
}

// where builds a WHERE clause of conditions with numbered arguments.
type where struct {
	conds []string
	args  []any
}

// add appends a condition; "?" in cond stands for the argument's number.
func (w *where) add(cond string, arg any) {
	w.args = append(w.args, arg)
	w.conds = append(w.conds, strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(w.args))))
}

// tenant scopes the clause to a tenant unless all is set.
func (w *where) tenant(tenant string, all bool) {
	if !all {
		w.add("tenant = ?", tenant)
	}
}

func (w *where) String() string {
	if len(w.conds) == 0 {
		return "TRUE"
	}
	return strings.Join(w.conds, " AND ")
}

// limit returns " LIMIT $n" with n as the next argument.
func (w *where) limit(n int) string {
	w.args = append(w.args, n)
	return " LIMIT $" + strconv.Itoa(len(w.args))
}

// ListRuns implements [store.Store].
func (s *pgStore) ListRuns(ctx context.Context, f store.RunFilter) (store.RunPage, error) {
	limit, err := storeimpl.PageLimit(f.Limit)
	if err != nil {
		return store.RunPage{}, err
	}
	kind := storeimpl.RunsCursorKind(f)
	from, err := storeimpl.DecodeCursor(kind, f.Cursor)
	if err != nil {
		return store.RunPage{}, err
	}
	var w where
	w.tenant(f.Tenant, f.AllTenants)
	order := " ORDER BY seq"
	switch {
	case !f.Newest:
		w.add("seq > ?", from)
	case from > 0:
		w.add("seq < ?", from)
	}
	if f.Newest {
		order = " ORDER BY seq DESC"
	}
	if f.Status != "" {
		w.add("status = ?", string(f.Status))
	}
	if f.Owner != "" {
		w.add("owner = ?", f.Owner)
	}
	q := `SELECT ` + runCols + ` FROM runs WHERE ` + w.String() + order + w.limit(limit+1)
	rows, err := s.pool.Query(ctx, q, w.args...)
	if err != nil {
		return store.RunPage{}, s.wrap(err)
	}
	defer rows.Close()
	var p store.RunPage
	p.Runs, p.Next, err = storeimpl.ReadPage(rows, limit, kind, func(rows storeimpl.Rows) (store.Run, int64, error) {
		r, _, seq, err := scanRun(rows)
		return r, seq, err
	})
	if err != nil {
		return store.RunPage{}, s.wrap(err)
	}
	return p, nil
}

// DeleteRuns implements [store.Store]: it locks the runs that qualify (in ID
// order, checked again once locked) and deletes them and, by the foreign
// keys' ON DELETE CASCADE, their approvals and events.
func (s *pgStore) DeleteRuns(ctx context.Context, f store.PruneFilter) (int, error) {
	statuses := f.Statuses
	if len(statuses) == 0 {
		statuses = []store.RunStatus{store.RunDone, store.RunIncomplete, store.RunError, store.RunCancelled}
	}
	names := make([]string, len(statuses))
	for i, st := range statuses {
		names[i] = string(st)
	}
	var w where
	w.tenant(f.Tenant, f.AllTenants)
	w.add("status = ANY(?)", names)
	w.add("(lease_holder IS NULL OR lease_expires_at <= ?)", s.now())
	if !f.Before.IsZero() {
		w.add("updated_at < ?", f.Before)
	}
	var n int64
	err := s.tx(ctx, func(tx pgx.Tx) error {
		// Two statements: the rows are locked (in ID order, checked again
		// once locked) and then exactly those are deleted. A DELETE that
		// found its rows by a scan of its own could meet an older version
		// of a row the lock statement locked in its newer one, and wait on
		// that row's other lockers out of ID order.
		rows, err := tx.Query(ctx, `SELECT id FROM runs WHERE `+w.String()+` ORDER BY id FOR UPDATE`, w.args...)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || len(ids) == 0 {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM runs WHERE id = ANY($1)`, ids)
		n = tag.RowsAffected()
		return err
	})
	return int(n), err
}

const approvalCols = `seq, run_id, tenant, id, call_id, tool, digest, kind, prompt, request, status, decided_by, actor, reason, data, created_at, updated_at, decided_at, used_at, expires_at, mac`

func scanApproval(row pgx.Row) (store.Approval, int64, error) {
	var a store.Approval
	var seq int64
	var kind, status, decidedBy, actor string
	var req, data []byte
	if err := row.Scan(&seq, &a.RunID, &a.Tenant, &a.ID, &a.CallID, &a.Tool, &a.Digest, &kind, &a.Prompt, &req, &status, &decidedBy, &actor, &a.Reason, &data,
		&a.CreatedAt, &a.UpdatedAt, &a.DecidedAt, &a.UsedAt, &a.ExpiresAt, &a.MAC); err != nil {
		return a, 0, err
	}
	a.Kind, a.Status = tool.Kind(kind), store.Status(status)
	a.DecidedBy, a.Actor = storeimpl.PrincipalsFromText(decidedBy, actor)
	what := "approval " + a.ID + " of run " + a.RunID
	if err := checkJSON(what+" data", data); err != nil {
		return a, 0, err
	}
	a.Data = data
	if err := unmarshalRequest(what, req, &a); err != nil {
		return a, 0, err
	}
	a.CreatedAt, a.UpdatedAt = a.CreatedAt.UTC(), a.UpdatedAt.UTC()
	for _, p := range []**time.Time{&a.DecidedAt, &a.UsedAt, &a.ExpiresAt} {
		if *p != nil {
			u := (*p).UTC()
			*p = &u
		}
	}
	return a, seq, nil
}

func getApproval(ctx context.Context, q interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}, runID, id, lock string) (store.Approval, error) {
	a, _, err := scanApproval(q.QueryRow(ctx, `SELECT `+approvalCols+` FROM approvals WHERE run_id = $1 AND id = $2`+lock, runID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return a, fmt.Errorf("%w: approval %s of run %s", store.ErrNotFound, id, runID)
	}
	return a, err
}

// GetApproval implements [store.Store].
func (s *pgStore) GetApproval(ctx context.Context, runID, id string) (store.Approval, error) {
	a, err := getApproval(ctx, s.pool, runID, id, "")
	if err != nil {
		return store.Approval{}, s.wrap(err)
	}
	return s.seal.Check(a), nil
}

// ListApprovals implements [store.Store].
func (s *pgStore) ListApprovals(ctx context.Context, f store.ApprovalFilter) (store.ApprovalPage, error) {
	limit, err := storeimpl.PageLimit(f.Limit)
	if err != nil {
		return store.ApprovalPage{}, err
	}
	after, err := storeimpl.DecodeCursor("approvals", f.Cursor)
	if err != nil {
		return store.ApprovalPage{}, err
	}
	var w where
	w.tenant(f.Tenant, f.AllTenants)
	w.add("seq > ?", after)
	if f.RunID != "" {
		w.add("run_id = ?", f.RunID)
	}
	if f.ID != "" {
		w.add("id = ?", f.ID)
	}
	if f.Status != "" {
		w.add("status = ?", string(f.Status))
	}
	q := `SELECT ` + approvalCols + ` FROM approvals WHERE ` + w.String() + ` ORDER BY seq` + w.limit(limit+1)
	rows, err := s.pool.Query(ctx, q, w.args...)
	if err != nil {
		return store.ApprovalPage{}, s.wrap(err)
	}
	defer rows.Close()
	var p store.ApprovalPage
	p.Approvals, p.Next, err = storeimpl.ReadPage(rows, limit, "approvals", s.scanChecked)
	if err != nil {
		return store.ApprovalPage{}, s.wrap(err)
	}
	return p, nil
}

// scanChecked reads a row of approvalCols, its seal checked, and its
// position.
func (s *pgStore) scanChecked(rows storeimpl.Rows) (store.Approval, int64, error) {
	a, seq, err := scanApproval(rows)
	return s.seal.Check(a), seq, err
}

// noticeOf returns the head of the NOTIFY of evs: the JSON of their
// [notice] up to its First, which the statement that sends it ends with
// the Seqs; false when the notice would be longer than [maxNotice] (then
// it is "*").
func (s *pgStore) noticeOf(evs []store.Event) (string, bool) {
	n := notice{Log: s.listen.log}
	for _, ev := range evs {
		if !slices.Contains(n.Tenants, ev.Tenant) {
			n.Tenants = append(n.Tenants, ev.Tenant)
		}
		if ev.RunID != "" && !slices.Contains(n.Runs, ev.RunID) {
			n.Runs = append(n.Runs, ev.RunID)
		}
	}
	b, err := json.Marshal(n) // First and Last are zero: omitted
	if err != nil || len(b)+64 > maxNotice {
		return "", false
	}
	return string(b[:len(b)-1]) + `,"first":`, true
}

// queueApproval queues the write of a's mutable fields in b.
func queueApproval(b *pgx.Batch, a store.Approval) {
	b.Queue(`UPDATE approvals SET status = $1, decided_by = $2, actor = $3, reason = $4, data = $5, updated_at = $6, decided_at = $7, used_at = $8, mac = $9
		WHERE run_id = $10 AND id = $11`,
		string(a.Status), storeimpl.PrincipalText(a.DecidedBy), storeimpl.PrincipalText(a.Actor), a.Reason, jsonArg(a.Data), a.UpdatedAt, a.DecidedAt, a.UsedAt, a.MAC, a.RunID, a.ID)
}

// lockRunsShared locks the runs ids (sorted) against deletion, in ID order,
// and returns the IDs it locked, in order. A run that is missing, or that
// was deleted while the statement waited for the deleter's lock (PostgreSQL
// skips such a row at read committed), is not locked and not returned: the
// caller must not touch its approvals or events, whose run a concurrent
// DeleteRuns may then lock and delete while this transaction holds rows the
// deletion cascades to (a deadlock).
func lockRunsShared(ctx context.Context, tx pgx.Tx, ids []string) ([]string, error) {
	rows, err := tx.Query(ctx, `SELECT id FROM runs WHERE id = ANY($1) ORDER BY id FOR KEY SHARE`, ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// lockRunShared locks run id against deletion and reports whether it
// exists. When the run was deleted while the lock waited, the statement is
// run once more with a new snapshot, so that a run created again under the
// same ID in the meantime is the one locked.
func lockRunShared(ctx context.Context, tx pgx.Tx, id string) (bool, error) {
	for range 2 {
		locked, err := lockRunsShared(ctx, tx, []string{id})
		if err != nil || len(locked) == 1 {
			return err == nil, err
		}
	}
	return false, nil
}

// transition applies t to one approval in one transaction, with its run
// locked shared first (see the lock order in the package doc), and
// appends its event; an expiry is stored, other errors change nothing.
func (s *pgStore) transition(ctx context.Context, runID, id string, t storeimpl.Transition) (store.Approval, error) {
	var out store.Approval
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if ok, err := lockRunShared(ctx, tx, runID); err != nil || !ok {
			if err == nil {
				err = fmt.Errorf("%w: approval %s of run %s", store.ErrNotFound, id, runID)
			}
			return err
		}
		var serr error
		out, serr = s.transitionIn(ctx, tx, runID, id, t, s.now())
		if !storeimpl.Kept(serr) {
			return serr
		}
		return storeimpl.Outcome(serr)
	})
	return out, err
}

// transitionIn applies t at now to one approval in tx, whose run the caller
// locked, and, when [storeimpl.Kept] says so, stores it and its event. It
// returns the step's error, or the store's.
func (s *pgStore) transitionIn(ctx context.Context, tx pgx.Tx, runID, id string, t storeimpl.Transition, now time.Time) (store.Approval, error) {
	a, err := getApproval(ctx, tx, runID, id, " FOR UPDATE")
	if err != nil {
		return a, err
	}
	next, evs, serr := t.Apply(s.seal, a, now)
	if !storeimpl.Kept(serr) {
		return next, serr
	}
	b := &pgx.Batch{}
	queueApproval(b, next)
	if _, err := s.insertEventsOf(ctx, tx, b, map[string]string{next.RunID: next.Tenant}, now, evs); err != nil {
		return next, err
	}
	return next, serr
}

// Transition applies t to the approval id of run, which LoadRun locked,
// in the transaction ([storeimpl.RunTx]).
func (t runTx) Transition(ctx context.Context, run store.Run, id string, tr storeimpl.Transition, now time.Time) (store.Approval, error) {
	return t.s.transitionIn(ctx, t.tx, run.ID, id, tr, now)
}

// Decide implements [store.Store].
func (s *pgStore) Decide(ctx context.Context, runID, id string, d store.Answer) (store.Approval, error) {
	return s.transition(ctx, runID, id, storeimpl.Decision(d))
}

// Consume implements [store.Store].
func (s *pgStore) Consume(ctx context.Context, runID, id, digest string) (store.Approval, error) {
	return storeimpl.Consume(digest, func(t storeimpl.Transition) (store.Approval, error) { return s.transition(ctx, runID, id, t) })
}

// ExpireApprovals implements [store.Store]: it finds the runs with due
// approvals, locks them and then the approvals (checked again once locked,
// so that two concurrent calls expire each approval once), and records the
// expiries and their events in one transaction.
func (s *pgStore) ExpireApprovals(ctx context.Context) ([]store.Approval, error) {
	var out []store.Approval
	err := s.tx(ctx, func(tx pgx.Tx) error {
		now := s.now()
		const due = `status IN ('pending', 'approved') AND expires_at IS NOT NULL AND expires_at <= $1`
		rows, err := tx.Query(ctx, `SELECT DISTINCT run_id FROM approvals WHERE `+due+` ORDER BY run_id`, now)
		if err != nil {
			return err
		}
		runIDs, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || len(runIDs) == 0 {
			return err
		}
		// Only the approvals of the runs locked: a run deleted meanwhile
		// (and perhaps created again, unlocked) is left to the next call.
		if runIDs, err = lockRunsShared(ctx, tx, runIDs); err != nil || len(runIDs) == 0 {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT `+approvalCols+` FROM approvals WHERE `+due+` AND run_id = ANY($2) ORDER BY seq FOR UPDATE`, now, runIDs)
		if err != nil {
			return err
		}
		var expired []store.Approval
		for rows.Next() {
			a, _, err := scanApproval(rows)
			if err != nil {
				rows.Close()
				return err
			}
			expired = append(expired, storeimpl.Expire(s.seal, a, now))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		var evs []store.Event
		tenants := map[string]string{}
		b := &pgx.Batch{}
		for _, a := range expired {
			queueApproval(b, a)
			evs = append(evs, storeimpl.ApprovalEventOf(a))
			tenants[a.RunID] = a.Tenant
		}
		if _, err := s.insertEventsOf(ctx, tx, b, tenants, now, evs); err != nil {
			return err
		}
		out = expired
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// AppendEvents implements [store.Store].
func (s *pgStore) AppendEvents(ctx context.Context, evs ...store.Event) ([]int64, error) {
	if len(evs) == 0 {
		return nil, nil
	}
	var seqs []int64
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		seqs, err = s.insertEvents(ctx, tx, nil, s.now(), evs)
		return err
	})
	if err != nil {
		return nil, err
	}
	return seqs, nil
}

// eventWhere selects the events of f after f.AfterSeq.
func eventWhere(f store.EventFilter) *where {
	var w where
	w.tenant(f.Tenant, f.AllTenants)
	if f.RunID != "" {
		w.add("run_id = ?", f.RunID)
	}
	w.add("seq > ?", f.AfterSeq)
	return &w
}

// ListEvents implements [store.Store].
func (s *pgStore) ListEvents(ctx context.Context, f store.EventFilter) ([]store.Event, error) {
	limit, err := storeimpl.PageLimit(f.Limit)
	if err != nil {
		return nil, err
	}
	w := eventWhere(f)
	rows, err := s.pool.Query(ctx, `SELECT seq, tenant, run_id, type, time, data FROM events WHERE `+w.String()+` ORDER BY seq`+w.limit(limit), w.args...)
	if err != nil {
		return nil, s.wrap(err)
	}
	defer rows.Close()
	var out []store.Event
	for rows.Next() {
		var e store.Event
		var runID *string
		var data []byte
		if err := rows.Scan(&e.Seq, &e.Tenant, &runID, &e.Type, &e.Time, &data); err != nil {
			return nil, s.wrap(err)
		}
		if runID != nil {
			e.RunID = *runID
		}
		if err := checkJSON(fmt.Sprintf("event %d data", e.Seq), data); err != nil {
			return nil, err
		}
		e.Data, e.Time = data, e.Time.UTC()
		out = append(out, e)
	}
	return out, s.wrap(rows.Err())
}

// WaitEvents implements [store.Store]: it waits for a NOTIFY on [channel]
// from any process and then reads the log again, unless the notice is one
// of this store's schema that holds an event f selects; while the
// listening connection is lost, it polls every [fallbackPoll]. Any user of
// the database may NOTIFY on the channel: a notice that names this schema
// with Seqs never written ends a wait with no event (a caller reads, and
// waits again), and no notice can keep a waiter from an event.
func (s *pgStore) WaitEvents(ctx context.Context, f store.EventFilter) error {
	if _, err := storeimpl.PageLimit(f.Limit); err != nil {
		return err
	}
	// Registered before the first read: a notice after it is not lost.
	wt := s.listen.register(f)
	defer s.listen.unregister(wt)
	s.listen.start()
	w := eventWhere(f)
	q := waitQuery(w)
	timer := time.NewTimer(fallbackPoll)
	defer timer.Stop()
	// After every event notified while listening, nothing is there to
	// read: the next notice wakes wt (the follower of a log waits right
	// after it read it, and its first read found nothing each time).
	caughtUp := s.listen.caughtUp(f.AfterSeq)
	for {
		// Taken before the read: a change after it wakes wt.
		listening := s.listen.isListening()
		if !caughtUp {
			found, err := s.exists(ctx, q, w.args)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				return s.wrap(err)
			}
			if found {
				return nil
			}
		}
		caughtUp = false
		var poll <-chan time.Time
		if !listening {
			timer.Reset(fallbackPoll)
			poll = timer.C
		}
		select {
		case <-wt.ch:
			if s.listen.seenBy(wt) > f.AfterSeq {
				return nil // a notice of this log holds an event f selects
			}
		case <-poll:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// exists runs the query q of a waiter ([waitQuery]) and reports whether
// it found an event. The query is not cut off when ctx ends, only the wait
// for a connection: pgx closes a connection whose query is cancelled, and
// waiters end all the time (a stream closed, a durable run's part over),
// each of which would cost the pool a connection and the statements
// prepared on it. The query is bounded by waitReadTimeout instead.
func (s *pgStore) exists(ctx context.Context, q string, args []any) (bool, error) {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	defer c.Release()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), waitReadTimeout)
	defer cancel()
	s.waitQueries.Add(1)
	var seq int64
	err = c.QueryRow(rctx, q, args...).Scan(&seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// waitQuery is a waiter's read of the log: the first event w selects. Not
// SELECT EXISTS: its generic plan, which a prepared statement takes after
// a few runs, scans the whole table (the planner expects a third of the
// rows to match), 50 ms for 85,000 events; this one walks the Seq index
// from the waiter's place.
func waitQuery(w *where) string {
	return `SELECT seq FROM events WHERE ` + w.String() + ` ORDER BY seq LIMIT 1`
}

// waitReadTimeout bounds a waiter's read of the log (see exists).
const waitReadTimeout = 10 * time.Second

// Close implements [store.Store]: it stops listening and closes the pool.
func (s *pgStore) Close() error {
	s.listen.stop()
	s.pool.Close()
	return nil
}

// listener keeps one connection LISTENing on channel and wakes the waiters
// a notice concerns.
type listener struct {
	cfg *pgx.ConnConfig

	mu        sync.Mutex
	waiters   map[*waiter]struct{}
	listening bool
	started   bool
	// notified counts the notifications received, for tests.
	notified int64
	// log is the schema of the store's tables, which its notices name.
	log string
	// epoch counts the times listening started. last is the log's last
	// Seq as known in lastEpoch: read from its counter once listening
	// started and after each payload that is not a notice of this log,
	// raised by each notice of this log. lastEpoch is 0 from such a payload
	// until the counter is read.
	epoch, lastEpoch int64
	last             int64
	cancel           context.CancelFunc
	done             chan struct{}
}

// waiter is one WaitEvents call: its filter, and a channel that gets a token
// when it should read the log again.
type waiter struct {
	tenant string
	all    bool
	runID  string
	ch     chan struct{}
	// seen is the first Seq of the latest notice of this log that holds
	// an event the waiter selects (each event of it is at or after it),
	// under the listener's lock.
	seen int64
}

// wake gives w a token, unless it has one already.
func (w *waiter) wake() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// holds reports whether n holds for sure an event w selects (concerns may
// say so of a notice that only might: one of several tenants and runs).
func (w *waiter) holds(n *notice) bool {
	switch {
	case n == nil:
		return false
	case w.runID == "":
		return w.all || slices.Contains(n.Tenants, w.tenant)
	default:
		return w.all && slices.Contains(n.Runs, w.runID)
	}
}

// concerns reports whether events of n may be ones w waits for.
func (w *waiter) concerns(n *notice) bool {
	if n == nil {
		return true
	}
	return (w.all || slices.Contains(n.Tenants, w.tenant)) && (w.runID == "" || slices.Contains(n.Runs, w.runID))
}

func (l *listener) init(cfg *pgx.ConnConfig, log string) {
	l.cfg = cfg.Copy()
	l.cfg.RuntimeParams["application_name"] = listenerName
	l.log = log
	l.waiters = map[*waiter]struct{}{}
}

// listenerName is the application_name of a store's listening connection.
const listenerName = "tollgate listener"

func (l *listener) register(f store.EventFilter) *waiter {
	w := &waiter{tenant: f.Tenant, all: f.AllTenants, runID: f.RunID, ch: make(chan struct{}, 1)}
	l.mu.Lock()
	l.waiters[w] = struct{}{}
	l.mu.Unlock()
	return w
}

func (l *listener) unregister(w *waiter) {
	l.mu.Lock()
	delete(l.waiters, w)
	l.mu.Unlock()
}

// isListening reports whether the listener is listening now.
func (l *listener) isListening() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.listening
}

// setListening records a change of state and wakes every waiter (a waiter
// must read again after LISTEN starts, and poll while it is lost); last is
// the log's counter, read once LISTEN started.
func (l *listener) setListening(on bool, last int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.listening = on
	if on {
		l.epoch++
		l.last, l.lastEpoch = last, l.epoch
	}
	for w := range l.waiters {
		w.wake()
	}
}

// notify wakes the waiters the payload concerns (every one for a payload
// that is not a notice), and notes the last Seq a notice of this log
// carries (see [channel]); it reports whether the notice was one. After
// any other (another schema's, an older build's, a "*", anyone's NOTIFY),
// the listener knows the log's last Seq no longer: see [listener.known].
func (l *listener) notify(payload string) (ours bool) {
	n, ours := parseNotice(payload, l.log)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.notified++
	if ours {
		l.last = max(l.last, n.Last)
	} else {
		l.lastEpoch = 0
	}
	for w := range l.waiters {
		if w.concerns(n) {
			if ours && w.holds(n) {
				w.seen = max(w.seen, n.First)
			}
			w.wake()
		}
	}
	return ours
}

// known notes last, read from the log's counter while listening, as the
// log's last Seq.
func (l *listener) known(last int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last, l.lastEpoch = max(l.last, last), l.epoch
}

// parseNotice reads a payload on [channel]: the notice, nil for one that
// is not (such as "*"); ours when it is a notice of log with its Seqs.
func parseNotice(payload, log string) (n *notice, ours bool) {
	if payload == "*" {
		return nil, false
	}
	n = new(notice)
	if json.Unmarshal([]byte(payload), n) != nil {
		return nil, false
	}
	return n, n.Log == log && n.First > 0 && n.Last >= n.First
}

// seenBy returns the first Seq of the latest notice of this log that
// holds an event w selects: an event w selects is there at or after it.
func (l *listener) seenBy(w *waiter) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return w.seen
}

// caughtUp reports whether a reader of the log up to after has every event
// there is: the listener listens, has known the log's last Seq since it
// started (read from the counter once it listened, raised by the notices
// of the log since), and after is at or past it. Any event after that
// comes with a notice to come.
func (l *listener) caughtUp(after int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.listening && l.lastEpoch == l.epoch && l.lastEpoch > 0 && after >= l.last
}

// start starts the listening goroutine once.
func (l *listener) start() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started {
		return
	}
	l.started = true
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel, l.done = cancel, make(chan struct{})
	go l.run(ctx)
}

// stop ends the listening goroutine, if it was started, and waits for it.
func (l *listener) stop() {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.started = true // no start after stop
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// run connects, listens and forwards notifications until ctx ends,
// reconnecting with a growing delay (100ms to fallbackPoll*5) after a loss.
func (l *listener) run(ctx context.Context) {
	defer close(l.done)
	delay := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := l.listenOnce(ctx)
		l.setListening(false, 0)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			delay = 100 * time.Millisecond
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
		delay = min(2*delay, 5*fallbackPoll)
	}
}

// listenOnce opens a connection, LISTENs and wakes waiters on every
// notification until the connection fails or ctx ends. It returns nil when
// it was listening before it failed.
func (l *listener) listenOnce(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, l.cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		return err
	}
	// After LISTEN: an append that committed before this read is in it,
	// one after it comes with a notice.
	last, err := lastSeq(ctx, conn)
	if err != nil {
		return err
	}
	l.setListening(true, last)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return nil
		}
		if !l.notify(n.Payload) {
			// It may stand for appends to this log whose Seqs it does
			// not say (an older build's, a "*", the same tables named
			// by another schema): read them.
			if last, err = lastSeq(ctx, conn); err != nil {
				return nil
			}
			l.known(last)
		}
	}
}

// lastSeq reads the Seq of the log's last committed event from its
// counter.
func lastSeq(ctx context.Context, conn *pgx.Conn) (int64, error) {
	var last int64
	err := conn.QueryRow(ctx, `SELECT last FROM counters WHERE name = 'events'`).Scan(&last)
	return last, err
}

// marshalRequest returns a's request as the JSON of its column.
func marshalRequest(a store.Approval) (string, error) {
	b, err := jsonenc.Marshal(a.Request)
	if err != nil {
		return "", fmt.Errorf("%w: approval %s of run %s: request: %v", store.ErrInvalid, a.ID, a.RunID, err)
	}
	return string(b), nil
}

// unmarshalRequest decodes the request column into a.Request, within the
// limits on JSON read back.
func unmarshalRequest(what string, b []byte, a *store.Approval) error {
	if err := checkJSON(what+" request", b); err != nil {
		return err
	}
	if err := json.Unmarshal(b, &a.Request); err != nil {
		return fmt.Errorf("postgres store: %s request: %w", what, err)
	}
	return nil
}
