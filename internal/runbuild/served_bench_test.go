package runbuild_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/internal/runbuild"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/internal/serveconfig"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/server"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/sqlite"
)

// servedClients is how many clients start runs at once in the loaded rounds.
const servedClients = 50

// servedRound is how many runs each loaded round drives.
const servedRound = 200

// servedWatchers is how many event streams watch the watched server.
const servedWatchers = 100

// BenchmarkServedVsInProcess measures a run served by package server (the
// builder of this package, a SQLite store, runs started over HTTP by
// servedClients clients) against the same agent built once and run in
// this process (agent.Run), in interleaved rounds of one run at a time and
// of servedRound runs under load. The agent is a script of two model turns
// with one glob call. Drivers: inproc (agent.Run), host (a runs.Host on
// its own SQLite store, the agent's options built once), served (a POST
// /v1/runs?wait= that answers at the run's end), watched (served, with
// servedWatchers SSE streams of the tenant open on its server), and http
// (served's round trip alone, answered at once: newBareHTTP). Reported per
// driver: loaded runs/s, one-at-a-time ms/run, and CPU ms/run (this
// process and its children); the ratios the server's targets are stated
// in; served/host-bound and served/host-serial-bound, the most
// served/host-runs/s can be and the least served/host-serial can be while
// a run is an HTTP round trip on these cores; watched-lag-p99-ms, from a run's end
// event's time (set before it waits for the store's writer) to its arrival
// at a watcher; watched-fanout-p99-ms, from the moment a reader of the
// store in this process sees it to its arrival at a watcher (the server's
// part of the lag); and watched-serial-lag-p99-ms, the first while the
// watched server's runs go one at a time.
func BenchmarkServedVsInProcess(b *testing.B) {
	cfg := servedConfig(b)
	inproc, built := newInProcess(b, cfg)
	host := newHost(b, cfg, built)
	served, _ := newServed(b, cfg, 0)
	watched, lag := newServed(b, cfg, servedWatchers)
	drivers := []struct {
		name string
		run  func() error
	}{{"inproc", inproc}, {"host", host}, {"served", served}, {"watched", watched}, {"http", newBareHTTP(b)}}
	tput := map[string][]float64{}
	serial := map[string][]float64{}
	cpu := map[string][]float64{}
	b.ResetTimer()
	for i := range b.N {
		order := slices.Clone(drivers)
		for range i % len(order) {
			order = append(order[1:], order[0])
		}
		for _, d := range order {
			t0 := time.Now()
			lag.serial.Store(d.name == "watched")
			for range 20 {
				if err := d.run(); err != nil {
					b.Fatal(err)
				}
			}
			serial[d.name] = append(serial[d.name], float64(time.Since(t0).Microseconds())/1000/20)
			lag.serial.Store(false)
			t0, c0 := time.Now(), cpuTime()
			if err := loaded(d.run); err != nil {
				b.Fatal(err)
			}
			tput[d.name] = append(tput[d.name], servedRound/time.Since(t0).Seconds())
			cpu[d.name] = append(cpu[d.name], float64((cpuTime()-c0).Microseconds())/1000/servedRound)
		}
	}
	b.StopTimer()
	for _, d := range drivers {
		b.ReportMetric(median(tput[d.name]), d.name+"-runs/s")
		b.ReportMetric(median(serial[d.name]), d.name+"-serial-ms")
		b.ReportMetric(median(cpu[d.name]), d.name+"-cpu-ms")
	}
	b.ReportMetric(median(tput["served"])/median(tput["inproc"]), "served/inproc-runs/s")
	b.ReportMetric(median(serial["served"])/median(serial["inproc"]), "served/inproc-serial")
	b.ReportMetric(median(tput["served"])/median(tput["host"]), "served/host-runs/s")
	b.ReportMetric(median(serial["served"])/median(serial["host"]), "served/host-serial")
	// The most served can be of host while each run is one HTTP round
	// trip on these cores: host's CPU a run over that plus a bare one's.
	b.ReportMetric(median(cpu["host"])/(median(cpu["host"])+median(cpu["http"])), "served/host-bound")
	b.ReportMetric((median(serial["host"])+median(serial["http"]))/median(serial["host"]), "served/host-serial-bound")
	b.ReportMetric(median(tput["watched"])/median(tput["served"]), "watched/served-runs/s")
	b.ReportMetric(lag.p99(func(l *lags) []float64 { return l.ms }), "watched-lag-p99-ms")
	b.ReportMetric(lag.p99(func(l *lags) []float64 { return l.fanout }), "watched-fanout-p99-ms")
	b.ReportMetric(lag.p99(func(l *lags) []float64 { return l.serialMs }), "watched-serial-lag-p99-ms")
}

