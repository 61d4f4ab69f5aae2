package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/tollgate-dev/tollgate/internal/storeimpl"
)

// maxBatch bounds the writes one transaction commits together.
const maxBatch = 64

// A store's writes are made in batches (group commit): SQLite has one
// writer, and each transaction pays for its BEGIN and its COMMIT (the
// write-ahead log's frames of every page it changed, the same pages again
// for each: the events' last page, their indexes, the sequence). The
// writes that queue while a batch commits are made together in the next
// one, each in a savepoint of its own: a write that fails is rolled back to
// its savepoint, and changes nothing, while the others commit. A write's
// caller returns once its batch has committed. The first write of a batch
// makes it (it leads), and hands the lead to the first write that queued
// meanwhile, so that no caller waits for more batches than those before
// its own.
//
// A write's statements run with a context that is not cancelled (the
// caller's is checked before the write starts): SQLite interrupts a
// statement whose context ends, and an interrupted write rolls back the
// whole transaction, the other writes of its batch with it.
type writeQueue struct {
	mu      sync.Mutex
	queue   []*write
	leading bool // a batch is being made
	// commits counts the transactions committed.
	commits atomic.Int64
}

// write is one write of a batch: fn, and where its outcome goes.
type write struct {
	ctx context.Context
	fn  func(ctx context.Context, tx *sql.Tx) error
	res chan writeResult // one outcome, after a lead if any
}

// writeResult is a write's outcome, or, with lead, the lead handed to it.
type writeResult struct {
	err  error
	lead bool
}

// tx runs fn in one IMMEDIATE transaction (the DSN's _txlock) with other
// writes, as its own savepoint; fn's changes are committed when it returns
// nil or an error marked with [storeimpl.Commit], and rolled back
// otherwise. The ctx fn is given is ctx without its cancellation (see
// [writeQueue]). Errors: ctx's, when it ended before fn ran; fn's; the
// transaction's, when the batch did not commit (then nothing of fn's
// changes is stored).
func (s *sqliteStore) tx(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w := &write{ctx: ctx, fn: fn, res: make(chan writeResult, 1)}
	q := &s.writes
	q.mu.Lock()
	q.queue = append(q.queue, w)
	lead := !q.leading
	q.leading = true
	q.mu.Unlock()
	if !lead {
		if r := <-w.res; !r.lead {
			return r.err
		}
	}
	s.commitQueued()
	return (<-w.res).err
}

// commitQueued makes a batch of the writes queued (the leader's first),
// hands the lead to the next write queued, if any, and gives each write of
// the batch its outcome.
func (s *sqliteStore) commitQueued() {
	q := &s.writes
	q.mu.Lock()
	batch := q.queue[:min(len(q.queue), maxBatch)]
	q.queue = q.queue[len(batch):]
	q.mu.Unlock()
	errs := s.commitBatch(batch)
	q.mu.Lock()
	if len(q.queue) > 0 {
		q.queue[0].res <- writeResult{lead: true}
	} else {
		q.leading = false
	}
	q.mu.Unlock()
	for i, w := range batch {
		w.res <- writeResult{err: errs[i]}
	}
}

// commitBatch runs the writes of batch in one transaction, each in a
// savepoint unless it is alone, commits it, and returns each write's
// outcome.
func (s *sqliteStore) commitBatch(batch []*write) []error {
	errs := make([]error, len(batch))
	fail := func(err error) []error {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	tx, err := s.wdb.BeginTx(context.Background(), nil)
	if err != nil {
		return fail(err)
	}
	if len(batch) == 1 {
		errs[0] = s.runAlone(tx, batch[0])
		return errs
	}
	for i, w := range batch {
		var lost error
		if errs[i], lost = runInSavepoint(tx, w); lost != nil {
			// The transaction is gone: nothing of the batch is stored.
			_ = tx.Rollback()
			return fail(lost)
		}
	}
	if err := tx.Commit(); err != nil {
		return fail(err)
	}
	s.writes.commits.Add(1)
	for i := range errs {
		errs[i] = outcome(errs[i])
	}
	return errs
}

// runAlone runs w, the only write of its batch, in tx, and commits tx
// when w's changes are kept; it returns w's outcome.
func (s *sqliteStore) runAlone(tx *sql.Tx, w *write) error {
	if err := w.ctx.Err(); err != nil {
		_ = tx.Rollback()
		return err
	}
	err := call(context.WithoutCancel(w.ctx), tx, w)
	if !kept(err) {
		_ = tx.Rollback()
		return err
	}
	if cerr := tx.Commit(); cerr != nil {
		return cerr
	}
	s.writes.commits.Add(1)
	return outcome(err)
}

// runInSavepoint runs w in tx in a savepoint, rolled back to when w's
// changes are not kept, and returns w's outcome; lost, when not nil, says
// that the transaction itself failed, and the batch must not commit.
func runInSavepoint(tx *sql.Tx, w *write) (err, lost error) {
	if err := w.ctx.Err(); err != nil {
		return err, nil
	}
	ctx := context.WithoutCancel(w.ctx)
	if _, err := tx.ExecContext(ctx, `SAVEPOINT write`); err != nil {
		return err, err
	}
	err = call(ctx, tx, w)
	if !kept(err) {
		if _, rerr := tx.ExecContext(ctx, `ROLLBACK TO write`); rerr != nil {
			return err, fmt.Errorf("sqlite: rolling back a write of a batch: %w (after %w)", rerr, err)
		}
	}
	if _, rerr := tx.ExecContext(ctx, `RELEASE write`); rerr != nil {
		return err, rerr
	}
	return err, nil
}

// call runs w's function in tx; a panic is its error, so that the other
// writes of the batch and those queued go on.
func call(ctx context.Context, tx *sql.Tx, w *write) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("sqlite: a write panicked: %v", p)
		}
	}()
	return w.fn(ctx, tx)
}

// kept reports whether a write that returned err keeps its changes: nil,
// or an error marked with [storeimpl.Commit].
func kept(err error) bool {
	var k storeimpl.Commit
	return err == nil || errors.As(err, &k)
}

// outcome is what the caller of a kept write gets: the error a
// [storeimpl.Commit] marks, or err.
func outcome(err error) error {
	var k storeimpl.Commit
	if errors.As(err, &k) {
		return k.Err
	}
	return err
}
