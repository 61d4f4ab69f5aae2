package server_test

import (
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/mcptoken"
	"github.com/tollgate-dev/tollgate/internal/oauthmcp"
	"github.com/tollgate-dev/tollgate/internal/serveconfig"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/server"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// An approver starts a login to an agent's OAuth MCP server; the browser
// comes back to the server's callback, and the token lands in the
// approver's tenant's logins, not another's. A viewer may not, and a
// server the agent does not have is 404.
func TestMCPLoginPerTenant(t *testing.T) {
	mcpURL := oauthmcp.Server(t)
	dir := t.TempDir()
	mcpFile := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(mcpFile, []byte(`{"mcpServers": {"docs": {"url": "`+mcpURL+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := payerConfig(t)
	cfg.MCPFiles = []string{mcpFile}
	logins := filepath.Join(dir, "logins")
	ts := httptest.NewUnstartedServer(nil)
	srv, err := server.New(memory.New(nil), &testBuilder{m: transferScript()}, &server.Options{
		Agents: map[string]runs.RunConfig{"docs-agent": cfg}, Tokens: testTokens(t).Lookup,
		MCPLogins: &server.MCPLoginOptions{Dir: logins, RedirectURL: "http://" + ts.Listener.Addr().String() + "/v1/mcp/oauth/callback"},
	})
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = srv
	ts.Start()
	t.Cleanup(ts.Close)
	// The approver's browser, which keeps the login's cookie.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	post := func(token, body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/mcp/logins", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post(vicToken, `{"agent":"docs-agent","server":"docs"}`); code != http.StatusForbidden {
		t.Errorf("a viewer's login: %d %s", code, body)
	}
	if code, body := post(aliceToken, `{"agent":"docs-agent","server":"nope"}`); code != http.StatusNotFound {
		t.Errorf("an unknown server: %d %s", code, body)
	}
	code, body := post(aliceToken, `{"agent":"docs-agent","server":"docs"}`)
	var started serverapi.MCPLoginStarted
	if code != http.StatusCreated || json.Unmarshal([]byte(body), &started) != nil || started.AuthorizationURL == "" {
		t.Fatalf("start: %d %s", code, body)
	}
	// The person's browser: the authorization server sends it back to
	// the callback.
	resp, err := browser.Get(started.AuthorizationURL)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "Logged in to MCP server docs for tenant acme") {
		t.Fatalf("callback: %d %s", resp.StatusCode, page)
	}
	if l, err := (&mcptoken.Store{Dir: mcptoken.TenantDir(logins, "acme")}).Load(mcpURL); err != nil || l == nil {
		t.Errorf("acme's login: %v %v", l, err)
	}
	for token, want := range map[string]bool{aliceToken: true, bobToken: false} {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/v1/mcp/logins", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var list []serverapi.MCPLoginView
		_ = json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		if len(list) != 1 || list[0].Server != "docs" || list[0].LoggedIn != want {
			t.Errorf("GET /v1/mcp/logins for %s: %+v, want logged in %v", token, list, want)
		}
	}
	if l, err := (&mcptoken.Store{Dir: mcptoken.TenantDir(logins, "globex")}).Load(mcpURL); err != nil || l != nil {
		t.Errorf("globex's login: %v %v", l, err)
	}
	if strings.Contains(body+string(page), "tok0") {
		t.Error("the token was shown")
	}
	// The same answer again finds no login waiting.
	au, _ := url.Parse(started.AuthorizationURL)
	resp, err = http.Get(ts.URL + "/v1/mcp/oauth/callback?code=code0&state=" + url.QueryEscape(au.Query().Get("state")))
	if err == nil {
		resp.Body.Close()
	}
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a replayed callback: %v %v", resp.StatusCode, err)
	}
}