// loaded drives servedRound runs with servedClients at once.
func loaded(run func() error) error {
	var wg sync.WaitGroup
	errs := make(chan error, servedClients)
	work := make(chan struct{}, servedRound)
	for range servedRound {
		work <- struct{}{}
	}
	close(work)
	for range servedClients {
		wg.Go(func() {
			for range work {
				if err := run(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// cpuTime is the CPU time of this process and its waited-for children.
func cpuTime() time.Duration {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if syscall.Getrusage(who, &ru) == nil {
			total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return total
}

// servedConfig is the benchmark's agent: a script of a glob call, then an
// answer, on a workspace of a few files.
func servedConfig(tb testing.TB) runs.RunConfig {
	dir := tb.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		tb.Fatal(err)
	}
	for i := range 5 {
		writeFile(tb, filepath.Join(ws, fmt.Sprintf("f%d.go", i)), "package f\n")
	}
	writeFile(tb, filepath.Join(dir, "script.yaml"), "turns:\n  - toolCalls:\n      - name: glob\n        args: {pattern: \"*.go\"}\n  - text: done\n")
	cfg, err := runs.RunConfig{Agent: "globber", AgentConfig: runs.AgentConfig{Model: runs.ModelRef{Provider: "script", Name: "script.yaml"}, Workdir: "ws"}}.Resolve(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return cfg
}

// newInProcess builds cfg's agent once and returns a driver that runs it.
func newInProcess(b testing.TB, cfg runs.RunConfig) (func() error, *runs.Built) {
	built, err := runbuild.New(nil).Build(b.Context(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = built.Close() })
	a, err := agent.New(&built.Options)
	if err != nil {
		b.Fatal(err)
	}
	return func() error {
		res, err := a.Run(context.Background(), "go")
		if err == nil && res.Text != "done" {
			err = fmt.Errorf("in process: answer %q", res.Text)
		}
		return err
	}, built
}

// newHost returns a driver that starts a run with a runs.Host in this
// process on a SQLite store of its own, its agent's options built once.
func newHost(b testing.TB, cfg runs.RunConfig, built *runs.Built) func() error {
	st, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "host.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	h, err := runs.New(st, runs.BuilderFunc(func(ctx context.Context, cfg runs.RunConfig) (*runs.Built, error) {
		once := *built
		once.Close = nil
		return &once, nil
	}), nil)
	if err != nil {
		b.Fatal(err)
	}
	return func() error {
		res, err := h.Start(context.Background(), runs.StartRequest{Config: cfg, Prompt: "go"})
		if err == nil && res.Text != "done" {
			err = fmt.Errorf("host: answer %q", res.Text)
		}
		return err
	}
}

// newServed starts a server over a SQLite store, with watchers SSE streams
// of its tenant open, and returns a driver that starts a run over HTTP and
// waits for its end in the same request (?wait=), and the watchers'
// delivery lags.
func newServed(b testing.TB, cfg runs.RunConfig, watchers int) (func() error, *lags) {
	st, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "runs.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	tokens, err := serveconfig.NewTokens([]serveconfig.TokenEntry{{SHA256: serveconfig.HashToken("tg_ops"), Name: "olga", Roles: []server.Role{server.RoleAdmin}}})
	if err != nil {
		b.Fatal(err)
	}
	srv, err := server.New(st, runbuild.New(nil), &server.Options{Agents: map[string]runs.RunConfig{"globber": cfg}, Tokens: tokens.Lookup,
		MaxStreams: 2 * servedWatchers, MaxStreamsPerPrincipal: 2 * servedWatchers, MaxRunsPerTenant: 4 * servedClients})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = srv.Run(ctx) }()
	ts := httptest.NewServer(srv)
	var ends *ends
	if watchers > 0 {
		ends = newEnds(ctx, st) // when the store shows each end: the fan-out's part
	}
	b.Cleanup(func() {
		cancel()
		ts.CloseClientConnections()
		ts.Close()
		_ = srv.Shutdown(context.Background())
	})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: servedClients}}
	l := &lags{seen: ends}
	for range watchers {
		req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/v1/events", nil)
		req.Header.Set("Authorization", "Bearer tg_ops")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("GET /v1/events: %v", err)
		}
		go l.watch(resp)
	}
	return func() error { return postRun(client, ts.URL) }, l
}

// postRun starts a run of the served agent with a POST that waits for its
// end (?wait=), and decodes the run's view it is answered with.
func postRun(client *http.Client, url string) error {
	req, _ := http.NewRequest("POST", url+"/v1/runs?wait=1m", strings.NewReader(`{"agent":"globber","prompt":"go"}`))
	req.Header.Set("Authorization", "Bearer tg_ops")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	var view serverapi.RunView
	err = json.NewDecoder(resp.Body).Decode(&view)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("POST /v1/runs: %d %v", resp.StatusCode, err)
	}
	if view.Status != store.RunDone {
		return fmt.Errorf("run %s ended %s", view.ID, view.Status)
	}
	return nil
}

