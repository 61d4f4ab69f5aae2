package server

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store"
)

// maxSessionLogs bounds the session runs whose log [sessionLogs] keeps an
// index of; past it, one is forgotten (and read again from the start when
// next used).
const maxSessionLogs = 1024

// sessionLogs indexes the event logs of Claude Code, Codex and MCP client
// sessions' runs, so that what an ask and a view of such a run read does
// not grow with the session: for each run, how far its log was read and
// the sequence numbers of its latest maxSessionCalls tool.finished events
// (8 KB a run at most). The log itself stays in the store; the index only
// says where to start reading it. Safe for concurrent use.
type sessionLogs struct {
	mu   sync.Mutex
	runs map[string]*sessionLog
}

// sessionLog is the index of one run's log.
type sessionLog struct {
	mu sync.Mutex
	// read is the sequence number the log was read up to.
	read int64
	// finished are the sequence numbers of the latest tool.finished
	// events, oldest first, at most maxSessionCalls.
	finished []int64
}

func newSessionLogs() *sessionLogs { return &sessionLogs{runs: map[string]*sessionLog{}} }

// of returns the index of run, new when there was none. A run deleted
// and created again under the same ID (a session's run ID is derived from
// its session) may keep its index: sequence numbers are never reused, so
// the new run's events all come after what the index read, and the
// sequence numbers of the old run's events only make a view read from
// further back.
func (l *sessionLogs) of(run store.Run) *sessionLog {
	l.mu.Lock()
	defer l.mu.Unlock()
	if sl, ok := l.runs[run.ID]; ok {
		return sl
	}
	if len(l.runs) >= maxSessionLogs {
		for id := range l.runs {
			delete(l.runs, id)
			break
		}
	}
	sl := &sessionLog{}
	l.runs[run.ID] = sl
	return sl
}

// forget drops run's index (its session ended).
func (l *sessionLogs) forget(runID string) {
	l.mu.Lock()
	delete(l.runs, runID)
	l.mu.Unlock()
}

// tail reads run's log from where it was read to its end and returns the
// sequence number of its last event (0 when it has none): a wait for
// what comes next starts there.
func (l *sessionLogs) tail(ctx context.Context, st store.Store, run store.Run) (int64, error) {
	sl := l.of(run)
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if err := sl.catchUp(ctx, st, run); err != nil {
		return 0, err
	}
	return sl.read, nil
}

// calls returns the sequence number after which run's latest
// maxSessionCalls tool.finished events are, as far as the log was read.
func (l *sessionLogs) calls(ctx context.Context, st store.Store, run store.Run) (int64, error) {
	sl := l.of(run)
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if err := sl.catchUp(ctx, st, run); err != nil {
		return 0, err
	}
	if len(sl.finished) == 0 {
		return sl.read, nil
	}
	return sl.finished[0] - 1, nil
}

// catchUp reads the run's events after sl.read; the caller holds sl.mu.
func (sl *sessionLog) catchUp(ctx context.Context, st store.Store, run store.Run) error {
	for {
		evs, err := st.ListEvents(ctx, store.EventFilter{Tenant: run.Tenant, RunID: run.ID, AfterSeq: sl.read, Limit: store.MaxLimit})
		if err != nil {
			return err
		}
		for _, ev := range evs {
			sl.read = ev.Seq
			if ev.Type == runs.EventToolFinished {
				sl.finished = append(sl.finished, ev.Seq)
			}
		}
		if n := len(sl.finished) - maxSessionCalls; n > 0 {
			sl.finished = append(sl.finished[:0], sl.finished[n:]...)
		}
		if len(evs) < store.MaxLimit {
			return nil
		}
	}
}

// toolCalls returns the records of a session's run, from its tool.finished
// events: the latest maxSessionCalls, oldest first, as a JSON array. It
// reads the log from the first of them ([sessionLogs.calls]), not from
// the session's start.
func (s *Server) toolCalls(ctx context.Context, run store.Run) (json.RawMessage, error) {
	after, err := s.sessionLogs.calls(ctx, s.store, run)
	if err != nil {
		return nil, err
	}
	return claudeToolCalls(ctx, s.store, run, after)
}