// mcpLoginServer serves an agent with the OAuth MCP server of oauthMCP, its
// tenants' logins in a directory of their own, with tokens: alice
// (approver of acme), bob (admin of globex) and an agent-role token of
// acme that is an approver too.
func mcpLoginServer(t *testing.T) (ts *httptest.Server, mcpURL, logins string) {
	mcpURL = oauthmcp.Server(t)
	dir := t.TempDir()
	mcpFile := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(mcpFile, []byte(`{"mcpServers": {"docs": {"url": "`+mcpURL+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := payerConfig(t)
	cfg.MCPFiles = []string{mcpFile}
	logins = filepath.Join(dir, "logins")
	tk, err := serveconfig.NewTokens([]serveconfig.TokenEntry{
		{SHA256: serveconfig.HashToken(aliceToken), Name: "alice", Tenant: "acme", Roles: []server.Role{server.RoleOperator, server.RoleApprover}},
		{SHA256: serveconfig.HashToken(bobToken), Name: "bob", Tenant: "globex", Roles: []server.Role{server.RoleAdmin}},
		{SHA256: serveconfig.HashToken(agentToken), Name: "claude", Tenant: "acme", Roles: []server.Role{server.RoleAgent, server.RoleApprover}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ts = httptest.NewUnstartedServer(nil)
	srv, err := server.New(memory.New(nil), &testBuilder{m: transferScript()}, &server.Options{
		Agents: map[string]runs.RunConfig{"docs-agent": cfg}, Tokens: tk.Lookup,
		MCPLogins: &server.MCPLoginOptions{Dir: logins, RedirectURL: "http://" + ts.Listener.Addr().String() + "/v1/mcp/oauth/callback"},
	})
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = srv
	ts.Start()
	t.Cleanup(ts.Close)
	return ts, mcpURL, logins
}

// startLogin posts a login to docs with token from client; it returns the
// status and the authorization URL.
func startLogin(t *testing.T, client *http.Client, ts *httptest.Server, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/mcp/logins", strings.NewReader(`{"agent":"docs-agent","server":"docs"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var started serverapi.MCPLoginStarted
	_ = json.NewDecoder(resp.Body).Decode(&started)
	return resp.StatusCode, started.AuthorizationURL
}

// Login CSRF: an approver of globex starts a login and sends its
// authorization URL to a person of acme. The person's browser, which did
// not start the login, is not logged in at once: it is shown a page
// naming the tenant and the server, and only its form finishes the login.
func TestMCPLoginBoundToTheBrowser(t *testing.T) {
	ts, mcpURL, logins := mcpLoginServer(t)
	jar, _ := cookiejar.New(nil)
	attacker := &http.Client{Jar: jar}
	code, authURL := startLogin(t, attacker, ts, bobToken)
	if code != http.StatusCreated {
		t.Fatalf("start: %d", code)
	}
	victim := &http.Client{} // another browser: no cookie of the login
	resp, err := victim.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "mcp-login-confirm") ||
		!strings.Contains(string(page), "<strong>tenant globex</strong> in to MCP server <strong>docs</strong>") || strings.Contains(string(page), "Logged in") {
		t.Fatalf("callback in another browser: %d %s", resp.StatusCode, page)
	}
	if l, err := (&mcptoken.Store{Dir: mcptoken.TenantDir(logins, "globex")}).Load(mcpURL); err != nil || l != nil {
		t.Fatalf("the login landed without the person's consent: %v %v", l, err)
	}
	// A forged confirmation (no token) does nothing.
	form := url.Values{}
	for _, m := range regexp.MustCompile(`name="(\w+)" value="([^"]*)"`).FindAllStringSubmatch(string(page), -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	forged := url.Values{"state": {form.Get("state")}, "code": {form.Get("code")}}
	resp, err = victim.PostForm(ts.URL+"/v1/mcp/oauth/callback", forged)
	if err != nil {
		t.Fatal(err)
	}
	page, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "mcp-login-confirm") {
		t.Fatalf("a confirmation without its token: %d %s", resp.StatusCode, page)
	}
	// The person accepts: the login is made for the tenant named.
	resp, err = victim.PostForm(ts.URL+"/v1/mcp/oauth/callback", form)
	if err != nil {
		t.Fatal(err)
	}
	page, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "Logged in to MCP server docs for tenant globex") {
		t.Fatalf("confirmed: %d %s", resp.StatusCode, page)
	}
	if l, err := (&mcptoken.Store{Dir: mcptoken.TenantDir(logins, "globex")}).Load(mcpURL); err != nil || l == nil {
		t.Errorf("globex's login after the confirmation: %v %v", l, err)
	}
}

// A token with the agent role may not start a login, whatever else it
// holds; one tenant cannot take every place of the pending logins.
func TestMCPLoginRefusals(t *testing.T) {
	ts, _, _ := mcpLoginServer(t)
	if code, _ := startLogin(t, http.DefaultClient, ts, agentToken); code != http.StatusForbidden {
		t.Errorf("an agent-role token's login: %d, want 403", code)
	}
	for i := range 8 {
		if code, _ := startLogin(t, http.DefaultClient, ts, aliceToken); code != http.StatusCreated {
			t.Fatalf("login %d: %d", i, code)
		}
	}
	if code, _ := startLogin(t, http.DefaultClient, ts, aliceToken); code != http.StatusTooManyRequests {
		t.Errorf("acme's login over its cap: %d, want 429", code)
	}
	if code, _ := startLogin(t, http.DefaultClient, ts, bobToken); code != http.StatusCreated {
		t.Errorf("globex's login while acme is at its cap: %d, want 201", code)
	}
}

// GET /v1/mcp/logins parses an agent's MCP servers file once, and again
// only once its content changed (its pin): it read and parsed every
// agent's files on every request.
func TestMCPLoginsListReadsAFileOnceItChanged(t *testing.T) {
	count, restore := server.CountMCPLoads()
	defer restore()
	dir := t.TempDir()
	mcpFile := filepath.Join(dir, "mcp.json")
	write := func(servers string) {
		if err := os.WriteFile(mcpFile, []byte(`{"mcpServers": {`+servers+`}}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`"docs": {"url": "http://127.0.0.1:1/mcp"}`)
	list := mcpLoginsLister(t, mcpFile)
	before := count()
	for range 3 {
		if got := list(); len(got) != 1 || got[0] != "docs" {
			t.Fatalf("logins: %q", got)
		}
	}
	if n := count() - before; n != 1 {
		t.Errorf("three lists parsed the file %d times, want once", n)
	}
	write(`"docs": {"url": "http://127.0.0.1:1/mcp"}, "wiki": {"url": "http://127.0.0.1:2/mcp"}`)
	if got := list(); len(got) != 2 || got[1] != "wiki" {
		t.Errorf("logins once the file changed: %q, want docs and wiki", got)
	}
	if n := count() - before; n != 2 {
		t.Errorf("the file was parsed %d times, want twice (once more after it changed)", n)
	}
}

// A file rewritten between its read and its parse is kept under the hash
// of the content parsed: the content read once is hashed and parsed. It
// was hashed by one read (runcore.PinFiles) and parsed after another
// (mcptool.Load), so that the newer content's servers were kept under the
// older content's hash, and listed once the file held the older content
// again.
func TestMCPLoginsListKeepsAFileUnderTheHashOfWhatItParsed(t *testing.T) {
	dir := t.TempDir()
	mcpFile := filepath.Join(dir, "mcp.json")
	older := []byte(`{"mcpServers": {"docs": {"url": "http://127.0.0.1:1/mcp"}}}`)
	newer := []byte(`{"mcpServers": {"docs": {"url": "http://127.0.0.1:1/mcp"}, "wiki": {"url": "http://127.0.0.1:2/mcp"}}}`)
	write := func(content []byte) {
		if err := os.WriteFile(mcpFile, content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(older)
	list := mcpLoginsLister(t, mcpFile)
	restore := server.BeforeMCPParse(func(string) { write(newer) })
	got := list()
	restore()
	if len(got) != 1 || got[0] != "docs" {
		t.Errorf("logins of the file read before it was rewritten: %q, want docs alone", got)
	}
	write(older)
	if got := list(); len(got) != 1 || got[0] != "docs" {
		t.Errorf("logins once the file holds its older content again: %q, want docs alone", got)
	}
	write(newer)
	if got := list(); len(got) != 2 || got[1] != "wiki" {
		t.Errorf("logins of the rewritten file: %q, want docs and wiki", got)
	}
}

// mcpLoginsLister serves one agent whose MCP servers file is mcpFile, and
// returns what lists the names of its servers by GET /v1/mcp/logins.
func mcpLoginsLister(t *testing.T, mcpFile string) (list func() []string) {
	t.Helper()
	cfg := payerConfig(t)
	cfg.MCPFiles = []string{mcpFile}
	srv, err := server.New(memory.New(nil), &testBuilder{m: transferScript()}, &server.Options{
		Agents: map[string]runs.RunConfig{"docs-agent": cfg}, Tokens: testTokens(t).Lookup,
		MCPLogins: &server.MCPLoginOptions{Dir: filepath.Join(t.TempDir(), "logins"), RedirectURL: "http://127.0.0.1:1/v1/mcp/oauth/callback"},
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return func() []string {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/v1/mcp/logins", nil)
		req.Header.Set("Authorization", "Bearer "+aliceToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var views []serverapi.MCPLoginView
		_ = json.NewDecoder(resp.Body).Decode(&views)
		var names []string
		for _, v := range views {
			names = append(names, v.Server)
		}
		return names
	}
}
