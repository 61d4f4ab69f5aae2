package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tollgate-dev/tollgate/internal/browsertest"
	"github.com/tollgate-dev/tollgate/internal/layerstore"
	"github.com/tollgate-dev/tollgate/internal/serveconfig"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/server"
)

// envGatewayNotes makes this test binary the MCP server notes (see init):
// its tool write_note appends "PATH: TEXT" to the file the variable names.
const envGatewayNotes = "TOLLGATE_TEST_GATEWAY_NOTES"

func init() {
	file := os.Getenv(envGatewayNotes)
	if file == "" {
		return
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "0"}, nil)
	type noteIn struct {
		Path string `json:"path"`
		Text string `json:"text"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "write_note", Description: "writes a note"}, func(_ context.Context, _ *mcp.CallToolRequest, in noteIn) (*mcp.CallToolResult, any, error) {
		f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, nil, err
		}
		defer f.Close()
		fmt.Fprintf(f, "%s: %s\n", in.Path, in.Text)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wrote " + in.Path}}}, nil, nil
	})
	_ = srv.Run(context.Background(), &mcp.StdioTransport{})
	os.Exit(0)
}

// gatewayServe is a `tollgate serve` with a gateway: section in front of
// the notes server, whose policy asks about every write_note; tokens:
// alice (approver), ci-bot (agent) and root (admin) of the default tenant,
// bob (approver) and obot (agent) of tenant other.
type gatewayServe struct {
	*serveProc
	dir                string
	alice, ciBot       string
	admin              string
	bob, obot          string
	agentFile, mcpFile string
	policyFile         string
	notes              string
}

func startGatewayServe(t *testing.T, ttl string) *gatewayServe {
	t.Helper()
	return startGatewayServeWith(t, ttl, nil, "", "state")
}

// startGatewayServeWith is startGatewayServe with further files in its
// directory (by name), further lines of its gateway: section and the
// state directory stateDir.
func startGatewayServeWith(t *testing.T, ttl string, files map[string]string, gateway, stateDir string) *gatewayServe {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		writeTestFile(t, filepath.Join(dir, name), content)
	}
	g := &gatewayServe{dir: dir, notes: filepath.Join(dir, "notes.txt")}
	var entries strings.Builder
	for _, who := range []struct {
		name, tenant string
		role         server.Role
		tok          *string
	}{{"alice", "", server.RoleApprover, &g.alice}, {"ci-bot", "", server.RoleAgent, &g.ciBot}, {"bob", "other", server.RoleApprover, &g.bob}, {"obot", "other", server.RoleAgent, &g.obot}, {"root", "", server.RoleAdmin, &g.admin}} {
		tok, hash, err := serveconfig.NewToken()
		if err != nil {
			t.Fatal(err)
		}
		*who.tok = tok
		fmt.Fprintf(&entries, "  - name: %s\n    tenant: %q\n    roles: [%s]\n    sha256: %s\n", who.name, who.tenant, who.role, hash)
	}
	writeTestFile(t, filepath.Join(dir, "tokens.yaml"), "tokens:\n"+entries.String())
	g.policyFile = filepath.Join(dir, "policy.yaml")
	writeTestFile(t, g.policyFile, "rules:\n  - id: review-notes\n    tool: mcp__notes__write_note\n    decision: ask\n    reason: notes are reviewed\n")
	g.mcpFile = mcpConfig(t, dir, map[string]any{
		"notes": map[string]any{"command": os.Args[0], "sandbox": "off", "env": map[string]string{envGatewayNotes: g.notes}},
	})
	writeTestFile(t, filepath.Join(dir, "server.yaml"), "tokens: tokens.yaml\nstateDir: "+stateDir+"\ngateway:\n  mcp: [mcp.json]\n  policy: policy.yaml\n  records: calls.jsonl\n  approvalTtl: "+ttl+"\n"+gateway)
	g.agentFile = filepath.Join(dir, "agent.token")
	writeTestFile(t, g.agentFile, g.ciBot+"\n")
	g.serveProc = startServe(t, filepath.Join(dir, "server.yaml"))
	return g
}

// gwBearer adds a bearer token to every request.
type gwBearer struct{ token string }

func (b gwBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// progressLog keeps the progress messages a client was sent.
type progressLog struct {
	mu   sync.Mutex
	msgs []string
}

func (p *progressLog) handler(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.msgs = append(p.msgs, req.Params.Message)
}

// connectHTTP connects an MCP client named client to the server's /mcp
// with token.
func (g *gatewayServe) connectHTTP(t *testing.T, token string, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	return g.connectHTTPAt(t, token, opts, "")
}

// connectHTTPAt is connectHTTP with a client of protocol version proto
// ("" for the SDK's default).
func (g *gatewayServe) connectHTTPAt(t *testing.T, token string, opts *mcp.ClientOptions, proto string) (*mcp.ClientSession, error) {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: g.url + "/mcp", HTTPClient: &http.Client{Transport: gwBearer{token}}}
	var so *mcp.ClientSessionOptions
	if proto != "" {
		so = &mcp.ClientSessionOptions{ProtocolVersion: proto}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "notes-client", Version: "3.1"}, opts).Connect(t.Context(), tr, so)
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

// connectStdio starts `tollgate gateway --server` with the token in
// tokenFile as a subprocess and connects an MCP client to it.
func (g *gatewayServe) connectStdio(t *testing.T, serverURL, tokenFile string) *mcp.ClientSession {
	t.Helper()
	// The workspace is the working directory: --workdir would serve the
	// builtin tools too, under which the upstream's are SERVER__TOOL.
	cmd := exec.Command(tollgateBinary(t), "gateway", "--mcp", g.mcpFile, "--policy", g.policyFile, "--server", serverURL, "--token-file", tokenFile)
	cmd.Dir = g.dir
	cmd.Stderr = os.Stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stdio-client", Version: "1"}, nil).Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// writeNote calls write_note in the background; the result comes on the
// channel.
func writeNote(t *testing.T, cs *mcp.ClientSession, path string, progress bool) <-chan *mcp.CallToolResult {
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		p := &mcp.CallToolParams{Name: "write_note", Arguments: map[string]any{"path": path, "text": "hello"}}
		if progress {
			p.SetProgressToken("note-" + path)
		}
		res, err := cs.CallTool(t.Context(), p)
		if err != nil {
			t.Errorf("write_note %s: %v", path, err)
			res = &mcp.CallToolResult{IsError: true}
		}
		done <- res
	}()
	return done
}

func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// pendingFor waits for the one pending approval token's principal sees.
func (g *gatewayServe) pendingFor(t *testing.T, token string) serverapi.ApprovalView {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		var page serverapi.ApprovalPage
		if code := g.do(t, "GET", "/v1/approvals?status=pending", token, nil, &page); code != http.StatusOK {
			t.Fatalf("list approvals: %d", code)
		}
		if len(page.Approvals) > 0 {
			return page.Approvals[0]
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("no approval was asked")
	return serverapi.ApprovalView{}
}

func (g *gatewayServe) notesText(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(g.notes)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// An MCP client's call through the gateway mounted in `tollgate serve`
// waits, with progress notifications naming the page's link, for a person:
// a click on Approve on the page lets it run, once. The client session is
// a run of the token's principal, source mcp, named after the client.
func TestGatewayServePageApproves(t *testing.T) {
	ctx := chrome.Tab(t) // first: it skips the test when the browser is skipped on purpose
	g := startGatewayServe(t, "10m")
	progress := &progressLog{}
	// A client of protocol 2025-11-25, whose session ends when it goes
	// away (one of 2026-07-28 has no session).
	cs, err := g.connectHTTPAt(t, g.ciBot, &mcp.ClientOptions{ProgressNotificationHandler: progress.handler}, "2025-11-25")
	if err != nil {
		t.Fatal(err)
	}
	done := writeNote(t, cs, "a.txt", true)
	browsertest.SignIn(t, ctx, g.url, g.alice)
	card := `li.approval`
	browsertest.Do(t, ctx, chromedp.WaitVisible(chromedp.CSS(card+` button.approve`)))
	if args := browsertest.Value(t, ctx, chromedp.TextContent(chromedp.CSS(card+` pre.args`))); !strings.Contains(args, "a.txt") {
		t.Errorf("the card shows arguments %q", args)
	}
	if n := g.notesText(t); n != "" {
		t.Fatalf("the note was written before the approval: %q", n)
	}
	browsertest.Do(t, ctx, chromedp.Click(chromedp.CSS(card+` button.approve`)))
	res := <-done
	if res.IsError || resultText(res) != "wrote a.txt" {
		t.Fatalf("write_note: %q (error %v)", resultText(res), res.IsError)
	}
	if n := g.notesText(t); n != "a.txt: hello\n" {
		t.Errorf("notes %q, want one line", n)
	}
	progress.mu.Lock()
	linked := len(progress.msgs) > 0 && strings.Contains(progress.msgs[0], g.url+"/#run=mc_")
	msgs := progress.msgs
	progress.mu.Unlock()
	if !linked {
		t.Errorf("progress messages %q: want the first to give the page's link", msgs)
	}
	var page serverapi.RunPage
	g.do(t, "GET", "/v1/runs", g.alice, nil, &page)
	if len(page.Runs) != 1 || page.Runs[0].Owner != "person:ci-bot" || page.Runs[0].Source != serverapi.SourceMCP || page.Runs[0].Agent != "notes-client" {
		t.Fatalf("runs %+v", page.Runs)
	}
	var run struct {
		ToolCalls []struct {
			Ran      bool
			Decision struct{ Outcome string }
		}
	}
	g.do(t, "GET", "/v1/runs/"+page.Runs[0].ID, g.alice, nil, &run)
	if len(run.ToolCalls) != 1 || !run.ToolCalls[0].Ran || run.ToolCalls[0].Decision.Outcome != "approved" {
		t.Errorf("the session's calls: %+v", run.ToolCalls)
	}
	_ = cs.Close()
	g.waitRunStatus(t, page.Runs[0].ID, "done")
}

// waitRunStatus waits until the run's status is want.
func (g *gatewayServe) waitRunStatus(t *testing.T, id, want string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var run struct{ Status string }
		g.do(t, "GET", "/v1/runs/"+id, g.alice, nil, &run)
		if run.Status == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s is %s, want %s", id, run.Status, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// `tollgate gateway --server` over stdio: an approval edited on the
// server runs the edited arguments; a denied call does not run and the
// client reads the person's reason; the agent's token cannot decide;
// another tenant neither sees nor decides the calls, and its own agent's
// asks go to its own page; a token that may decide is refused at /mcp.
func TestGatewayServeServerFlag(t *testing.T) {
	g := startGatewayServe(t, "10m")
	cs := g.connectStdio(t, g.url, g.agentFile)

	done := writeNote(t, cs, "a.txt", false)
	a := g.pendingFor(t, g.alice)
	if code := g.do(t, "POST", "/v1/approvals/"+a.ID+"/decision", g.ciBot, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, nil); code != http.StatusForbidden {
		t.Errorf("the agent's token deciding: %d, want 403", code)
	}
	if code := g.do(t, "GET", "/v1/approvals", g.ciBot, nil, nil); code != http.StatusForbidden {
		t.Errorf("the agent's token listing approvals: %d, want 403", code)
	}
	var other serverapi.ApprovalPage
	if g.do(t, "GET", "/v1/approvals", g.bob, nil, &other); len(other.Approvals) != 0 {
		t.Errorf("tenant other's approver sees %d approvals of the default tenant", len(other.Approvals))
	}
	if code := g.do(t, "POST", "/v1/approvals/"+a.ID+"/decision", g.bob, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, nil); code != http.StatusNotFound {
		t.Errorf("tenant other's approver deciding: %d, want 404", code)
	}
	edited := json.RawMessage(`{"path":"b.txt","text":"edited"}`)
	if code := g.do(t, "POST", "/v1/approvals/"+a.ID+"/decision", g.alice, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest, EditedArgs: edited}, nil); code != http.StatusOK {
		t.Fatalf("alice approving with an edit: %d", code)
	}
	if res := <-done; res.IsError || resultText(res) != "wrote b.txt" {
		t.Errorf("the edited call: %q (error %v)", resultText(res), res.IsError)
	}
	if n := g.notesText(t); n != "b.txt: edited\n" {
		t.Errorf("notes %q, want the edited arguments' line alone", n)
	}

	done = writeNote(t, cs, "c.txt", false)
	a = g.pendingFor(t, g.alice)
	if code := g.do(t, "POST", "/v1/approvals/"+a.ID+"/decision", g.alice, serverapi.DecisionRequest{Decision: "deny", Reason: "no more notes today"}, nil); code != http.StatusOK {
		t.Fatalf("alice denying: %d", code)
	}
	if res := <-done; !res.IsError || !strings.Contains(resultText(res), "no more notes today") {
		t.Errorf("the denied call: %q (error %v), want an error with the reason", resultText(res), res.IsError)
	}
	if n := g.notesText(t); strings.Contains(n, "c.txt") {
		t.Errorf("the denied call ran: %q", n)
	}

	// The session is a run of the token's principal, with both calls
	// (the records come after the calls, in the background).
	deadline := time.Now().Add(time.Minute)
	var stdioRun string
	for {
		var page serverapi.RunPage
		g.do(t, "GET", "/v1/runs", g.alice, nil, &page)
		var run struct{ ToolCalls []struct{ Ran bool } }
		if len(page.Runs) == 1 {
			g.do(t, "GET", "/v1/runs/"+page.Runs[0].ID, g.alice, nil, &run)
		}
		if len(page.Runs) == 1 && page.Runs[0].Owner == "person:ci-bot" && page.Runs[0].Agent == "stdio-client" && len(run.ToolCalls) == 2 {
			stdioRun = page.Runs[0].ID
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("runs %+v, calls %+v: want the stdio session's run with its two calls", page.Runs, run.ToolCalls)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Tenant other's agent, on the mounted gateway: its ask is on its
	// tenant's page alone.
	ocs, err := g.connectHTTP(t, g.obot, nil)
	if err != nil {
		t.Fatal(err)
	}
	done = writeNote(t, ocs, "o.txt", false)
	oa := g.pendingFor(t, g.bob)
	var mine serverapi.ApprovalPage
	if g.do(t, "GET", "/v1/approvals?status=pending", g.alice, nil, &mine); len(mine.Approvals) != 0 {
		t.Errorf("alice sees tenant other's approvals: %+v", mine.Approvals)
	}
	if code := g.do(t, "POST", "/v1/approvals/"+oa.ID+"/decision", g.alice, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: oa.ArgsDigest}, nil); code != http.StatusNotFound {
		t.Errorf("alice deciding tenant other's approval: %d, want 404", code)
	}
	if code := g.do(t, "POST", "/v1/approvals/"+oa.ID+"/decision", g.bob, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: oa.ArgsDigest}, nil); code != http.StatusOK {
		t.Fatalf("bob approving: %d", code)
	}
	if res := <-done; res.IsError || resultText(res) != "wrote o.txt" {
		t.Errorf("tenant other's call: %q (error %v)", resultText(res), res.IsError)
	}

	if _, err := g.connectHTTP(t, g.alice, nil); err == nil {
		t.Error("an approver's token connected to /mcp, want refused")
	}
	// The stdio client goes away: the gateway ends, and its session's run
	// with it.
	_ = cs.Close()
	g.waitRunStatus(t, stdioRun, "done")
}

// A call no one answers is refused at its approval's TTL, and does not run.
func TestGatewayServeUnanswered(t *testing.T) {
	g := startGatewayServe(t, "1s")
	cs, err := g.connectHTTP(t, g.ciBot, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := <-writeNote(t, cs, "a.txt", true)
	if !res.IsError || !strings.Contains(resultText(res), "no one answered") {
		t.Errorf("unanswered: %q (error %v), want refused saying no one answered", resultText(res), res.IsError)
	}
	if n := g.notesText(t); n != "" {
		t.Errorf("the unanswered call ran: %q", n)
	}
}

// With a server that cannot be reached, or that refuses the token, a call
// that needs a person is refused (fail closed) and does not run.
func TestGatewayServerUnreachableRefuses(t *testing.T) {
	g := startGatewayServe(t, "10m")
	bad := filepath.Join(g.dir, "bad.token")
	writeTestFile(t, bad, "tg_not_a_token\n")
	// A token the server refuses stops the gateway at start: nothing could
	// be asked with it. An unreachable server is a warning there, and
	// every call that needs a person is refused.
	code, _, stderr := runMain(t, "gateway", "--mcp", g.mcpFile, "--policy", g.policyFile, "--server", g.url, "--token-file", bad)
	if code != exitUsage || !strings.Contains(stderr, "refuses the --token-file token") || !strings.Contains(stderr, "401") {
		t.Errorf("a bad token: exit %d, stderr %q", code, stderr)
	}
	for _, tc := range []struct{ name, url, token, says string }{
		{"unreachable", "http://127.0.0.1:1", g.agentFile, "could not be reached"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := g.connectStdio(t, tc.url, tc.token)
			res := <-writeNote(t, cs, "a.txt", false)
			if !res.IsError || !strings.Contains(resultText(res), tc.says) {
				t.Errorf("%q (error %v), want refused saying %q", resultText(res), res.IsError, tc.says)
			}
		})
	}
	if n := g.notesText(t); n != "" {
		t.Errorf("a refused call ran: %q", n)
	}
}

// `tollgate gateway --addr --tokens`: an agent token calls tools; a token
// that may decide approvals, or that lacks the agent role, is refused.
func TestGatewayTokensRoles(t *testing.T) {
	dir := t.TempDir()
	toks := map[string]string{}
	var entries strings.Builder
	for _, who := range []struct {
		name, tenant string
		roles        string
	}{{"ci-bot", "acme", "agent"}, {"alice", "acme", "approver"}, {"ada", "acme", "agent, admin"}, {"vic", "acme", "viewer"}} {
		tok, hash, err := serveconfig.NewToken()
		if err != nil {
			t.Fatal(err)
		}
		toks[who.name] = tok
		fmt.Fprintf(&entries, "  - name: %s\n    tenant: %s\n    roles: [%s]\n    sha256: %s\n", who.name, who.tenant, who.roles, hash)
	}
	tokens := apWrite(t, dir, "tokens.yaml", "tokens:\n"+entries.String())
	recs := filepath.Join(dir, "records.jsonl")
	ctx, cancel := context.WithCancel(t.Context())
	errR, errW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"gateway", "--mcp", gatewayMCPFile(t, dir), "--addr", "127.0.0.1:0", "--tokens", tokens, "--records", recs}, strings.NewReader(""), io.Discard, errW)
		_ = errW.Close()
	}()
	var url string
	sc := bufio.NewScanner(errR)
	for sc.Scan() {
		if m := regexp.MustCompile(`serving MCP at (http://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, errR) }()
	if url == "" {
		t.Fatal("the gateway did not say where it serves")
	}
	connect := func(token string) (*mcp.ClientSession, error) {
		tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: gwBearer{token}}}
		return mcp.NewClient(&mcp.Implementation{Name: "c", Version: "0"}, nil).Connect(t.Context(), tr, nil)
	}
	for _, who := range []string{"alice", "ada", "vic"} {
		if cs, err := connect(toks[who]); err == nil {
			_ = cs.Close()
			t.Errorf("%s's token connected, want refused", who)
		}
	}
	cs, err := connect(toks["ci-bot"])
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "good", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Errorf("good as ci-bot: %+v, %v", res, err)
	}
	_ = cs.Close()
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d", code)
	}
	if b, _ := os.ReadFile(recs); strings.Count(string(b), `"tool":"mcp__app__good"`) != 1 {
		t.Errorf("records:\n%s\nwant the one call of ci-bot", b)
	}
}

