// Command servebench measures `tollgate serve` with its default store
// (SQLite in the state directory): it starts the given tollgate binary as a
// server of one agent (a scripted model of two turns, the first a glob call,
// on a workspace of five files), starts -n runs over the API with -c
// clients at once, each waiting for its run's end on the tenant's event
// stream, and reports runs/s, the latency from POST to the run's end (p50,
// p99), one run at a time (-serial runs first), and the server's CPU per
// run (its own and its waited-for children's, from /proc).
//
//	go build -o /tmp/tollgate ./cmd/tollgate
//	go run ./internal/cmd/servebench -tollgate /tmp/tollgate -n 1000 -c 50
//
// -store names a PostgreSQL store instead (its URL, as $TOLLGATE_STORE_URL);
// with it, -durable N makes the runs durable (a durable: section on the
// store's database, the server driving up to N runs as a worker).
//
// It exits 1 when a run does not end done.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	bin := flag.String("tollgate", "tollgate", "the tollgate binary")
	n := flag.Int("n", 1000, "runs under load")
	c := flag.Int("c", 50, "clients at once")
	serial := flag.Int("serial", 50, "runs one at a time, before the load")
	storeURL := flag.String("store", "", "a PostgreSQL store's URL (default: SQLite in the state directory)")
	durable := flag.Int("durable", 0, "with -store: durable runs, this many driven by the server as a worker")
	flag.Parse()
	if *durable > 0 && *storeURL == "" {
		fmt.Fprintln(os.Stderr, "servebench: -durable needs -store")
		os.Exit(2)
	}
	if err := run(*bin, *n, *c, *serial, *storeURL, *durable); err != nil {
		fmt.Fprintln(os.Stderr, "servebench:", err)
		os.Exit(1)
	}
}

