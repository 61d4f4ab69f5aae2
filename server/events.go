package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/coder/websocket"

	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/store"
)

// streamParams reads ?run= (checked against p's tenant; the run is
// returned, nil without ?run=) and where to start: the Last-Event-ID header
// (SSE reconnects), else ?after=.
func (s *Server) streamParams(w http.ResponseWriter, r *http.Request, p Principal) (store.EventFilter, *store.Run, bool) {
	f := store.EventFilter{Tenant: p.Tenant, RunID: r.URL.Query().Get("run"), Limit: store.MaxLimit}
	var run *store.Run
	if f.RunID != "" {
		got, ok := s.ownRun(w, r, p, f.RunID)
		if !ok {
			return f, nil, false
		}
		run = &got
	}
	from := r.Header.Get("Last-Event-ID")
	if from == "" {
		from = r.URL.Query().Get("after")
	}
	if from != "" {
		n, err := strconv.ParseInt(from, 10, 64)
		if err != nil || n < 0 {
			problemf(w, r, http.StatusBadRequest, "Last-Event-ID / after: want the seq of the last event seen (a number)")
			return f, nil, false
		}
		f.AfterSeq = n
	}
	return f, run, true
}

// follow calls emit for every event f selects after f.AfterSeq, in order
// (with its SSE frame when the feed has it, else nil), flush (if not nil)
// after each batch of them, and beat when nothing happened for a heartbeat
// interval, until ctx ends, the server shuts down, or emit, flush or beat
// fail. It reads the server's feed of the log while [Server.Run] follows it
// and the stream is within the events it keeps, and the store otherwise
// (behind it, or no Run).
func (s *Server) follow(ctx context.Context, f store.EventFilter, emit func(store.Event, []byte) error, flush, beat func() error) error {
	// Every wait ends at ctx's end or at Shutdown: one context for the
	// stream, cancelled by a callback when the server closes (no goroutine
	// waits for that), and a timer per wait for the heartbeat.
	sctx, scancel := context.WithCancel(ctx)
	defer scancel()
	defer context.AfterFunc(s.closed, scancel)()
	var kept []store.Event // the feed's last events, their room reused
	var frames [][]byte
	for {
		var changed <-chan struct{}
		var fed bool
		kept, frames, changed, fed = s.feed.after(f, kept, frames)
		evs := kept
		if !fed {
			var err error
			if evs, err = s.store.ListEvents(ctx, f); err != nil {
				return err
			}
		}
		for i, ev := range evs {
			var frame []byte
			if fed {
				frame = frames[i]
			}
			if err := emit(ev, frame); err != nil {
				return err
			}
			f.AfterSeq = ev.Seq
		}
		if flush != nil && len(evs) > 0 {
			if err := flush(); err != nil {
				return err
			}
		}
		if len(evs) == f.Limit || (!fed && len(evs) > 0) {
			continue // more, or perhaps the feed has the rest now
		}
		var err error
		if fed {
			err = waitChanged(sctx, changed, s.beat)
		} else {
			wctx, cancel := context.WithTimeout(sctx, s.beat)
			err = s.store.WaitEvents(wctx, f)
			cancel()
		}
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case s.closing():
			return errShuttingDown
		case errors.Is(err, context.DeadlineExceeded):
			if err := beat(); err != nil {
				return err
			}
		case err != nil:
			return err
		}
	}
}

// writeDeadline returns a function to call before each write to a stream:
// it sets the connection's write deadline d from now when the one set is
// older than d/4, so that each write has at least three quarters of d,
// and a stream of many events does not set a deadline for each.
func writeDeadline(rc *http.ResponseController, d time.Duration) func() {
	var set time.Time
	return func() {
		now := time.Now()
		if now.Sub(set) < d/4 {
			return
		}
		set = now
		_ = rc.SetWriteDeadline(now.Add(d))
	}
}

// waitChanged waits until changed is closed, ctx ends, or d passes
// (context.DeadlineExceeded).
func waitChanged(ctx context.Context, changed <-chan struct{}, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-changed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return context.DeadlineExceeded
	}
}

var errShuttingDown = errors.New("the server is shutting down")

