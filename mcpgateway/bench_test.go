package mcpgateway_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/mcpgateway"
	"github.com/tollgate-dev/tollgate/mcptool"
)

// BenchmarkToolCall is a tools/call of a trivial tool (echo) on loopback
// streamable HTTP, direct to the upstream and through the gateway in front
// of it (the upstream on HTTP too, no policy: the gate's pipeline, one
// more hop); and the same on in-memory transports (what the gateway itself
// costs, with no network). Each reports its median latency as p50-ns:
//
//	go test -run x -bench ToolCall -benchtime 2000x ./mcpgateway
func BenchmarkToolCall(b *testing.B) {
	upstreamURL := serveHTTP(b, echoServer())
	b.Run("direct", func(b *testing.B) {
		benchCalls(b, clientOver(b, upstreamURL))
	})
	b.Run("gateway", func(b *testing.B) {
		set, err := mcptool.Open(b.Context(), &mcptool.Config{Servers: map[string]*mcptool.ServerConfig{"up": {URL: upstreamURL, Trusted: true}}}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = set.Close() })
		gw, err := mcpgateway.New(b.Context(), set, nil)
		if err != nil {
			b.Fatal(err)
		}
		benchCalls(b, clientOver(b, serveHTTP(b, gw.Server())))
	})
	b.Run("memory-direct", func(b *testing.B) {
		benchCalls(b, clientIn(b, echoServer()))
	})
	b.Run("memory-gateway", func(b *testing.B) {
		st, ct := mcp.NewInMemoryTransports()
		ss, err := echoServer().Connect(b.Context(), st, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = ss.Close() })
		set, err := mcptool.Open(b.Context(), &mcptool.Config{Servers: map[string]*mcptool.ServerConfig{"up": {Transport: ct, Trusted: true}}}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = set.Close() })
		gw, err := mcpgateway.New(b.Context(), set, nil)
		if err != nil {
			b.Fatal(err)
		}
		benchCalls(b, clientIn(b, gw.Server()))
	})
}

// clientIn connects a client to s over in-memory transports.
func clientIn(b *testing.B, s *mcp.Server) *mcp.ClientSession {
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(b.Context(), st, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(b.Context(), ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.Close() })
	return cs
}

func echoServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, func(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	return s
}

// serveHTTP serves s at a loopback URL's /mcp for the benchmark's life.
func serveHTTP(b *testing.B, s *mcp.Server) string {
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	b.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

func clientOver(b *testing.B, url string) *mcp.ClientSession {
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(b.Context(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.Close() })
	return cs
}

// benchCalls calls echo b.N times and reports the median latency.
func benchCalls(b *testing.B, cs *mcp.ClientSession) {
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		res, err := cs.CallTool(b.Context(), params)
		lat = append(lat, time.Since(start))
		if err != nil || res.IsError {
			b.Fatalf("echo: %+v, %v", res, err)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
}
