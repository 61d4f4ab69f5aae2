package mcpgateway_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/mcpgateway"
	"github.com/tollgate-dev/tollgate/mcptool"
)

// The gateway's calls to a streamable-HTTP upstream reuse its
// connections: the end of each answer's stream is read before the call's
// context ends, where it was cut, which cost some calls a new TCP
// connection.
func TestUpstreamConnectionsAreReused(t *testing.T) {
	var conns atomic.Int64
	up := httptest.NewUnstartedServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return echoServer() }, nil))
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	up.Start()
	t.Cleanup(up.Close)
	set, err := mcptool.Open(t.Context(), &mcptool.Config{Servers: map[string]*mcptool.ServerConfig{"up": {URL: up.URL + "/mcp", Trusted: true}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = set.Close() })
	gw, err := mcpgateway.New(t.Context(), set, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw.Handler(nil))
	t.Cleanup(srv.Close)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	before := conns.Load()
	for range 400 {
		if res := call(t, cs, "echo", map[string]any{"text": "hi"}); res.IsError {
			t.Fatalf("echo: %s", text(res))
		}
	}
	// Cut streams cost some calls a new connection (21 to 26 of 400
	// here); kept, a loaded machine sees a connection or two more than
	// the client's two (its stream and its calls').
	if n := conns.Load() - before; n > 4 {
		t.Errorf("400 calls opened %d connections to the upstream, want at most 4", n)
	}
}
