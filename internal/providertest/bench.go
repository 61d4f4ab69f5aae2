package providertest

import (
	"context"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/benchwork"
	"github.com/tollgate-dev/tollgate/model"
)

// The benchmark workload lives in internal/benchwork, which the interleaved
// comparison program (internal/cmd/benchcmp) shares; these are its names for
// the providers' Go benchmarks.

// The workload's question, final answer and the two tools' outputs that the
// bench server checks for (see [benchwork.Question] and the others).
const (
	BenchQuestion = benchwork.Question
	BenchAnswer   = benchwork.Answer
	BenchWeather  = benchwork.Weather
	BenchSum      = benchwork.Sum
)

// BenchTools are the two tools of the workload as Chat Completions function
// tools and as Messages API tools; BenchToolDefs as tollgate tool
// definitions.
var (
	BenchOpenAITools    = benchwork.OpenAITools
	BenchAnthropicTools = benchwork.AnthropicTools
	BenchToolDefs       = benchwork.ToolDefs
)

// BenchServer is a [benchwork.Mock] for a benchmark.
type BenchServer struct {
	// URL is the server's root, on 127.0.0.1.
	URL string
}

// BenchServerEnv is the environment variable that chooses where
// [NewBenchServer] runs its server: unset, in the benchmark's process;
// "process", in a child process (the test binary run again, see
// [ServeBenchChild]), as the side-by-side benchmark runs its mock, so that
// the server's work does not share the benchmark's heap and GC.
const BenchServerEnv = benchwork.ServerEnv

// NewBenchServer starts a [benchwork.Mock]; it is closed when tb ends. With
// $TOLLGATE_BENCH_SERVER=process it runs in a child process, which needs the
// test package's TestMain to call [ServeBenchChild] first.
func NewBenchServer(tb testing.TB) *BenchServer {
	if os.Getenv(BenchServerEnv) == "process" {
		c, err := benchwork.StartChild()
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = c.Close() })
		return &BenchServer{URL: c.URL}
	}
	m := &benchwork.Mock{}
	srv := httptest.NewUnstartedServer(m)
	srv.Config.ConnState = m.ConnState
	srv.Start()
	tb.Cleanup(srv.Close)
	return &BenchServer{URL: srv.URL}
}

// ServeBenchChild, called first in a TestMain, makes the test binary a
// bench server when [NewBenchServer] started it as one; see
// [benchwork.ServeChild].
func ServeBenchChild() { benchwork.ServeChild() }

// FloorOpenAI is [benchwork.FloorOpenAI]: the workload with net/http and
// encoding/json alone against the Chat Completions API at base.
func FloorOpenAI(ctx context.Context, base string, stream bool) (string, error) {
	return benchwork.FloorOpenAI(ctx, base, stream)
}

// FloorAnthropic is [benchwork.FloorAnthropic]: the same against the
// Messages API.
func FloorAnthropic(ctx context.Context, base string, stream bool) (string, error) {
	return benchwork.FloorAnthropic(ctx, base, stream)
}

// RunModel is [benchwork.RunModel]: the workload through m alone, without
// the agent.
func RunModel(ctx context.Context, m model.Model, stream bool) (string, error) {
	return benchwork.RunModel(ctx, m, stream)
}