// An MCP client's call approved and remembered as a rule (an approver
// proposes it, an admin accepts it) is not asked again: the gateway
// mounted in serve decides with the rule layer of the client's tenant. A
// client of another tenant is still asked.
func TestGatewayServeRemembers(t *testing.T) {
	g := startGatewayServe(t, "10m")
	cs, err := g.connectHTTP(t, g.ciBot, nil)
	if err != nil {
		t.Fatal(err)
	}
	// tools/list, asked with no call's session, still lists the tool the
	// policy only asks about.
	if names := toolNames(t, cs); !slices.Contains(names, "write_note") {
		t.Fatalf("tools/list = %v, want write_note", names)
	}
	done := writeNote(t, cs, "a.txt", false)
	a := g.pendingFor(t, g.alice)
	if code := g.do(t, "POST", "/v1/approvals/"+a.ID+"/decision", g.alice, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, nil); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	if res := <-done; res.IsError {
		t.Fatalf("the approved call: %q", resultText(res))
	}
	var rule layerstore.LayerRule
	if code := g.do(t, "POST", "/v1/rules/proposals", g.alice, serverapi.ProposeRequest{Approval: a.ID, Effect: "allow"}, &rule); code != http.StatusCreated {
		t.Fatalf("propose: %d", code)
	}
	if code := g.do(t, "POST", "/v1/rules/"+rule.ID+"/accept", g.admin, nil, nil); code != http.StatusOK {
		t.Fatalf("accept: %d", code)
	}

	select {
	case res := <-writeNote(t, cs, "a.txt", false):
		if res.IsError || resultText(res) != "wrote a.txt" {
			t.Fatalf("the remembered call: %q (error %v)", resultText(res), res.IsError)
		}
	case <-time.After(time.Minute):
		var page serverapi.ApprovalPage
		g.do(t, "GET", "/v1/approvals?status=pending", g.alice, nil, &page)
		t.Fatalf("the remembered call did not complete: pending %+v", page.Approvals)
	}
	if n := g.notesText(t); n != "a.txt: hello\na.txt: hello\n" {
		t.Errorf("notes %q, want two lines", n)
	}

	// Tenant other's layer is empty: its client's identical call is asked.
	other, err := g.connectHTTP(t, g.obot, nil)
	if err != nil {
		t.Fatal(err)
	}
	odone := writeNote(t, other, "a.txt", false)
	oa := g.pendingFor(t, g.bob)
	if code := g.do(t, "POST", "/v1/approvals/"+oa.ID+"/decision", g.bob, serverapi.DecisionRequest{Decision: "deny", Reason: "not this one"}, nil); code != http.StatusOK {
		t.Fatalf("deny: %d", code)
	}
	if res := <-odone; !res.IsError {
		t.Fatalf("tenant other's call ran: %q", resultText(res))
	}
}

