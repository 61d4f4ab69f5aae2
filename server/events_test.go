package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/server"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// sseEvent is one event read from a stream; comment is set for a comment line.
type sseEvent struct {
	id, event, data string
	comment         bool
}

// sseStream reads events from GET /v1/events.
type sseStream struct {
	body io.Closer
	sc   *bufio.Scanner
}

func (f *fixture) openSSE(path, token string, hdr ...string) *sseStream {
	f.t.Helper()
	req, _ := http.NewRequest("GET", f.ts.URL+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		f.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	f.t.Cleanup(func() { resp.Body.Close() })
	return &sseStream{body: resp.Body, sc: bufio.NewScanner(resp.Body)}
}

// next returns the next event or comment (comments of the opening lines
// included).
func (s *sseStream) next(t *testing.T) sseEvent {
	t.Helper()
	var ev sseEvent
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case line == "":
			if ev.id != "" || ev.data != "" || ev.comment {
				return ev
			}
		case strings.HasPrefix(line, ":"):
			ev.comment = true
		case strings.HasPrefix(line, "id: "):
			ev.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			ev.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.data = line[6:]
		}
	}
	t.Fatalf("stream ended: %v", s.sc.Err())
	return ev
}

// wantEnd fails unless the server ends the stream before another event.
func (s *sseStream) wantEnd(t *testing.T) {
	t.Helper()
	// A stream that does not end is cut (and the test fails) after 10 s.
	cut := time.AfterFunc(10*time.Second, func() { s.body.Close() })
	defer cut.Stop()
	for s.sc.Scan() {
		if line := s.sc.Text(); line != "" && !strings.HasPrefix(line, ":") && !strings.HasPrefix(line, "retry: ") {
			t.Fatalf("the stream goes on: %q", line)
		}
	}
	if err := s.sc.Err(); err != nil {
		t.Fatalf("the stream broke: %v", err)
	}
}

// nextEvent skips comments.
func (s *sseStream) nextEvent(t *testing.T) sseEvent {
	t.Helper()
	for {
		if ev := s.next(t); !ev.comment {
			return ev
		}
	}
}

// A client disconnected mid-stream and reconnected with Last-Event-ID (and
// a ticket instead of the header, as EventSource does) gets every event of
// the run once, in order: no gap, no duplicate. Idle streams get heartbeats.
func TestSSEResume(t *testing.T) {
	f := newFixture(t, nil, nil, nil)
	id := f.startRun()
	a := f.pending(id)
	s1 := f.openSSE("/v1/events?run="+id, vicToken)
	var seqs []int64
	for range 2 {
		ev := s1.nextEvent(t)
		n, err := strconv.ParseInt(ev.id, 10, 64)
		if err != nil {
			t.Fatalf("event id %q", ev.id)
		}
		var se serverapi.StreamEvent
		if err := json.Unmarshal([]byte(ev.data), &se); err != nil || se.Seq != n || se.Type != ev.event || se.RunID != id {
			t.Fatalf("event %+v: data %s %v", ev, ev.data, err)
		}
		seqs = append(seqs, n)
	}
	s1.body.Close() // disconnect with events left unread
	if code := f.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, nil); code != http.StatusOK {
		t.Fatalf("decision: %d", code)
	}
	f.waitRun(id, store.RunDone)
	var tk struct {
		Ticket string `json:"ticket"`
	}
	if code := f.do("POST", "/v1/events/ticket", vicToken, nil, &tk); code != http.StatusCreated || tk.Ticket == "" {
		t.Fatalf("ticket: %d", code)
	}
	s2 := f.openSSE("/v1/events?run="+id+"&ticket="+tk.Ticket, "", "Last-Event-ID", strconv.FormatInt(seqs[len(seqs)-1], 10))
	all, _ := f.store.ListEvents(t.Context(), store.EventFilter{Tenant: "acme", RunID: id})
	var want []int64
	for _, e := range all {
		want = append(want, e.Seq)
	}
	for len(seqs) < len(want) {
		n, _ := strconv.ParseInt(s2.nextEvent(t).id, 10, 64)
		seqs = append(seqs, n)
	}
	if !slices.Equal(seqs, want) {
		t.Fatalf("events seen %v, want %v", seqs, want)
	}
	s2.wantEnd(t) // the run's stream ends with the run
	// A tenant's stream stays open after its events: heartbeats.
	s3 := f.openSSE("/v1/events", vicToken, "Last-Event-ID", strconv.FormatInt(want[len(want)-1], 10))
	if open := s3.next(t); !open.comment {
		t.Fatalf("the stream opens with %+v", open)
	}
	if ev := s3.next(t); !ev.comment {
		t.Fatalf("after the tenant's last event, got %+v, want a heartbeat comment", ev)
	}
	// A forged or missing credential is refused.
	var p serverapi.Problem
	if code := f.do("GET", "/v1/events?ticket=tkt_forged", "", nil, &p); code != http.StatusUnauthorized {
		t.Fatalf("forged ticket: %d", code)
	}
	if code := f.do("GET", "/v1/runs?ticket="+tk.Ticket, "", nil, &p); code != http.StatusUnauthorized {
		t.Fatalf("a ticket outside the streams: %d", code)
	}
	if code := f.do("GET", "/v1/events?after=x", vicToken, nil, &p); code != http.StatusBadRequest {
		t.Fatalf("bad after: %d", code)
	}
}

