package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"

	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/sqlite"
)

// loginWorld is a local authorization server and an MCP server it protects.
type loginWorld struct {
	as, rs     *httptest.Server
	mu         sync.Mutex
	challenges map[string]string // code -> PKCE challenge
	tokens     map[string]bool
	authorized int // requests to the MCP server with a valid token
}

func newLoginWorld(t *testing.T) *loginWorld {
	w := &loginWorld{challenges: map[string]string{}, tokens: map[string]bool{}}
	w.as = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		defer w.mu.Unlock()
		js := func(v any) { rw.Header().Set("Content-Type", "application/json"); _ = json.NewEncoder(rw).Encode(v) }
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			js(map[string]any{"issuer": w.as.URL, "authorization_endpoint": w.as.URL + "/authorize", "token_endpoint": w.as.URL + "/token",
				"registration_endpoint": w.as.URL + "/register", "code_challenge_methods_supported": []string{"S256"}})
		case "/register":
			rw.WriteHeader(http.StatusCreated)
			js(map[string]any{"client_id": "c1", "token_endpoint_auth_method": "none"})
		case "/authorize":
			q := r.URL.Query()
			code := fmt.Sprintf("code%d", len(w.challenges))
			w.challenges[code] = q.Get("code_challenge")
			http.Redirect(rw, r, q.Get("redirect_uri")+"?code="+code+"&state="+q.Get("state"), http.StatusFound)
		case "/token":
			_ = r.ParseForm()
			sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
			if w.challenges[r.Form.Get("code")] != base64.RawURLEncoding.EncodeToString(sum[:]) {
				http.Error(rw, `{"error":"invalid_grant"}`, http.StatusBadRequest)
				return
			}
			tok := fmt.Sprintf("tok%d", len(w.tokens))
			w.tokens[tok] = true
			js(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600})
		default:
			http.NotFound(rw, r)
		}
	}))
	t.Cleanup(w.as.Close)
	srv := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	w.rs = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			rw.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(rw).Encode(map[string]any{"resource": w.rs.URL + "/mcp", "authorization_servers": []string{w.as.URL}})
			return
		}
		w.mu.Lock()
		ok := w.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		if ok {
			w.authorized++
		}
		w.mu.Unlock()
		if !ok {
			rw.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+w.rs.URL+`/.well-known/oauth-protected-resource/mcp"`)
			http.Error(rw, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(rw, r)
	}))
	t.Cleanup(w.rs.Close)
	return w
}

// browserOnStderr is the stderr of `tollgate mcp login` and the person's
// browser: when the URL to open is printed, it opens it (following the
// redirect to the loopback page, as a browser does).
type browserOnStderr struct {
	mu     sync.Mutex
	buf    strings.Builder
	opened bool
	err    error
	wg     sync.WaitGroup
}

var authURL = regexp.MustCompile(`http://127\.0\.0\.1:\d+/authorize\?\S+`)

func (b *browserOnStderr) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if u := authURL.FindString(b.buf.String()); u != "" && !b.opened {
		b.opened = true
		b.wg.Go(func() {
			resp, err := http.Get(u)
			if err == nil {
				_ = resp.Body.Close()
			}
			b.mu.Lock()
			b.err = err
			b.mu.Unlock()
		})
	}
	return len(p), nil
}

