package mcpgateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/mcpgateway"
	"github.com/tollgate-dev/tollgate/tool"
)

// bearer adds a bearer token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// With Verify, a client without a known token is refused; one with it is
// served.
func TestHandlerNeedsAToken(t *testing.T) {
	f := setup(t, nil, nil, nil)
	verify := func(token string) (tool.Principal, bool) {
		return tool.Principal{Kind: tool.PrincipalPerson, Name: "ci"}, token == "tg_good"
	}
	srv := httptest.NewServer(f.gw.Handler(&mcpgateway.HTTPOptions{Verify: verify}))
	t.Cleanup(srv.Close)
	for _, token := range []string{"", "tg_bad"} {
		hc := &http.Client{Transport: bearer{token}}
		if cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc}, nil); err == nil {
			_ = cs.Close()
			t.Errorf("token %q: connected, want refused", token)
		}
	}
	hc := &http.Client{Transport: bearer{"tg_good"}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if res := call(t, cs, "echo", map[string]any{"text": "t"}); text(res) != "echo: t" {
		t.Errorf("echo with a token: %q", text(res))
	}
	if n := f.up.count("echo"); n != 1 {
		t.Errorf("upstream echo calls = %d, want 1 (none for the refused clients)", n)
	}
}

// A cross-origin request from a browser is refused.
func TestHandlerRefusesCrossOrigin(t *testing.T) {
	f := setup(t, nil, nil, nil)
	srv := httptest.NewServer(f.gw.Handler(nil))
	t.Cleanup(srv.Close)
	req, _ := http.NewRequest("POST", srv.URL, nil)
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin POST: %d, want 403", resp.StatusCode)
	}
}

// A client that holds the only request slot makes the next request a 503,
// at once; once it lets go, requests are served again.
func TestHandlerBoundsRequests(t *testing.T) {
	f := setup(t, nil, nil, nil)
	srv := httptest.NewServer(f.gw.Handler(&mcpgateway.HTTPOptions{MaxRequests: 1}))
	t.Cleanup(srv.Close)
	body, hold := io.Pipe()
	held := make(chan struct{})
	go func() {
		defer close(held)
		req, _ := http.NewRequest("POST", srv.URL, body)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
		}
	}()
	_, _ = hold.Write([]byte("{")) // the request is in the handler, its body unfinished
	// The held request reaches the handler some time after its first
	// byte is read; ask until refused, or give up after ten seconds.
	refused := false
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		resp, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			refused = true
			break
		}
	}
	if !refused {
		t.Error("no request was refused while the only slot was held")
	}
	_ = hold.Close()
	<-held
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode == http.StatusServiceUnavailable {
		t.Error("still refused after the slot was let go")
	}
}