// A stream of one run ends once the run's end was sent: live, when the run
// ends while it is open, and at once for a client that saw the end.
func TestSSERunStreamEnds(t *testing.T) {
	f := newFixture(t, nil, nil, nil)
	id := f.startRun()
	a := f.pending(id)
	live := f.openSSE("/v1/events?run="+id, vicToken)
	if code := f.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, nil); code != http.StatusOK {
		t.Fatalf("decision: %d", code)
	}
	var last sseEvent
	for last.event != "run.finished" {
		last = live.nextEvent(t)
	}
	live.wantEnd(t)
	// A client that saw the end (an EventSource reconnecting) gets 204,
	// which stops it; one that did not gets the rest, then the end.
	if code := f.do("GET", "/v1/events?run="+id+"&after="+last.id, vicToken, nil, nil); code != http.StatusNoContent {
		t.Fatalf("the stream of an ended run, after its end: %d, want 204", code)
	}
	rest := f.openSSE("/v1/events?run="+id+"&after=1", vicToken)
	for ev := rest.nextEvent(t); ev.event != "run.finished"; ev = rest.nextEvent(t) {
	}
	rest.wantEnd(t)
	// A cancelled run's stream ends with run.cancelled.
	id2 := f.startRun("Idempotency-Key", "second")
	f.pending(id2)
	s := f.openSSE("/v1/events?run="+id2, vicToken)
	if code := f.do("POST", "/v1/runs/"+id2+"/cancel", aliceToken, nil, nil); code != http.StatusAccepted {
		t.Fatalf("cancel: %d", code)
	}
	for ev := s.nextEvent(t); ev.event != "run.cancelled"; ev = s.nextEvent(t) {
	}
	s.wantEnd(t)
}