func run(bin string, n, c, serial int, storeURL string, durable int) error {
	dir, err := os.MkdirTemp("", "servebench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	srv, err := startServer(bin, dir, storeURL, durable)
	if err != nil {
		return err
	}
	defer srv.stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ends, err := follow(ctx, srv)
	if err != nil {
		return err
	}
	var one []time.Duration
	for range serial {
		d, err := srv.runOne(ends)
		if err != nil {
			return err
		}
		one = append(one, d)
	}
	cpu0 := srv.cpu()
	t0 := time.Now()
	lat, err := load(srv, ends, n, c)
	if err != nil {
		return err
	}
	wall := time.Since(t0)
	cpu := srv.cpu() - cpu0
	slices.Sort(one)
	slices.Sort(lat)
	fmt.Printf("one at a time: p50 %.1f ms over %d runs\n", ms(pct(one, 50)), serial)
	fmt.Printf("%d runs, %d clients: %.0f runs/s; POST to end p50 %.1f ms, p99 %.1f ms; server CPU %.2f ms/run\n",
		n, c, float64(n)/wall.Seconds(), ms(pct(lat, 50)), ms(pct(lat, 99)), ms(cpu)/float64(n))
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return ds[min(len(ds)-1, len(ds)*p/100)]
}

// load runs n runs with c clients at once and returns their latencies.
func load(srv *server, ends *ends, n, c int) ([]time.Duration, error) {
	work := make(chan struct{}, n)
	for range n {
		work <- struct{}{}
	}
	close(work)
	var mu sync.Mutex
	var lat []time.Duration
	var first error
	var wg sync.WaitGroup
	for range c {
		wg.Go(func() {
			for range work {
				d, err := srv.runOne(ends)
				mu.Lock()
				lat = append(lat, d)
				if err != nil && first == nil {
					first = err
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return lat, first
}

// server is a running `tollgate serve`.
type server struct {
	cmd    *exec.Cmd
	url    string
	token  string
	client *http.Client
}

const script = `turns:
  - toolCalls:
      - name: glob
        args: {pattern: "*.go"}
  - text: done
`

// startServer writes the agent's files under dir and starts the server on
// a free port, with the state directory (and its SQLite store) in dir, or
// the PostgreSQL store at storeURL, durable when durable > 0.
func startServer(bin, dir, storeURL string, durable int) (*server, error) {
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		return nil, err
	}
	for i := range 5 {
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%d.go", i)), []byte("package f\n"), 0o644); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(script), 0o644); err != nil {
		return nil, err
	}
	cfg := "addr: 127.0.0.1:0\nagents:\n  globber:\n    model: script:script.yaml\n    workdir: ws\n"
	if storeURL != "" {
		cfg += "store: postgres\n"
	}
	if durable > 0 {
		cfg += fmt.Sprintf("durable:\n  databaseEnv: TOLLGATE_STORE_URL\n  concurrency: %d\n", durable)
	}
	if err := os.WriteFile(filepath.Join(dir, "server.yaml"), []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	state := filepath.Join(dir, "state")
	cmd := exec.Command(bin, "serve", "--config", "server.yaml")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TOLLGATE_STATE_DIR="+state)
	if storeURL != "" {
		cmd.Env = append(cmd.Env, "TOLLGATE_STORE_URL="+storeURL)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if _, rest, ok := strings.Cut(sc.Text(), "listening on "); ok {
			s.url, _, _ = strings.Cut(rest, " ")
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	if s.url == "" {
		s.stop()
		return nil, errors.New("the server did not say where it listens")
	}
	tok, err := os.ReadFile(filepath.Join(state, "serve.token"))
	if err != nil {
		s.stop()
		return nil, err
	}
	s.token = strings.TrimSpace(string(tok))
	return s, nil
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

// cpu is the server's CPU time so far, its waited-for children's included
// (utime, stime, cutime and cstime of /proc/PID/stat).
func (s *server) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	var ticks int64
	for _, i := range []int{11, 12, 13, 14} { // fields 14 to 17, after pid and comm
		if i < len(f) {
			v, _ := strconv.ParseInt(f[i], 10, 64)
			ticks += v
		}
	}
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ 100
}

func (s *server) do(method, path string, body string) (*http.Response, error) {
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	return s.client.Do(req)
}

// runOne starts a run and waits for its end.
func (s *server) runOne(ends *ends) (time.Duration, error) {
	t0 := time.Now()
	resp, err := s.do("POST", "/v1/runs", `{"agent":"globber","prompt":"go"}`)
	if err != nil {
		return 0, err
	}
	var v struct {
		ID string `json:"id"`
	}
	err = json.NewDecoder(resp.Body).Decode(&v)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusCreated {
		return 0, fmt.Errorf("POST /v1/runs: %s %v", resp.Status, err)
	}
	status := ends.wait(v.ID)
	d := time.Since(t0)
	if status != "done" {
		return d, fmt.Errorf("run %s ended %s", v.ID, status)
	}
	return d, nil
}

// ends tells waiters how their run ended, from the tenant's event stream.
type ends struct {
	mu      sync.Mutex
	ended   map[string]string
	waiting map[string]chan string
}

// follow opens the tenant's event stream and reads it until ctx ends.
func follow(ctx context.Context, s *server) (*ends, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", s.url+"/v1/events", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET /v1/events: %s", resp.Status)
	}
	e := &ends{ended: map[string]string{}, waiting: map[string]chan string{}}
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		typ := ""
		for sc.Scan() {
			line := sc.Text()
			if t, ok := strings.CutPrefix(line, "event: "); ok {
				typ = t
			}
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok || typ != "run.finished" {
				continue
			}
			var ev struct {
				RunID string `json:"runId"`
				Data  struct {
					Status string `json:"status"`
				} `json:"data"`
			}
			if json.Unmarshal([]byte(data), &ev) == nil {
				e.end(ev.RunID, ev.Data.Status)
			}
		}
	}()
	return e, nil
}

func (e *ends) end(id, status string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c, ok := e.waiting[id]; ok {
		c <- status
		delete(e.waiting, id)
		return
	}
	e.ended[id] = status
}

func (e *ends) wait(id string) string {
	e.mu.Lock()
	if s, ok := e.ended[id]; ok {
		delete(e.ended, id)
		e.mu.Unlock()
		return s
	}
	c := make(chan string, 1)
	e.waiting[id] = c
	e.mu.Unlock()
	return <-c
}
