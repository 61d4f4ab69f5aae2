package mcpgateway_test

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/mcpgateway"
	"github.com/tollgate-dev/tollgate/mcptool"
)

// BenchmarkToolCall measures a tools/call of a trivial tool (echo) through
// the gateway (no policy: the gate's pipeline and one more hop) against
// the same call direct to the upstream, and against the same call through
// a relay that only copies the bytes (a reverse proxy on HTTP, a byte
// pump between two pipes on stdio): the floor of any second hop. The three
// are called in turn in one loop, so that the machine's load falls on all
// alike, and each reports its median latency (direct-µs, relay-µs,
// gateway-µs), the gateway's overhead over direct (overhead-µs), the
// target (target-µs: 10 % of direct + 200 µs), the ratio gateway/direct
// and the relay's cost alone (hop-µs):
//
//	go test -run '^$' -bench ToolCall -benchtime 2000x ./mcpgateway
//
// http: every hop is loopback streamable HTTP. stdio: every hop is a pair
// of OS pipes with newline-delimited JSON, as between a client and a
// server it starts (the processes are this one).
func BenchmarkToolCall(b *testing.B) {
	b.Run("http", func(b *testing.B) {
		upstreamURL := serveHTTP(b, echoServer())
		direct := clientOver(b, upstreamURL)
		relay := clientOver(b, proxyHTTP(b, upstreamURL))
		set := openSet(b, &mcptool.ServerConfig{URL: upstreamURL, Trusted: true})
		gateway := clientOver(b, serveHTTP(b, newGateway(b, set).Server()))
		benchCompare(b, direct, relay, gateway)
	})
	b.Run("stdio", func(b *testing.B) {
		direct := clientOverPipes(b, serveOverPipes(b, echoServer()))
		relay := clientOverPipes(b, pumpPipes(b, serveOverPipes(b, echoServer())))
		set := openSet(b, &mcptool.ServerConfig{Transport: serveOverPipes(b, echoServer()).transport(), Trusted: true})
		gateway := clientOverPipes(b, serveOverPipes(b, newGateway(b, set).Server()))
		benchCompare(b, direct, relay, gateway)
	})
}

func echoServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, func(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	return s
}

func openSet(b *testing.B, sc *mcptool.ServerConfig) *mcptool.Set {
	set, err := mcptool.Open(b.Context(), &mcptool.Config{Servers: map[string]*mcptool.ServerConfig{"up": sc}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = set.Close() })
	return set
}

func newGateway(b *testing.B, set *mcptool.Set) *mcpgateway.Gateway {
	gw, err := mcpgateway.New(b.Context(), set, nil)
	if err != nil {
		b.Fatal(err)
	}
	return gw
}

// serveHTTP serves s at a loopback URL's /mcp for the benchmark's life.
func serveHTTP(b *testing.B, s *mcp.Server) string {
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	b.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// proxyHTTP serves a reverse proxy to target (streams flushed at once) at
// a loopback URL, and returns the URL of target's path on it.
func proxyHTTP(b *testing.B, target string) string {
	u, err := url.Parse(target)
	if err != nil {
		b.Fatal(err)
	}
	p := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	p.FlushInterval = -1
	p.ErrorLog = log.New(io.Discard, "", 0) // a stream cut at the end of the benchmark
	srv := httptest.NewServer(p)
	b.Cleanup(srv.Close)
	return srv.URL + u.Path
}

func clientOver(b *testing.B, url string) *mcp.ClientSession {
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(b.Context(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.Close() })
	return cs
}

// pipes is the client's end of a server's stdio: it reads the server's
// stdout and writes its stdin.
type pipes struct {
	r io.ReadCloser
	w io.WriteCloser
}

func (p pipes) transport() mcp.Transport { return &mcp.IOTransport{Reader: p.r, Writer: p.w} }

// serveOverPipes serves s on a pair of OS pipes and returns the client's
// end.
func serveOverPipes(b *testing.B, s *mcp.Server) pipes {
	inR, inW := osPipe(b)
	outR, outW := osPipe(b)
	ss, err := s.Connect(b.Context(), &mcp.IOTransport{Reader: inR, Writer: outW}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ss.Close() })
	return pipes{r: outR, w: inW}
}

// pumpPipes copies bytes between a new pair of OS pipes and to's, both
// ways, and returns the client's end of the new pair: a relay that reads
// nothing of what it copies.
func pumpPipes(b *testing.B, to pipes) pipes {
	inR, inW := osPipe(b)
	outR, outW := osPipe(b)
	go func() { _, _ = io.Copy(to.w, inR) }()
	go func() { _, _ = io.Copy(outW, to.r) }()
	return pipes{r: outR, w: inW}
}

func osPipe(b *testing.B) (*os.File, *os.File) {
	r, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = r.Close(); _ = w.Close() })
	return r, w
}

func clientOverPipes(b *testing.B, p pipes) *mcp.ClientSession {
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(b.Context(), p.transport(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.Close() })
	return cs
}

// benchCompare calls echo b.N times on each session in turn and reports
// the medians, the overhead, the target and the ratio (see
// BenchmarkToolCall).
func benchCompare(b *testing.B, direct, relay, gateway *mcp.ClientSession) {
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}
	sessions := []*mcp.ClientSession{direct, relay, gateway}
	lat := make([][]time.Duration, len(sessions))
	for i := range lat {
		lat[i] = make([]time.Duration, 0, b.N)
	}
	b.ResetTimer()
	for range b.N {
		for i, cs := range sessions {
			start := time.Now()
			res, err := cs.CallTool(b.Context(), params)
			lat[i] = append(lat[i], time.Since(start))
			if err != nil || res.IsError {
				b.Fatalf("echo: %+v, %v", res, err)
			}
		}
	}
	b.StopTimer()
	p50 := make([]float64, len(lat))
	for i, l := range lat {
		slices.Sort(l)
		p50[i] = float64(l[len(l)/2].Nanoseconds()) / 1e3
	}
	d, r, g := p50[0], p50[1], p50[2]
	b.ReportMetric(d, "direct-µs")
	b.ReportMetric(r, "relay-µs")
	b.ReportMetric(g, "gateway-µs")
	b.ReportMetric(g-d, "overhead-µs")
	b.ReportMetric(0.1*d+200, "target-µs")
	b.ReportMetric(g/d, "gateway/direct")
	b.ReportMetric(r-d, "hop-µs")
}