// The WebSocket carries the same events, and approve / modify / deny
// messages decide as the HTTP API does, as the connection's principal.
func TestWebSocket(t *testing.T) {
	f := newFixture(t, nil, nil, nil)
	id := f.startRun()
	a := f.pending(id)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	url := "ws" + strings.TrimPrefix(f.ts.URL, "http") + "/v1/ws?run=" + id
	if _, resp, err := websocket.Dial(ctx, url, nil); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("dial without a token: %v %v", resp, err)
	}
	// A ticket (which travels in the URL) reads, and never decides, even
	// when an approver minted it.
	var tk struct {
		Ticket string `json:"ticket"`
	}
	if code := f.do("POST", "/v1/events/ticket", aliceToken, nil, &tk); code != http.StatusCreated {
		t.Fatalf("ticket: %d", code)
	}
	tc, _, err := websocket.Dial(ctx, url+"&ticket="+tk.Ticket, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = wsjson.Write(ctx, tc, map[string]any{"v": 1, "type": "approve", "ref": "t1", "id": a.ID, "argsDigest": a.ArgsDigest})
	for {
		var m serverapi.WSMessage
		if err := wsjson.Read(ctx, tc, &m); err != nil {
			t.Fatal(err)
		}
		if m.Ref == "t1" {
			if m.Type != "error" || m.Problem == nil || m.Problem.Status != http.StatusForbidden {
				t.Fatalf("approve over a ticket's WebSocket: %+v, want 403", m)
			}
			break
		}
	}
	tc.CloseNow()
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + aliceToken}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	read := func() serverapi.WSMessage {
		var m serverapi.WSMessage
		if err := wsjson.Read(ctx, c, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	for m := read(); m.Event == nil || m.Event.Type != "run.halted"; m = read() {
	}
	_ = c.Write(ctx, websocket.MessageText, []byte(strings.Repeat("[", 100)+strings.Repeat("]", 100)))
	if m := read(); m.Type != "error" || m.Problem == nil || m.Problem.Status != http.StatusBadRequest {
		t.Fatalf("a message nested too deep: %+v", m)
	}
	// "deny" first, "approve" last: read one way by a log, another by the
	// decoder. Refused, as in request bodies, and nothing is decided.
	_ = c.Write(ctx, websocket.MessageText, []byte(`{"v":1,"type":"deny","ref":"d1","id":"`+a.ID+`","argsDigest":"`+a.ArgsDigest+`","type":"approve"}`))
	if m := read(); m.Type != "error" || m.Problem == nil || m.Problem.Status != http.StatusBadRequest || !strings.Contains(m.Problem.Detail, "twice") {
		t.Fatalf("a message with a key twice: %+v", m)
	}
	// A message without an ID names no approval, though the tenant has
	// only one: an empty ID is not a filter that selects it.
	_ = wsjson.Write(ctx, c, map[string]any{"v": 1, "type": "approve", "ref": "r0", "argsDigest": a.ArgsDigest})
	if m := read(); m.Type != "error" || m.Ref != "r0" || m.Problem == nil || m.Problem.Status != http.StatusNotFound {
		t.Fatalf("approve with no ID: %+v", m)
	}
	_ = wsjson.Write(ctx, c, map[string]any{"v": 1, "type": "approve", "ref": "r1", "id": a.ID, "argsDigest": "sha256:wrong"})
	m := read()
	if m.Type != "error" || m.Ref != "r1" || m.Problem == nil || m.Problem.Status != http.StatusPreconditionFailed {
		t.Fatalf("approve with a wrong digest: %+v", m)
	}
	_ = wsjson.Write(ctx, c, map[string]any{"v": 1, "type": "modify", "ref": "r2", "id": a.ID, "argsDigest": a.ArgsDigest, "editedArgs": map[string]int{"amount": 9}})
	// The result and the run's further events come in either order.
	var result *serverapi.WSMessage
	for finished := false; !finished || result == nil; {
		m := read()
		switch {
		case m.Type == "event" && m.Event.Type == "run.finished":
			finished = true
		case m.Type != "event":
			result = &m
		}
	}
	if result.Type != "result" || result.Ref != "r2" || result.Approval == nil || result.Approval.DecidedBy.String() != "person:alice" {
		t.Fatalf("modify: %+v", result)
	}
	if args := f.transfer.Args(); len(args) != 1 || args[0] != `{"amount":9}` {
		t.Fatalf("transfer ran with %v", args)
	}
}

// PUT /v1/autonomy is set_autonomy: a tenant's level applies to the next
// run's calls, a run's own level overrides it, and each change is an
// autonomy.changed event.
func TestAutonomy(t *testing.T) {
	m := testkit.Script([]model.FuncCall{testkit.Call("c1", "lookup", nil)})
	f := newFixture(t, nil, m, nil)
	// No level: the read-only lookup is allowed.
	first := f.startRun()
	f.waitRun(first, store.RunDone)
	var ch serverapi.AutonomyChange
	if code := f.do("PUT", "/v1/autonomy", adaToken, serverapi.AutonomyRequest{Level: "manual"}, &ch); code != http.StatusOK || ch.Level != "manual" || ch.By != "person:ada" {
		t.Fatalf("set the tenant's level: %d %+v", code, ch)
	}
	second := f.startRun()
	a := f.pending(second) // manual asks even for a read-only call
	if a.Tool != "lookup" || a.AskedBy != "autonomy:manual" {
		t.Fatalf("approval under manual: %+v", a)
	}
	if code := f.do("PUT", "/v1/autonomy", aliceToken, serverapi.AutonomyRequest{Level: "full_auto", Run: second}, &ch); code != http.StatusOK || ch.Scope != "run" {
		t.Fatalf("set the run's level: %d %+v", code, ch)
	}
	var v serverapi.RunView
	if f.do("GET", "/v1/runs/"+second, vicToken, nil, &v); v.Autonomy != "full_auto" {
		t.Fatalf("run's autonomy %q, want full_auto", v.Autonomy)
	}
	var p serverapi.Problem
	if code := f.do("PUT", "/v1/autonomy", adaToken, serverapi.AutonomyRequest{Level: "reckless"}, &p); code != http.StatusUnprocessableEntity {
		t.Fatalf("unknown level: %d", code)
	}
	// Another tenant's level is untouched.
	var lvl map[string]string
	if f.do("GET", "/v1/autonomy", bobToken, nil, &lvl); lvl["level"] != "" {
		t.Fatalf("globex's level %q", lvl["level"])
	}
	evs, _ := f.store.ListEvents(t.Context(), store.EventFilter{Tenant: "acme"})
	n := 0
	for _, e := range evs {
		if e.Type == serverapi.EventAutonomyChanged {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("%d autonomy.changed events, want 2", n)
	}
}

// Event streams are capped per principal and in all: one over a cap is 429
// with Retry-After, and closing a stream frees its place.
func TestEventStreamCaps(t *testing.T) {
	f := newFixture(t, nil, nil, &server.Options{MaxStreams: 3, MaxStreamsPerPrincipal: 2})
	open := func(token string) (*http.Response, func()) { return openStream(t, f, token) }
	var closers []func()
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	for i := 0; i < 2; i++ {
		resp, c := open(vicToken)
		closers = append(closers, c)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %d of the principal: %d", i+1, resp.StatusCode)
		}
	}
	resp, c := open(vicToken)
	c()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("third stream of one principal: %d, Retry-After %q; want 429 with it", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	resp, c = open(aliceToken) // another principal: the third in all
	closers = append(closers, c)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("another principal's stream: %d", resp.StatusCode)
	}
	resp, c = open(bobToken) // the fourth in all
	c()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a stream over the server's cap: %d, want 429", resp.StatusCode)
	}
	closers[0]() // one of vic's ends; vic may open one again
	closers = closers[1:]
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, c = open(vicToken)
		if resp.StatusCode == http.StatusOK {
			closers = append(closers, c)
			break
		}
		c()
		if time.Now().After(deadline) {
			t.Fatalf("a closed stream did not free its place: %d", resp.StatusCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A run.halted event says what the run waits for: the kind, tool and ID of
// each pending request, for a hosted and a durable run alike.
func TestHaltedEventSaysWhatTheRunWaitsFor(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(map[bool]string{false: "hosted", true: "durable"}[durable], func(t *testing.T) {
			st := memory.New(nil)
			opts := &server.Options{}
			if durable {
				opts.Durable = newMemQueue(t, st, &testBuilder{m: transferScript(), tools: agent.ToolList{&testkit.Counter{Name: "transfer", Schema: transferSchema}}})
			}
			f := newFixture(t, st, nil, opts)
			id := f.startRun()
			sse := f.openSSE("/v1/events?run="+id, vicToken)
			ev := sse.nextEvent(t)
			for ev.event != "run.halted" {
				ev = sse.nextEvent(t)
			}
			var se serverapi.StreamEvent
			var data struct{ Status, Reason string }
			if err := json.Unmarshal([]byte(ev.data), &se); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(se.Data, &data); err != nil {
				t.Fatal(err)
			}
			var page serverapi.ApprovalPage
			if code := f.do("GET", "/v1/approvals?status=pending&run="+id, vicToken, nil, &page); code != http.StatusOK || len(page.Approvals) != 1 {
				t.Fatalf("pending approvals: %d %+v", code, page)
			}
			want := "waits for an answer: approval of transfer (" + page.Approvals[0].ID + ")"
			if data.Status != "pending" || data.Reason != want {
				t.Fatalf("run.halted data %s, want status pending and reason %q", se.Data, want)
			}
		})
	}
}

// A client that opens an event stream and stops reading held its place,
// and a goroutine, for as long as it kept the connection: its writes
// blocked on a full connection. A write that does not finish within
// Options.StreamWriteTimeout now ends the stream, and the place is free.
func TestStalledEventStreamFreesItsPlace(t *testing.T) {
	f := newFixture(t, nil, nil, &server.Options{MaxStreamsPerPrincipal: 1, StreamWriteTimeout: 300 * time.Millisecond})
	c, err := net.Dial("tcp", f.ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.(*net.TCPConn).SetReadBuffer(4096)
	if _, err := fmt.Fprintf(c, "GET /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", vicToken); err != nil {
		t.Fatal(err)
	}
	// The stream took its place before any other: its answer's first
	// line is read (and nothing more, so that its writes then block). A
	// second stream opened first, under load, took the place and left
	// this one refused.
	status, err := bufio.NewReaderSize(c, 16).ReadString('\n')
	if err != nil || !strings.HasPrefix(status, "HTTP/1.1 200") {
		t.Fatalf("the stalled stream's answer: %q %v", status, err)
	}
	// The stream is open (its place is taken) once a second one is refused.
	open := func() int {
		req, _ := http.NewRequest("GET", f.ts.URL+"/v1/events", nil)
		req.Header.Set("Authorization", "Bearer "+vicToken)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	waitFor(t, "the stream limit to refuse a stream", func() bool { return open() == http.StatusTooManyRequests })
	// Far more than the connection buffers: the stream's writes block.
	data, _ := json.Marshal(map[string]string{"pad": strings.Repeat("x", 64<<10)})
	for i := 0; i < 256; i++ {
		if _, err := f.store.AppendEvents(context.Background(), store.Event{Tenant: "acme", Type: "test.padding", Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for open() != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("a stream whose client stopped reading still holds its place")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