// newBareHTTP returns a driver that makes the served driver's round trip
// and nothing else: the same POST to a net/http server that answers, at
// once, a served run's view (encoded as the server encodes it), which the
// client decodes. Its CPU a run is the least HTTP adds to a run.
func newBareHTTP(b testing.TB) func() error {
	view := serverapi.RunView{RunSummary: serverapi.RunSummary{ID: "run_0123456789abcdef", Agent: "globber", Owner: "person:olga", Status: store.RunDone},
		Text: "done", Transcript: json.RawMessage(`[{"role":"user","content":"go"},{"role":"assistant","toolCalls":[{"id":"call_1_1","name":"glob","arguments":{"pattern":"*.go"}}]},{"role":"tool","content":"f0.go\nf1.go\nf2.go\nf3.go\nf4.go\n","toolCallId":"call_1_1","name":"glob"},{"role":"assistant","content":"done"}]`),
		ToolCalls: json.RawMessage(`[{"runId":"run_0123456789abcdef","source":"agent","id":"call_1_1","name":"glob","turn":1,"requestedArgs":{"pattern":"*.go"},"args":{"pattern":"*.go"},"requestedDigest":"sha256:2a556d1c874000577a2d88abb0617eba2e99c37cc70e806ffe32c7474ba84e9a","argsDigest":"sha256:2a556d1c874000577a2d88abb0617eba2e99c37cc70e806ffe32c7474ba84e9a","output":"f0.go\nf1.go\nf2.go\nf3.go\nf4.go\n","metadata":{"files":5,"truncated":false},"hints":{"readOnly":true,"destructive":false,"idempotent":true,"openWorld":false},"ran":true,"decision":{"outcome":"allowed","by":{"kind":"runtime","name":"default"},"votes":[{"source":{"kind":"runtime","name":"default"},"decision":"allow"}]},"started":"2026-12-02T05:22:10.256561275Z","duration":618918}]`),
		Pending:   []serverapi.ApprovalView{}}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req serverapi.StartRunRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(view)
	}))
	b.Cleanup(ts.Close)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: servedClients}}
	return func() error { return postRun(client, ts.URL) }
}

// lags collects how long events took from the store to a watcher: ms from
// the event's time, fanout from when seen saw it in the store, serialMs
// from the event's time while runs went one at a time (serial set).
type lags struct {
	seen     *ends
	serial   atomic.Bool
	serialMs []float64
	mu       sync.Mutex
	ms       []float64
	fanout   []float64
}

// watch reads an event stream until it ends, noting the lag of each run's
// end: it scans lines as an EventSource does and decodes only the ends'
// data (decoding every event would make the watchers, which share this
// process's cores with the server, what the benchmark measures).
func (l *lags) watch(resp *http.Response) {
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	end := false
	for sc.Scan() {
		line := sc.Bytes()
		if typ, ok := bytes.CutPrefix(line, []byte("event: ")); ok {
			end = string(typ) == runcore.EventRunFinished
		}
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok || !end {
			continue
		}
		if id, t, ok := endOf(data); ok {
			l.note(id, t)
		}
	}
}

// endOf reads a run's ID and time from an event's data without decoding
// the rest of it.
func endOf(data []byte) (id string, t time.Time, ok bool) {
	field := func(name string) []byte {
		_, v, ok := bytes.Cut(data, []byte(`"`+name+`":"`))
		if !ok {
			return nil
		}
		v, _, _ = bytes.Cut(v, []byte(`"`))
		return v
	}
	t, err := time.Parse(time.RFC3339Nano, string(field("time")))
	return string(field("runId")), t, err == nil
}

// note records the lag of the end of run id, stored at t.
func (l *lags) note(id string, t time.Time) {
	now := time.Now()
	var fanout time.Duration
	if at, ok := l.seen.seenAt(id); ok {
		fanout = now.Sub(at) // else the watcher was first: no lag
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ms = append(l.ms, float64(now.Sub(t).Microseconds())/1000)
	l.fanout = append(l.fanout, float64(fanout.Microseconds())/1000)
	if l.serial.Load() {
		l.serialMs = append(l.serialMs, float64(now.Sub(t).Microseconds())/1000)
	}
}

// p99 is the 99th percentile of the lags of (ms, fanout or serialMs).
func (l *lags) p99(of func(*lags) []float64) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	ms := of(l)
	if len(ms) == 0 {
		return 0
	}
	s := slices.Clone(ms)
	slices.Sort(s)
	return s[len(s)*99/100]
}

// ends follows a store's event log and notes when each run's end was
// seen there.
type ends struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

func newEnds(ctx context.Context, st store.Store) *ends {
	e := &ends{seen: map[string]time.Time{}}
	go func() {
		var after int64
		for ctx.Err() == nil {
			evs, err := st.ListEvents(ctx, store.EventFilter{AllTenants: true, AfterSeq: after, Limit: store.MaxLimit})
			if err != nil {
				return
			}
			for _, ev := range evs {
				after = ev.Seq
				if ev.Type == runcore.EventRunFinished {
					e.mu.Lock()
					e.seen[ev.RunID] = time.Now()
					e.mu.Unlock()
				}
			}
			if len(evs) == 0 {
				_ = st.WaitEvents(ctx, store.EventFilter{AllTenants: true, AfterSeq: after})
			}
		}
	}()
	return e
}

// seenAt returns when the end of run id was seen in the store.
func (e *ends) seenAt(id string) (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.seen[id]
	return t, ok
}

func writeFile(tb testing.TB, path, body string) {
	tb.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		tb.Fatal(err)
	}
}
