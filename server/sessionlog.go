package server

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/runcore"
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
// and of each tool's latest few (at most about 100 KB a run, tool names
// included, and maxSessionLogs runs). The log itself stays in the store; the index only
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
	// byTool are the sequence numbers of the latest tool.finished events
	// of each tool, oldest first, at most maxToolSeqs a tool, for at most
	// maxIndexedTools tools of names up to maxToolName bytes; untracked
	// lists the tools left out (nil when none was; a longer name is
	// neither tracked nor kept), whose records are found in the latest
	// maxSessionCalls instead; past maxIndexedTools of those too,
	// overflow says that no tool is tracked.
	byTool    map[string][]int64
	untracked map[string]bool
	overflow  bool
	// persons are the call IDs whose record names a person as deciding
	// (personRecord): one entry per decision a person made on the page,
	// which no client can add without a person.
	persons map[string]bool
}

// Bounds of a session log's index by tool: the records a card shows
// earlier decisions from (maxEarlier of them, besides the call's own and
// a pending one).
const (
	maxToolSeqs     = maxEarlier + 2
	maxIndexedTools = 128
	maxToolName     = 256
)

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
			if ev.Type == runcore.EventToolFinished {
				sl.finished = append(sl.finished, ev.Seq)
				sl.index(ev)
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

// index adds the tool.finished event ev to the index by tool, and its
// call to persons when its record names a person as deciding.
func (sl *sessionLog) index(ev store.Event) {
	var e struct {
		Record struct {
			ID       string        `json:"id"`
			Name     string        `json:"name"`
			Decision gate.Decision `json:"decision"`
		} `json:"record"`
	}
	if json.Unmarshal(ev.Data, &e) != nil {
		return
	}
	if len(decidingPersons(e.Record.Decision)) > 0 {
		if sl.persons == nil {
			sl.persons = map[string]bool{}
		}
		sl.persons[e.Record.ID] = true
	}
	name := e.Record.Name
	if len(name) > maxToolName {
		return // never tracked (ofTool), never kept: a long name costs no memory
	}
	seqs, ok := sl.byTool[name]
	if !ok && len(sl.byTool) >= maxIndexedTools {
		if len(sl.untracked) < maxIndexedTools {
			if sl.untracked == nil {
				sl.untracked = map[string]bool{}
			}
			sl.untracked[name] = true
		} else {
			sl.overflow = true
		}
		return
	}
	if sl.byTool == nil {
		sl.byTool = map[string][]int64{}
	}
	seqs = append(seqs, ev.Seq)
	if n := len(seqs) - maxToolSeqs; n > 0 {
		seqs = append(seqs[:0], seqs[n:]...)
	}
	sl.byTool[name] = seqs
}

// personRecorded reports whether run's log holds a record of the call
// callID that names a person as deciding.
func (l *sessionLogs) personRecorded(ctx context.Context, st store.Store, run store.Run, callID string) (bool, error) {
	sl := l.of(run)
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if err := sl.catchUp(ctx, st, run); err != nil {
		return false, err
	}
	return sl.persons[callID], nil
}

// ofTool returns the sequence numbers of the latest tool.finished events
// of run's calls of the tool name, oldest first; ok is false when the
// index does not track that tool.
func (l *sessionLogs) ofTool(ctx context.Context, st store.Store, run store.Run, name string) (seqs []int64, ok bool, err error) {
	sl := l.of(run)
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if err := sl.catchUp(ctx, st, run); err != nil {
		return nil, false, err
	}
	if len(name) > maxToolName || sl.untracked[name] || sl.overflow {
		return nil, false, nil
	}
	return slices.Clone(sl.byTool[name]), true, nil
}

// toolRecords returns the records of run's latest calls of the tool name,
// oldest first, each read from the store by its sequence number: as many
// reads as the card shows records, whatever the session's length.
func (s *Server) toolRecords(ctx context.Context, run store.Run, name string) ([]gate.Record, error) {
	seqs, ok, err := s.sessionLogs.ofTool(ctx, s.store, run, name)
	if err != nil {
		return nil, err
	}
	if !ok {
		calls, err := s.toolCalls(ctx, run)
		if err != nil {
			return nil, err
		}
		var recs []gate.Record
		if err := json.Unmarshal(calls, &recs); err != nil {
			return nil, err
		}
		return recs, nil
	}
	recs := make([]gate.Record, 0, len(seqs))
	for _, seq := range seqs {
		evs, err := s.store.ListEvents(ctx, store.EventFilter{Tenant: run.Tenant, RunID: run.ID, AfterSeq: seq - 1, Limit: 1})
		if err != nil {
			return nil, err
		}
		var e struct {
			Record *gate.Record `json:"record"`
		}
		if len(evs) == 1 && evs[0].Seq == seq && json.Unmarshal(evs[0].Data, &e) == nil && e.Record != nil {
			recs = append(recs, *e.Record)
		}
	}
	return recs, nil
}
