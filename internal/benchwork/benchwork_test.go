package benchwork_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/benchwork"
)

func TestMain(m *testing.M) {
	if os.Getenv(benchwork.ServerEnv) == "child" && os.Getenv("ANTHROPIC_API_KEY") != "" {
		fmt.Println("the mock child got the parent's key")
		os.Exit(3)
	}
	benchwork.ServeChild()
	os.Exit(m.Run())
}

func newMock(t *testing.T) (*benchwork.Mock, string) {
	m := &benchwork.Mock{}
	srv := httptest.NewUnstartedServer(m)
	srv.Config.ConnState = m.ConnState
	srv.Start()
	t.Cleanup(srv.Close)
	return m, srv.URL
}

// The floors run the workload to its answer over both APIs and both forms,
// two requests each, on one kept-alive connection.
func TestFloorsGetTheAnswer(t *testing.T) {
	m, url := newMock(t)
	ctx := context.Background()
	floors := map[string]func(context.Context, string, bool) (string, error){
		"openai": benchwork.FloorOpenAI, "anthropic": benchwork.FloorAnthropic,
	}
	for name, floor := range floors {
		for _, stream := range []bool{false, true} {
			got, err := floor(ctx, url, stream)
			if err != nil || got != benchwork.Answer {
				t.Errorf("%s stream=%v: %q, %v; want %q", name, stream, got, err, benchwork.Answer)
			}
		}
	}
	if s := m.Stats(); s.Requests != 8 || s.Streamed != 4 || s.Mismatches != 0 || s.Conns != 1 {
		t.Errorf("stats %+v, want 8 requests (4 streamed), no mismatch, 1 connection", s)
	}
}

// A second turn with wrong tool results is answered MISMATCH, in the form
// the request asked for, and counted.
func TestMockAnswersMismatch(t *testing.T) {
	m, url := newMock(t)
	requests := []struct{ path, body, prefix string }{
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"q"},{"role":"tool","content":"cloudy"},{"role":"tool","content":"4"}]}`, `{`},
		{"/v1/chat/completions", `{"stream":true,"messages":[{"role":"tool","content":"cloudy"},{"role":"tool","content":"4"}]}`, `data: `},
		{"/v1/messages", `{"messages":[{"role":"user","content":[{"type":"tool_result","content":"cloudy"},{"type":"tool_result","content":[{"type":"text","text":"4"}]}]}]}`, `{`},
		{"/v1/messages", `{"stream":true,"messages":[{"role":"user","content":[{"type":"tool_result","content":"4"}]}]}`, `event: `},
	}
	for _, r := range requests {
		resp, err := http.Post(url+r.path, "application/json", strings.NewReader(r.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(string(b), r.prefix) || !strings.Contains(string(b), benchwork.Mismatch+": tool results") {
			t.Errorf("%s %s: %s\n%s", r.path, r.body, resp.Status, b)
		}
	}
	if s := m.Stats(); s.Mismatches != 4 || s.Requests != 4 {
		t.Errorf("stats %+v, want 4 requests, 4 mismatches", s)
	}
}

// The mock in a child process serves the workload and its counters, and
// gets no key of the parent's environment.
func TestChild(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
	c, err := benchwork.StartChild()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if got, err := benchwork.FloorAnthropic(ctx, c.URL, true); err != nil || got != benchwork.Answer {
		t.Fatalf("%q, %v", got, err)
	}
	s, err := benchwork.FetchStats(ctx, c.URL)
	if err != nil || s.Requests != 2 || s.Streamed != 2 || s.Conns != 1 || s.Mismatches != 0 {
		t.Fatalf("stats %+v, %v; want 2 streamed requests on 1 connection", s, err)
	}
	if c.PID == os.Getpid() || c.PID <= 0 {
		t.Errorf("child PID %d", c.PID)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
