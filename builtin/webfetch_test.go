package builtin_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tollgate-dev/tollgate/builtin"
)

// fakeResolver maps host names to addresses; a host with several entries
// gives them in turn, one per lookup (the last one repeats), as a DNS
// rebinding attacker would.
type fakeResolver struct {
	mu    sync.Mutex
	hosts map[string][]string
	seen  map[string]int
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	list, ok := r.hosts[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	if r.seen == nil {
		r.seen = map[string]int{}
	}
	i := min(r.seen[host], len(list)-1)
	r.seen[host]++
	return []netip.Addr{netip.MustParseAddr(list[i])}, nil
}

// serveOn starts an HTTP server on ip:port (port 0: any) and returns its port.
func serveOn(t *testing.T, ip string, port int, h http.Handler) int {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(ip, fmt.Sprint(port)))
	if err != nil {
		t.Fatalf("listen on %s:%d: %v", ip, port, err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return l.Addr().(*net.TCPAddr).Port
}

// The test servers listen on 127.0.0.2, the only range let through the guard
// (explicitly, for the tests); 127.0.0.1 stays refused, as any loopback
// address is by default.
var testPrefix = []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}

func webTools(t *testing.T, o *builtin.WebFetchOptions) func(args map[string]any) (string, bool) {
	t.Helper()
	_, tools := workspace(t, nil, &builtin.Options{WebFetch: o})
	return func(args map[string]any) (string, bool) {
		res := call(t, tools, "webfetch", args)
		return res.Output, res.IsError
	}
}

const page = `<!doctype html><html><head><title>T</title><style>p{color:red}</style>
<script>alert("x")</script></head><body><h1>Hello</h1><p>Some <b>bold</b> text and a <a href="/next">link</a>.</p>
<ul><li>one</li><li>two</li></ul></body></html>`

func TestWebFetchFormats(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, page)
	})
	mux.HandleFunc("/latin1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=iso-8859-1")
		w.Write([]byte("caf\xe9\n"))
	})
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"a":1}`)
	})
	mux.HandleFunc("/png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte("\x89PNG\r\n"))
	})
	mux.HandleFunc("/missing", http.NotFound)
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, strings.Repeat("x", 5000))
	})
	port := serveOn(t, "127.0.0.2", 0, mux)
	base := fmt.Sprintf("http://127.0.0.2:%d", port)
	fetch := webTools(t, &builtin.WebFetchOptions{AllowPrefixes: testPrefix, MaxBytes: 3000, MaxOutputBytes: 2000})

	tests := []struct {
		name, path, format string
		want               []string // substrings of the output
		notWant            []string
		isError            bool
	}{
		{name: "markdown", path: "/page", want: []string{"# Hello", "Some **bold** text", "[link](" + base + "/next)", "- one\n- two"}, notWant: []string{"alert", "color:red", "<p>"}},
		{name: "text", path: "/page", format: "text", want: []string{"Hello\n", "Some bold text and a link.", "one\ntwo"}, notWant: []string{"alert", "color", "<", "**"}},
		{name: "html", path: "/page", format: "html", want: []string{"<h1>Hello</h1>", "<script>"}},
		{name: "latin-1 decoded", path: "/latin1", want: []string{"café"}},
		{name: "json kept", path: "/json", want: []string{`{"a":1}`}},
		{name: "binary refused", path: "/png", want: []string{"content type image/png is not text"}, isError: true},
		{name: "HTTP error", path: "/missing", want: []string{"HTTP 404 Not Found"}, isError: true},
		{name: "size capped with markers", path: "/big", want: []string{strings.Repeat("x", 2000) + "\n[output truncated: 1000 bytes dropped]\n[response truncated: only the first 3000 bytes were read]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := map[string]any{"url": base + tt.path}
			if tt.format != "" {
				args["format"] = tt.format
			}
			out, isErr := fetch(args)
			if isErr != tt.isError {
				t.Fatalf("error = %v, want %v; output:\n%s", isErr, tt.isError, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(out, w) {
					t.Errorf("output holds %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestWebFetchGuard: the private-address guard and the host lists, against
// URLs, resolved names and redirects. Every refused target is a live server
// that counts its requests: none may reach it.
func TestWebFetchGuard(t *testing.T) {
	var secretHits atomic.Int32
	secret := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secretHits.Add(1)
		fmt.Fprint(w, "SECRET")
	})
	// The public-looking server on 127.0.0.2 and the secret one on 127.0.0.1,
	// on the same port, so that a rebinding name reaches one or the other.
	var port int
	for range 20 {
		port = serveOn(t, "127.0.0.2", 0, nil)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			l.Close()
			break
		}
	}
	serveOn(t, "127.0.0.1", port, secret)
	publicMux := http.NewServeMux()
	publicPort := serveOn(t, "127.0.0.2", 0, publicMux)
	public := fmt.Sprintf("http://127.0.0.2:%d", publicPort)
	secretURL := fmt.Sprintf("http://127.0.0.1:%d/", port)
	publicMux.HandleFunc("/to-loopback", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, secretURL, http.StatusFound)
	})
	publicMux.HandleFunc("/to-mapped", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/", port), http.StatusFound)
	})
	publicMux.HandleFunc("/to-rebind", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		http.Redirect(w, r, fmt.Sprintf("http://rebind.test:%d/", port), http.StatusFound)
	})
	publicMux.HandleFunc("/to-file", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
	})
	publicMux.HandleFunc("/to-denied", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, fmt.Sprintf("http://blocked.test:%d/", publicPort), http.StatusFound)
	})
	publicMux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop", http.StatusFound)
	})
	publicMux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "public") })

	res := &fakeResolver{hosts: map[string][]string{
		"internal.test": {"127.0.0.1"},
		"metadata.test": {"169.254.169.254"},
		"ten.test":      {"10.0.0.7"},
		"rebind.test":   {"127.0.0.1"},
		"fine.test":     {"127.0.0.2"},
		"blocked.test":  {"127.0.0.2"},
	}}
	fetch := webTools(t, &builtin.WebFetchOptions{AllowPrefixes: testPrefix, Resolver: res, DenyHosts: []string{"blocked.test"}, MaxRedirects: 3})

	tests := []struct {
		name, url, want string
	}{
		{"loopback literal", secretURL, "refused: 127.0.0.1 is a loopback address"},
		{"name resolving to loopback", fmt.Sprintf("http://internal.test:%d/", port), "refused: internal.test resolves to 127.0.0.1, a loopback address"},
		{"name resolving to a private address", "http://ten.test/", "refused: ten.test resolves to 10.0.0.7, a private address"},
		{"metadata address by name", "http://metadata.test/latest/meta-data/", "a cloud metadata address"},
		{"metadata address literal", "http://169.254.169.254/latest/meta-data/", "refused: 169.254.169.254 is a cloud metadata address"},
		{"IPv4-mapped IPv6 loopback", fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/", port), "refused: 127.0.0.1 is a loopback address"},
		{"IPv6 loopback", fmt.Sprintf("http://[::1]:%d/", port), "refused: ::1 is a loopback address"},
		{"unspecified", fmt.Sprintf("http://0.0.0.0:%d/", port), "refused: 0.0.0.0 is a unspecified address"},
		{"redirect to 127.0.0.1", public + "/to-loopback", "refused: 127.0.0.1 is a loopback address"},
		{"redirect to a mapped loopback", public + "/to-mapped", "loopback address"},
		{"redirect to a name rebound to loopback", public + "/to-rebind", "refused: rebind.test resolves to 127.0.0.1, a loopback address"},
		{"redirect to file:", public + "/to-file", `refused: scheme "file"`},
		{"redirect to a denied host", public + "/to-denied", "refused: host blocked.test is on the deny list"},
		{"redirect loop bounded", public + "/loop", "stopped after 3 redirects"},
		{"file scheme", "file:///etc/passwd", `refused: scheme "file"`},
		{"gopher scheme", "gopher://example.com/", `refused: scheme "gopher"`},
		{"denied host", fmt.Sprintf("http://BLOCKED.test.:%d/ok", publicPort), "refused: host blocked.test is on the deny list"},
		{"no host", "http:///x", "the URL has no host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, isErr := fetch(map[string]any{"url": tt.url})
			if !isErr || !strings.Contains(out, tt.want) {
				t.Fatalf("webfetch %s = %q (error %v), want an error with %q", tt.url, out, isErr, tt.want)
			}
		})
	}
	if n := secretHits.Load(); n != 0 {
		t.Fatalf("the loopback server was reached %d times", n)
	}
	// The allowed range and names resolving into it are fetched.
	for _, u := range []string{public + "/ok", fmt.Sprintf("http://fine.test:%d/ok", publicPort)} {
		if out, isErr := fetch(map[string]any{"url": u}); isErr || out != "public" {
			t.Errorf("webfetch %s = %q (error %v)", u, out, isErr)
		}
	}
}

// TestWebFetchDefaultGuard: with no options at all, a loopback server is
// out of reach.
func TestWebFetchDefaultGuard(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	fetch := webTools(t, nil)
	out, isErr := fetch(map[string]any{"url": srv.URL})
	if !isErr || !strings.Contains(out, "loopback address") || hits.Load() != 0 {
		t.Fatalf("webfetch %s = %q (error %v), %d requests reached the server", srv.URL, out, isErr, hits.Load())
	}
}

func TestWebFetchAllowList(t *testing.T) {
	port := serveOn(t, "127.0.0.2", 0, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hi") }))
	res := &fakeResolver{hosts: map[string][]string{"docs.example.test": {"127.0.0.2"}, "example.test": {"127.0.0.2"}, "other.test": {"127.0.0.2"}}}
	fetch := webTools(t, &builtin.WebFetchOptions{AllowPrefixes: testPrefix, Resolver: res, AllowHosts: []string{"*.example.test"}})
	for host, allowed := range map[string]bool{"docs.example.test": true, "example.test": false, "other.test": false} {
		out, isErr := fetch(map[string]any{"url": fmt.Sprintf("http://%s:%d/", host, port)})
		if allowed != !isErr {
			t.Errorf("%s: output %q, error %v; want allowed=%v", host, out, isErr, allowed)
		}
		if !allowed && !strings.Contains(out, "not on the allow list") {
			t.Errorf("%s: %q", host, out)
		}
	}
}

func TestWebFetchOptionsErrors(t *testing.T) {
	for _, o := range []*builtin.WebFetchOptions{
		{MaxBytes: -1},
		{AllowHosts: []string{"http://x"}},
		{DenyHosts: []string{"*"}},
		{Timeout: 200e9, MaxTimeout: 100e9},
		{AllowPrefixes: []netip.Prefix{{}}},
	} {
		if _, err := builtin.New(t.TempDir(), &builtin.Options{WebFetch: o}); err == nil {
			t.Errorf("New accepted %+v", o)
		}
	}
}