// A run meets a server that needs a login and says how to log in; `tollgate
// mcp login` prints the URL, gets the code on its loopback page and stores
// the token 0600 in the state directory; the next run uses it.
func TestMCPLoginThenRun(t *testing.T) {
	t.Parallel()
	w := newLoginWorld(t)
	dir, state := t.TempDir(), t.TempDir()
	cfg := mcpConfig(t, dir, map[string]any{"docs": map[string]any{"url": w.rs.URL + "/mcp"}})
	script := apWrite(t, dir, "script.yaml", "turns:\n  - text: done\n")
	run := func() string {
		_, _, errOut := apMain(t, "run", "--model", "script:"+script, "--workdir", dir, "--state-dir", state, "--mcp", cfg, "hello")
		return errOut
	}
	if errOut := run(); !strings.Contains(errOut, "OAuth login required") || !strings.Contains(errOut, "log in with: tollgate mcp login docs --mcp "+cfg) {
		t.Fatalf("a run before the login does not say to log in:\n%s", errOut)
	}

	var out strings.Builder
	stderr := &browserOnStderr{}
	code := Main(context.Background(), []string{"mcp", "login", "docs", "--mcp", cfg, "--state-dir", state}, strings.NewReader(""), &out, stderr)
	stderr.wg.Wait()
	if code != 0 || !strings.Contains(out.String(), "logged in to MCP server docs") || stderr.err != nil {
		t.Fatalf("login: exit %d, browser %v\nstdout %s\nstderr %s", code, stderr.err, out.String(), stderr.buf.String())
	}
	files, _ := filepath.Glob(filepath.Join(state, "mcp-oauth", "*.json"))
	if len(files) != 1 {
		t.Fatalf("stored logins: %v", files)
	}
	if fi, err := os.Stat(files[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("login file %v, %v; want mode 0600", fi, err)
	}
	if b, _ := os.ReadFile(files[0]); strings.Contains(out.String()+stderr.buf.String(), "tok0") || !strings.Contains(string(b), "tok0") {
		t.Errorf("the token was printed, or not stored")
	}

	before := w.authorized
	if errOut := run(); !strings.Contains(errOut, "server docs: ready") {
		t.Fatalf("a run after the login:\n%s", errOut)
	}
	if w.authorized <= before {
		t.Error("the run sent no request with the token")
	}
	if code, out, errOut := tgMainIn(t, "", map[string]string{envStateDir: state}, "tools", "--mcp", cfg); code != 0 || !strings.Contains(out, "mcp__docs__echo") {
		t.Errorf("tools after the login: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out2, _ := apMain(t, "mcp", "logout", "docs", "--mcp", cfg, "--state-dir", state)
	if files, _ := filepath.Glob(filepath.Join(state, "mcp-oauth", "*.json")); code != 0 || len(files) != 0 {
		t.Errorf("logout: exit %d, %s; files left %v", code, out2, files)
	}
}

// The loopback page takes the first redirect: a refusal (access_denied) is
// an error naming it, a code is returned with its state and iss.
func TestLoopbackFetcher(t *testing.T) {
	for _, c := range []struct {
		query, wantErr, wantCode string
	}{
		{"error=access_denied&error_description=no", "access_denied", ""},
		{"code=abc&state=s1&iss=https%3A%2F%2Fas", "", "abc"},
	} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		fetch := loopbackFetcher(ln, func(string) {
			go func() {
				resp, err := http.Get("http://" + ln.Addr().String() + "/callback?" + c.query)
				if err == nil {
					_ = resp.Body.Close()
				}
			}()
		})
		res, err := fetch(context.Background(), &auth.AuthorizationArgs{URL: "https://as/authorize"})
		switch {
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%s: %v, want an error with %q", c.query, err, c.wantErr)
		case c.wantCode != "" && (err != nil || res.Code != c.wantCode || res.State != "s1" || res.Iss != "https://as"):
			t.Errorf("%s: %+v, %v", c.query, res, err)
		}
	}
}

// openPTY returns the two ends of a new pseudo-terminal: what the person
// types is written to master; slave is the run's stdin, a terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return m, s
}

// A run at a terminal that meets a server needing a login offers it: yes
// runs the login there (the URL printed, the code taken on the loopback
// page, the token stored) and the server is connected; no leaves the
// server out with the command to run.
func TestRunOffersMCPLogin(t *testing.T) {
	for _, c := range []struct {
		typed, want string
		stored      int
	}{
		{"y\n", "server docs: ready", 1},
		{"n\n", "not logged in; later: tollgate mcp login docs", 0},
	} {
		t.Run(strings.TrimSpace(c.typed), func(t *testing.T) {
			w := newLoginWorld(t)
			dir, state := t.TempDir(), t.TempDir()
			cfg := mcpConfig(t, dir, map[string]any{"docs": map[string]any{"url": w.rs.URL + "/mcp"}})
			script := apWrite(t, dir, "script.yaml", "turns:\n  - text: done\n")
			master, slave := openPTY(t)
			if _, err := master.WriteString(c.typed); err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			stderr := &browserOnStderr{}
			records := filepath.Join(t.TempDir(), "records.jsonl")
			code := Main(context.Background(), []string{"run", "--model", "script:" + script, "--workdir", dir, "--state-dir", state, "--mcp", cfg, "--records", records, "hello"}, slave, &out, stderr)
			stderr.wg.Wait()
			errOut := stderr.buf.String()
			if code != 0 || !strings.Contains(errOut, "MCP server docs needs an OAuth login. Log in to docs now? [y/N] ") || !strings.Contains(errOut, c.want) {
				t.Fatalf("run: exit %d, want %q\nstdout %s\nstderr %s", code, c.want, out.String(), errOut)
			}
			files, _ := filepath.Glob(filepath.Join(state, "mcp-oauth", "*.json"))
			if len(files) != c.stored {
				t.Errorf("stored logins %v, want %d", files, c.stored)
			}
			if strings.Contains(out.String()+errOut, "tok0") {
				t.Error("the token was printed")
			}
			// The login is an event of the run's log and a line of its
			// records: who, which server, when; never the token.
			b, err := os.ReadFile(records)
			if err != nil {
				t.Fatal(err)
			}
			line := regexp.MustCompile(`\{"time":"[^"]+","run":"run_[0-9a-f]+","event":"mcp.login","server":"docs","by":\{"kind":"person","name":"[^"]+"\}\}\n`)
			if got := len(line.FindAll(b, -1)); got != c.stored || strings.Contains(string(b), "tok0") {
				t.Errorf("records: %d login lines, want %d:\n%s", got, c.stored, b)
			}
			st, err := sqlite.Open(context.Background(), filepath.Join(state, storeFile), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			evs, err := st.ListEvents(context.Background(), store.EventFilter{AllTenants: true, Limit: store.MaxLimit})
			if err != nil {
				t.Fatal(err)
			}
			var logins []string
			for _, ev := range evs {
				if ev.Type == runcore.EventMCPLogin {
					logins = append(logins, string(ev.Data))
				}
			}
			if len(logins) != c.stored || (c.stored == 1 && !regexp.MustCompile(`^\{"by":"person:[^"]+","server":"docs","time":"[^"]+"\}$`).MatchString(logins[0])) {
				t.Errorf("the run's log has login events %q, want %d", logins, c.stored)
			}
		})
	}
}
