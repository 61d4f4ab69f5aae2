// Package providertest holds what the tests of tollgate's HTTP model providers
// (model/openai, model/anthropic) share and what does not depend on a wire
// format: a local server that records requests and plays canned answers
// ([Recorder]), golden files under testdata/ ([ReadFile], [Golden]), and the
// tests every HTTP provider must pass the same way, run by each provider with
// a description of itself: retry waits and the default timeout ([Waits]),
// redirects ([Redirects]) and the answer size limit ([Sizes]).
// It is for tests only; no library package or command may import it. The
// fake servers that speak a vendor's wire format stay in each provider.
package providertest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Answer is what a [Recorder] sends back for one request.
type Answer struct {
	// Status is the HTTP status (0: 200).
	Status int
	// Header is added to the response. Without a Content-Type in it, a Body
	// that starts with "data:", "event:" or ":" (a comment, as OpenRouter
	// starts its streams) is sent as text/event-stream and
	// any other as application/json.
	Header http.Header
	// Body is the response body.
	Body string
	// Cut, when set, sends the first Cut bytes of Body and then kills the
	// connection.
	Cut int
	// Drop kills the connection without answering.
	Drop bool
}

// Recorder is a local HTTP server that records the body and headers of every
// request and answers them with fixed answers, one per request in order (the
// last one repeats). It is safe for concurrent requests.
type Recorder struct {
	mu      sync.Mutex
	bodies  [][]byte
	headers []http.Header
	answers []Answer
	srv     *httptest.Server
}

// NewRecorder starts a Recorder that plays answers (at least one); it is
// closed when t's test ends.
func NewRecorder(t testing.TB, answers ...Answer) *Recorder {
	t.Helper()
	if len(answers) == 0 {
		t.Fatal("providertest: NewRecorder needs at least one answer")
	}
	rec := &Recorder{answers: answers}
	rec.srv = httptest.NewServer(http.HandlerFunc(rec.serve))
	t.Cleanup(rec.srv.Close)
	return rec
}

func (rec *Recorder) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rec.mu.Lock()
	n := len(rec.bodies)
	rec.bodies = append(rec.bodies, b)
	rec.headers = append(rec.headers, r.Header.Clone())
	a := rec.answers[min(n, len(rec.answers)-1)]
	rec.mu.Unlock()
	if a.Drop {
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
		return
	}
	for k, v := range a.Header {
		w.Header()[k] = v
	}
	if w.Header().Get("Content-Type") == "" {
		if strings.HasPrefix(a.Body, "data:") || strings.HasPrefix(a.Body, "event:") || strings.HasPrefix(a.Body, ":") {
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
	}
	status := a.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	if a.Cut > 0 {
		io.WriteString(w, a.Body[:a.Cut])
		w.(http.Flusher).Flush()
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
		return
	}
	io.WriteString(w, a.Body)
}

// URL returns the server's base URL ("http://127.0.0.1:port").
func (rec *Recorder) URL() string { return rec.srv.URL }

// Calls returns the number of requests received so far.
func (rec *Recorder) Calls() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return len(rec.bodies)
}

// Body returns the body of request i (0 is the first).
func (rec *Recorder) Body(i int) []byte {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.bodies[i]
}

// Header returns the headers of request i (0 is the first).
func (rec *Recorder) Header(i int) http.Header {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.headers[i]
}

// ReadFile returns the content of testdata/name, failing t when it cannot be
// read.
func ReadFile(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Golden compares got (a JSON request body, indented for the file) with
// testdata/name, or rewrites the file when update is set (the test
// package's -update flag).
func Golden(t testing.TB, name string, got []byte, update bool) {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, got, "", "  "); err != nil {
		t.Fatalf("request body is not JSON: %v\n%s", err, got)
	}
	buf.WriteByte('\n')
	path := filepath.Join("testdata", name)
	if update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), buf.String()); diff != "" {
		t.Errorf("request body differs from %s (-want +got):\n%s", path, diff)
	}
}