func streamEvent(ev store.Event) serverapi.StreamEvent {
	return serverapi.StreamEvent{Seq: ev.Seq, Type: ev.Type, RunID: ev.RunID, Time: ev.Time, Data: ev.Data}
}

// events is GET /v1/events: Server-Sent Events, one per store event, with
// the store's sequence number as id so that a reconnect with Last-Event-ID
// goes on with no gap and no duplicate; a comment line every heartbeat. A
// stream of one run (?run=) ends after the run's end (run.finished or
// run.cancelled) was sent; a client that saw it already gets 204 (which an
// EventSource does not reconnect after). A tenant's stream stays open.
func (s *Server) events(w http.ResponseWriter, r *http.Request, p Principal) {
	f, run, ok := s.streamParams(w, r, p)
	if !ok {
		return
	}
	ended := run != nil && run.Status.Finished()
	if ended {
		// The client saw the end already: 204, which also stops an
		// EventSource from reconnecting (HTML, server-sent events).
		if evs, err := s.store.ListEvents(r.Context(), store.EventFilter{Tenant: f.Tenant, RunID: f.RunID, AfterSeq: f.AfterSeq, Limit: 1}); err == nil && len(evs) == 0 {
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	defer s.feed.watch()()
	rc := http.NewResponseController(w)
	// Each write has a deadline: a client that stops reading is dropped
	// once one does not finish in time, and frees its place.
	deadline := writeDeadline(rc, s.writeTimeout)
	deadline()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprint(w, "retry: 2000\n: tollgate events\n\n"); err != nil {
		return
	}
	if rc.Flush() != nil {
		return
	}
	// emit adds an event to the batch, encoded once for every stream
	// when the feed gave it (frame); send writes the batch in one write
	// and flushes it: a write per event cost a system call per event and
	// watcher. A batch is sent once it holds maxBatch bytes, so that a
	// stream catching up writes in bounded pieces, each with its deadline.
	var batch []byte
	send := func() error {
		if len(batch) == 0 {
			return nil
		}
		deadline()
		_, err := w.Write(batch)
		batch = batch[:0]
		if cap(batch) > 2*maxBatch {
			batch = nil // a large event once: not kept
		}
		if err != nil {
			return err
		}
		return rc.Flush()
	}
	emit := func(ev store.Event, frame []byte) error {
		if frame == nil {
			var err error
			if frame, err = sseFrame(ev); err != nil {
				return err
			}
		}
		batch = append(batch, frame...)
		if f.RunID != "" && terminal(ev.Type) {
			return errRunEnded // nothing follows a run's end
		}
		if len(batch) >= maxBatch {
			return send()
		}
		return nil
	}
	beat := func() error {
		deadline()
		if _, err := fmt.Fprint(w, ": heartbeat\n\n"); err != nil {
			return err
		}
		return rc.Flush()
	}
	if ended {
		// A run that ended before the stream opened: its events after
		// f.AfterSeq, then the end.
		for {
			evs, err := s.store.ListEvents(r.Context(), f)
			if err != nil {
				return
			}
			var stop error // the run's end was sent, or an event failed
			for _, ev := range evs {
				if stop = emit(ev, nil); stop != nil {
					break
				}
				f.AfterSeq = ev.Seq
			}
			if send() != nil || stop != nil || len(evs) < f.Limit {
				return
			}
		}
	}
	if err := s.follow(r.Context(), f, emit, send, beat); errors.Is(err, errRunEnded) {
		_ = send()
	}
}

// maxBatch is how many bytes of events an event stream writes at once, at
// most (and one event more).
const maxBatch = 64 << 10

// sseFrame is ev as an event of GET /v1/events, its id the event's Seq.
func sseFrame(ev store.Event) ([]byte, error) {
	b, err := json.Marshal(streamEvent(ev))
	if err != nil {
		return nil, err
	}
	return fmt.Appendf(nil, "id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, sseField(ev.Type), b), nil
}

// errRunEnded ends a stream of one run once its end was sent.
var errRunEnded = errors.New("the run has ended")

// terminal reports whether an event of type typ ends its run for good.
func terminal(typ string) bool {
	return typ == runcore.EventRunFinished || typ == runcore.EventRunCancelled
}

// sseField keeps a field value on one line.
func sseField(v string) string {
	b := []byte(v)
	for i, c := range b {
		if c < ' ' || c == 0x7f {
			b[i] = '_'
		}
	}
	return string(b)
}

// websocket is GET /v1/ws: the events of GET /v1/events as messages, and
// decisions and set_autonomy from the client.
func (s *Server) websocket(w http.ResponseWriter, r *http.Request, p Principal) {
	f, _, ok := s.streamParams(w, r, p)
	if !ok {
		return
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(maxBodyBytes)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	send := func(m serverapi.WSMessage) error {
		m.V = 1
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		wctx, wcancel := context.WithTimeout(ctx, s.writeTimeout)
		defer wcancel()
		return c.Write(wctx, websocket.MessageText, b)
	}
	go func() {
		defer cancel()
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			var m serverapi.WSMessage
			if err := decodeBody("message", b, maxBodyBytes, &m); err != nil {
				_ = send(serverapi.WSMessage{Type: "error", Problem: &serverapi.Problem{Type: "about:blank", Title: "Bad Request", Status: http.StatusBadRequest, Detail: err.Error()}})
				continue
			}
			if m.V != 1 {
				_ = send(serverapi.WSMessage{Type: "error", Problem: &serverapi.Problem{Type: "about:blank", Title: "Bad Request", Status: http.StatusBadRequest, Detail: `want a JSON message with "v":1`}})
				continue
			}
			_ = send(s.wsHandle(ctx, p, m))
		}
	}()
	emit := func(ev store.Event, _ []byte) error {
		se := streamEvent(ev)
		return send(serverapi.WSMessage{Type: "event", Event: &se})
	}
	beat := func() error {
		pctx, pcancel := context.WithTimeout(ctx, s.beat)
		defer pcancel()
		return c.Ping(pctx)
	}
	err = s.follow(ctx, f, emit, nil, beat)
	if errors.Is(err, errShuttingDown) {
		_ = c.Close(websocket.StatusGoingAway, "the server is shutting down")
		return
	}
	_ = c.Close(websocket.StatusNormalClosure, "")
}

func (s *Server) wsHandle(ctx context.Context, p Principal, m serverapi.WSMessage) serverapi.WSMessage {
	out := serverapi.WSMessage{Ref: m.Ref}
	fail := func(prob *serverapi.Problem) serverapi.WSMessage {
		if prob.Title == "" {
			prob.Title = http.StatusText(prob.Status)
		}
		if prob.Type == "" {
			prob.Type = "about:blank"
		}
		out.Type, out.Problem = "error", prob
		return out
	}
	switch m.Type {
	case "approve", "deny", "modify", "answer":
		d := serverapi.DecisionRequest{Decision: m.Type, Reason: m.Reason, EditedArgs: m.EditedArgs, ArgsDigest: m.ArgsDigest, Answer: m.Answer}
		switch {
		case m.Type == "modify" && len(m.EditedArgs) == 0:
			return fail(&serverapi.Problem{Status: http.StatusBadRequest, Detail: "modify needs editedArgs"})
		case m.Type == "answer" && len(m.Answer) == 0:
			return fail(&serverapi.Problem{Status: http.StatusBadRequest, Detail: "answer needs an answer"})
		case m.Type == "modify", m.Type == "answer":
			d.Decision = "approve"
		}
		v, prob := s.decideCore(ctx, p, m.ID, d)
		if prob != nil {
			return fail(prob)
		}
		out.Type, out.Approval = "result", &v
	case "set_autonomy":
		ch, prob := s.setAutonomy(ctx, p, serverapi.AutonomyRequest{Level: m.Level, Run: m.Run})
		if prob != nil {
			return fail(prob)
		}
		out.Type, out.Autonomy = "autonomy", &ch
	default:
		return fail(&serverapi.Problem{Status: http.StatusBadRequest, Detail: "unknown message type " + strconv.Quote(m.Type) + " (want approve, deny, modify, answer or set_autonomy)"})
	}
	return out
}
