package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/store"
)

// maxRunWait is the longest ?wait= of POST /v1/runs: a longer one is cut
// to it.
const maxRunWait = 10 * time.Minute

// runWait reads the ?wait= of POST /v1/runs: how long to wait for the run
// to settle (to end, or to halt for a person's answer) before answering.
// Absent, it is zero: the answer comes once the run is stored.
func runWait(r *http.Request) (time.Duration, error) { return queryWait(r, 0, maxRunWait) }

// queryWait reads a request's ?wait= (a Go duration, not negative): def
// when absent, a longer one than max cut to max. The error says what was
// sent and what is wanted.
func queryWait(r *http.Request, def, max time.Duration) (time.Duration, error) {
	q := r.URL.Query().Get("wait")
	if q == "" {
		return def, nil
	}
	d, err := time.ParseDuration(q)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("wait: want a duration such as 30s (a longer one than %v is cut to it), got %q", max, q)
	}
	return min(d, max), nil
}

// settles reports whether ev is one that comes with a run's settling: its
// end, or its halt for a person's answer.
func settles(ev store.Event) bool {
	return terminal(ev.Type) || ev.Type == runcore.EventRunHalted
}

// settled reports whether a run in status st waits for nothing but a
// person: it ended, or halted with requests pending.
func settled(st store.RunStatus) bool { return st.Finished() || st == store.RunPending }

// awaitPart waits up to d for the part of run that this server drives to
// end (ended is sent to when it has; d zero: it has, and was received),
// and returns the run as its end stored it (sent to stored before ended,
// when the end was stored), else as read from the store then; as it was
// when ctx ends first.
func (s *Server) awaitPart(ctx context.Context, run store.Run, ended <-chan error, stored <-chan store.Run, d time.Duration) store.Run {
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ended:
		case <-t.C:
		case <-ctx.Done():
			return run
		}
	}
	select {
	case got := <-stored:
		return got
	default:
	}
	if got, err := s.store.GetRun(ctx, run.ID); err == nil {
		return got
	}
	return run
}

// awaitSettled waits up to d for run, driven elsewhere (a worker, another
// server, or a request in flight), to settle, following its events from
// where the log is now (the server's feed, as a stream does), and returns
// it as stored then; as it was when ctx ends or the server shuts down
// first. It holds one of p's stream places while it waits, and waits for
// nothing when p has none free.
func (s *Server) awaitSettled(ctx context.Context, p Principal, run store.Run, d time.Duration) store.Run {
	if d <= 0 || settled(run.Status) {
		return run
	}
	release, ok := s.streams.take(p)
	if !ok {
		return run
	}
	defer release()
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	f := store.EventFilter{Tenant: run.Tenant, RunID: run.ID, Limit: store.MaxLimit}
	// The run read after the log's position: an event that settles it
	// after the read comes after the position.
	if pos, ok := s.feed.position(); ok {
		f.AfterSeq = pos
		if got, err := s.store.GetRun(ctx, run.ID); err == nil {
			run = got
		}
		if settled(run.Status) {
			return run
		}
	}
	_ = s.follow(ctx, f, func(ev store.Event, _ []byte) error {
		if !settles(ev) {
			return nil
		}
		// The run is read again only when an event may have settled it.
		got, err := s.store.GetRun(context.WithoutCancel(ctx), run.ID)
		if err != nil {
			return err
		}
		if run = got; settled(run.Status) {
			return errRunSettled
		}
		return nil
	}, nil, func() error { return nil })
	if !settled(run.Status) { // the wait's end, or the server's
		if got, err := s.store.GetRun(context.WithoutCancel(ctx), run.ID); err == nil {
			run = got
		}
	}
	return run
}

// errRunSettled ends the following of a run that settled.
var errRunSettled = errors.New("the run settled")