// The hooks of the gateway mounted in `tollgate serve` run their commands
// in the hooks sandbox, as a served run's: a preToolUse command writes in
// the workspace (the directory of server.yaml) and is refused by the
// kernel outside it and on server.yaml itself.
func TestGatewayServeHookCommandsConfined(t *testing.T) {
	needSandbox(t)
	outside := t.TempDir()
	hooks := "hooks:\n  - event: preToolUse\n    matcher: \"*\"\n    action:\n      type: command\n      command: 'echo in > hook-in.txt; echo out > " + outside + "/hook-out.txt; echo \"#x\" >> server.yaml'\n"
	// The state directory lies outside the workspace: in it, its store and
	// key would be readable to the hooks, and serve does not start.
	g := startGatewayServeWith(t, "10m", map[string]string{"hooks.yaml": hooks}, "  hooks: [hooks.yaml]\n", t.TempDir())
	before, _ := os.ReadFile(filepath.Join(g.dir, "server.yaml"))
	cs, err := g.connectHTTP(t, g.ciBot, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := writeNote(t, cs, "a.txt", false)
	a := g.pendingFor(t, g.alice)
	if code := g.do(t, "POST", "/v1/approvals/"+a.ID+"/decision", g.alice, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, nil); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	if res := <-done; res.IsError {
		t.Fatalf("the approved call: %q", resultText(res))
	}
	if _, err := os.Stat(filepath.Join(g.dir, "hook-in.txt")); err != nil {
		t.Fatalf("the hook did not write in the workspace: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "hook-out.txt")); err == nil {
		t.Error("the hook wrote outside the workspace")
	}
	if after, _ := os.ReadFile(filepath.Join(g.dir, "server.yaml")); string(after) != string(before) {
		t.Errorf("the hook wrote server.yaml:\n%s", after)
	}
}
