package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/pgtest"
	"github.com/tollgate-dev/tollgate/internal/serveconfig"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/server"
)

// serveProc is a running `tollgate serve`.
type serveProc struct {
	cmd  *exec.Cmd
	url  string
	logs *bytes.Buffer
}

// startServe starts the binary on a free loopback port and waits until it
// listens.
func startServe(t *testing.T, config string) *serveProc {
	t.Helper()
	return startServeCmd(t, exec.Command(tollgateBinary(t), "serve", "--config", config, "--addr", "127.0.0.1:0"))
}

func startServeCmd(t *testing.T, cmd *exec.Cmd) *serveProc {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serveProc{cmd: cmd, logs: &bytes.Buffer{}}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		line := sc.Text()
		p.logs.WriteString(line + "\n")
		if _, rest, ok := strings.Cut(line, "listening on "); ok {
			p.url = strings.Fields(rest)[0]
			break
		}
	}
	if p.url == "" {
		t.Fatalf("tollgate serve did not start:\n%s", p.logs)
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	return p
}

func (p *serveProc) do(t *testing.T, method, path, token string, body, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, p.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
	}
	return resp.StatusCode
}

// waitEvent follows the run's events (SSE) from the start until one of type typ.
func (p *serveProc) waitEvent(t *testing.T, token, runID, typ string) {
	t.Helper()
	req, _ := http.NewRequest("GET", p.url+"/v1/events?run="+runID, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	client := &http.Client{Timeout: 60 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() == "event: "+typ {
			return
		}
	}
	t.Fatalf("the events of run %s ended without %s: %v", runID, typ, sc.Err())
}

// A run waits for an approval when `tollgate serve` is killed with SIGKILL;
// a new server on the same state directory shows the approval, takes the
// decision and resumes the run by itself: the command runs exactly once.
func TestServeSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	ws, token, run, second := haltedAcrossSIGKILL(t, "counted")
	var page serverapi.ApprovalPage
	if code := second.do(t, "GET", "/v1/approvals?status=pending", token, nil, &page); code != http.StatusOK || len(page.Approvals) != 1 {
		t.Fatalf("pending approvals after the restart: %d %+v", code, page)
	}
	a := page.Approvals[0]
	if a.Tool != "bash" || a.AskedBy != "rule:review-bash" || !strings.Contains(a.ArgumentsPretty, "count.txt") {
		t.Fatalf("approval %+v", a)
	}
	if code := second.do(t, "POST", "/v1/approvals/"+a.ID+"/decision", token, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, nil); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	second.waitEvent(t, token, run.ID, "run.finished")
	if code := second.do(t, "GET", "/v1/runs/"+run.ID, token, nil, &run); code != http.StatusOK || run.Status != "done" {
		t.Fatalf("run after the approval: %d %s %s", code, run.Status, run.Reason)
	}
	b, err := os.ReadFile(filepath.Join(ws, "count.txt"))
	if err != nil || string(b) != "ran\n" {
		t.Fatalf("count.txt = %q (%v), want the command's one line", b, err)
	}
}

// haltedAcrossSIGKILL starts `tollgate serve` with an agent whose one bash
// call (appending to ws/count.txt) a policy sends for approval and whose
// last turn says final; starts a run, waits until it halts, kills the
// server with SIGKILL and starts a new one on the same state directory. It
// returns the workspace, alice's token (operator, approver), the run and the
// new server.
func haltedAcrossSIGKILL(t *testing.T, final string) (ws, token string, run serverapi.RunView, second *serveProc) {
	t.Helper()
	dir := t.TempDir()
	ws = filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "script.yaml"), `turns:
  - text: counting
    toolCalls:
      - name: bash
        args: {command: "echo ran >> count.txt"}
  - text: `+final+"\n")
	writeTestFile(t, filepath.Join(dir, "policy.yaml"), "rules:\n  - id: review-bash\n    tool: bash\n    decision: ask\n    reason: commands are reviewed\n")
	token, hash, err := serveconfig.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "tokens.yaml"), fmt.Sprintf("tokens:\n  - name: alice\n    tenant: acme\n    roles: [operator, approver]\n    sha256: %s\n", hash))
	config := filepath.Join(dir, "server.yaml")
	writeTestFile(t, config, fmt.Sprintf(`stateDir: %s
tokens: tokens.yaml
agents:
  counter:
    model: script:script.yaml
    workdir: ws
    policy: policy.yaml
`, filepath.Join(dir, "state")))

	first := startServe(t, config)
	if code := first.do(t, "POST", "/v1/runs", token, serverapi.StartRunRequest{Agent: "counter", Prompt: "count"}, &run); code != http.StatusCreated {
		t.Fatalf("start: %d %+v", code, run)
	}
	first.waitEvent(t, token, run.ID, "run.halted")
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.cmd.Wait()
	return ws, token, run, startServe(t, config)
}

// Without a tokens file the server refuses a non-loopback address.
func TestServeRefusesOpenAddrWithoutTokens(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	config := filepath.Join(dir, "server.yaml")
	writeTestFile(t, config, "addr: 0.0.0.0:7777\nagents:\n  a:\n    model: script:s.yaml\n    workdir: ws\n")
	var out, errb bytes.Buffer
	code := Main(t.Context(), []string{"serve", "--config", config, "--state-dir", filepath.Join(dir, "state")}, nil, &out, &errb)
	if code != exitUsage || !strings.Contains(errb.String(), "without a tokens file") {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
}

// `tollgate serve token >> tokens.yaml`, twice from an empty file, builds a
// tokens file that loads, with each entry standing for the token printed on
// stderr, and no token in the file.
func TestServeToken(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "tokens.yaml")
	writeTestFile(t, p, "")
	tokens := map[string]string{}
	for _, who := range []struct{ name, tenant string }{{"alice", "acme"}, {"bob", ""}} {
		var out, errb bytes.Buffer
		if code := Main(t.Context(), []string{"serve", "token", "--name", who.name, "--tenant", who.tenant, "--role", "approver"}, nil, &out, &errb); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		tok := strings.Fields(errb.String())
		tokens[who.name] = tok[len(tok)-1]
		if !strings.HasPrefix(tokens[who.name], serveconfig.TokenPrefix) || strings.Contains(out.String(), tokens[who.name]) {
			t.Fatalf("stdout %q, stderr %q", out.String(), errb.String())
		}
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = f.Write(out.Bytes())
		f.Close()
	}
	tk, err := serveconfig.LoadTokens(p)
	if err != nil {
		b, _ := os.ReadFile(p)
		t.Fatalf("%v\n%s", err, b)
	}
	if pr, ok := tk.Lookup(tokens["alice"]); !ok || pr.Name != "alice" || pr.Tenant != "acme" || !pr.Has(server.RoleApprover) {
		t.Fatalf("alice's entry: %+v %v", pr, ok)
	}
	if pr, ok := tk.Lookup(tokens["bob"]); !ok || pr.Name != "bob" || pr.Tenant != "" {
		t.Fatalf("bob's entry: %+v %v", pr, ok)
	}
	var out, errb bytes.Buffer
	if code := Main(t.Context(), []string{"serve", "token", "--name", "alice", "--role", "root"}, nil, &out, &errb); code != exitUsage {
		t.Fatalf("unknown role: exit %d", code)
	}
}

func writeTestFile(t *testing.T, p, body string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A tool running under the server cannot reach the approval API with the
// server's credentials: no token and no TOLLGATE_ variable is in its
// environment, the file tools refuse the tokens file even inside the
// workspace, and a sandboxed command can neither change it nor read the
// state directory's admin token.
func TestServeToolsCannotReachCredentials(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	state := filepath.Join(dir, "state")
	for _, d := range []string{ws, state} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	token, hash, err := serveconfig.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	tokens := fmt.Sprintf("tokens:\n  - name: alice\n    roles: [operator]\n    sha256: %s\n", hash)
	tokensFile := filepath.Join(ws, "tokens.yaml")
	writeTestFile(t, tokensFile, tokens)
	writeTestFile(t, filepath.Join(state, "serve.token"), "tg_planted_secret\n")
	writeTestFile(t, filepath.Join(dir, "script.yaml"), fmt.Sprintf(`turns:
  - toolCalls:
      - {name: write, args: {path: tokens.yaml, content: "tokens: []"}}
  - toolCalls:
      - {name: bash, args: {command: "env > env.txt; cat %s > stolen.txt 2>&1; echo '#' >> tokens.yaml"}}
  - text: done
`, filepath.Join(state, "serve.token")))
	writeTestFile(t, filepath.Join(dir, "policy.yaml"), "autonomy: full_auto\n")
	config := filepath.Join(dir, "server.yaml")
	writeTestFile(t, config, fmt.Sprintf("stateDir: %s\ntokens: ws/tokens.yaml\nagents:\n  a:\n    model: script:script.yaml\n    workdir: ws\n    policy: policy.yaml\n", state))
	cmd := exec.Command(tollgateBinary(t), "serve", "--config", config, "--addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "TOLLGATE_API_TOKEN="+token)
	p := startServeCmd(t, cmd)
	var run serverapi.RunView
	if code := p.do(t, "POST", "/v1/runs", token, serverapi.StartRunRequest{Agent: "a", Prompt: "go"}, &run); code != http.StatusCreated {
		t.Fatalf("start: %d", code)
	}
	p.waitEvent(t, token, run.ID, "run.finished")
	if code := p.do(t, "GET", "/v1/runs/"+run.ID, token, nil, &run); code != http.StatusOK || run.Status != "done" {
		t.Fatalf("run: %d %s %s", code, run.Status, run.Reason)
	}
	var records []struct {
		Name    string `json:"name"`
		Output  string `json:"output"`
		IsError bool   `json:"isError"`
	}
	if err := json.Unmarshal(run.ToolCalls, &records); err != nil || len(records) != 2 || records[0].Name != "write" || !records[0].IsError || !strings.Contains(records[0].Output, "govern") {
		t.Fatalf("the write of the tokens file was not refused: %s (%v)", run.ToolCalls, err)
	}
	env, err := os.ReadFile(filepath.Join(ws, "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(env), token) || strings.Contains(string(env), "TOLLGATE_") {
		t.Fatalf("the tool's environment holds the server's credentials:\n%s", env)
	}
	if sandboxedHere(t) {
		if b, _ := os.ReadFile(tokensFile); string(b) != tokens {
			t.Errorf("a sandboxed command changed the tokens file: %q", b)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, "stolen.txt")); strings.Contains(string(b), "tg_planted_secret") {
			t.Errorf("a sandboxed command read the state directory's token")
		}
	} else {
		t.Log("bash is not sandboxed here: the sandbox's part of the containment is not exercised")
	}
}

// Two `tollgate serve` processes share one PostgreSQL store: a run started
// on one and approved on the other is resumed by exactly one of them, and
// its command runs once; each lists the other's runs.
func TestServeTwoServersOnePostgresStore(t *testing.T) {
	t.Parallel()
	db := pgtest.Database(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "script.yaml"), "turns:\n  - toolCalls: [{name: bash, args: {command: \"echo ran >> count.txt\"}}]\n  - text: counted\n")
	writeTestFile(t, filepath.Join(dir, "policy.yaml"), "rules:\n  - id: review-bash\n    tool: bash\n    decision: ask\n")
	token, hash, err := serveconfig.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "tokens.yaml"), "tokens:\n  - name: alice\n    roles: [operator, approver]\n    sha256: "+hash+"\n")
	config := filepath.Join(dir, "server.yaml")
	writeTestFile(t, config, fmt.Sprintf("stateDir: %s\nstore: postgres\ntokens: tokens.yaml\nagents:\n  counter:\n    model: script:script.yaml\n    workdir: ws\n    policy: policy.yaml\n", filepath.Join(dir, "state")))
	start := func() *serveProc {
		cmd := exec.Command(tollgateBinary(t), "serve", "--config", config, "--addr", "127.0.0.1:0")
		cmd.Env = append(os.Environ(), envStoreURL+"="+db)
		return startServeCmd(t, cmd)
	}
	a, b := start(), start()
	const n = 3
	for range n {
		var run serverapi.RunView
		if code := a.do(t, "POST", "/v1/runs", token, serverapi.StartRunRequest{Agent: "counter", Prompt: "count"}, &run); code != http.StatusCreated {
			t.Fatalf("start: %d", code)
		}
		a.waitEvent(t, token, run.ID, "run.halted")
		var page serverapi.ApprovalPage
		if code := b.do(t, "GET", "/v1/approvals?status=pending&run="+run.ID, token, nil, &page); code != http.StatusOK || len(page.Approvals) != 1 {
			t.Fatalf("the other server's approvals: %d %+v", code, page)
		}
		ap := page.Approvals[0]
		if code := b.do(t, "POST", "/v1/approvals/"+ap.ID+"/decision", token, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: ap.ArgsDigest}, nil); code != http.StatusOK {
			t.Fatalf("approve: %d", code)
		}
		b.waitEvent(t, token, run.ID, "run.finished")
	}
	if b, err := os.ReadFile(filepath.Join(ws, "count.txt")); err != nil || string(b) != strings.Repeat("ran\n", n) {
		t.Fatalf("count.txt = %q (%v), want %d lines: each approved command once", b, err, n)
	}
}

// A state directory reached through a link from outside the workspace, but
// lying inside it, is refused like one named inside it: the agent's tools
// could read the server's admin token from it.
func TestServeRefusesStateDirLinkedIntoWorkspace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(filepath.Join(ws, "state"), 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "statelink")
	if err := os.Symlink(filepath.Join(ws, "state"), link); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "server.yaml")
	writeTestFile(t, config, "addr: 127.0.0.1:0\nagents:\n  a:\n    model: script:s.yaml\n    workdir: ws\n")
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second) // a server that starts is stopped
	defer cancel()
	code := Main(ctx, []string{"serve", "--config", config, "--state-dir", link}, nil, &out, &errb)
	if code != exitUsage || !strings.Contains(errb.String(), "inside the workspace") {
		t.Fatalf("exit %d, want %d naming the workspace: %s", code, exitUsage, errb.String())
	}
	if _, err := os.Stat(filepath.Join(ws, "state", "serve.token")); err == nil {
		t.Fatal("a token was written inside the workspace")
	}
}

// With tokens of several tenants, an agent open to every tenant is warned
// about at start; one limited with tenants: is not, and is hidden from the
// other tenant.
func TestServeWarnsOfAgentOpenToEveryTenant(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "tokens.yaml"), "tokens:\n"+
		"  - {name: alice, tenant: acme, roles: [viewer], sha256: "+serveconfig.HashToken("tg_alice")+"}\n"+
		"  - {name: bob, tenant: globex, roles: [viewer], sha256: "+serveconfig.HashToken("tg_bob")+"}\n")
	for _, ws := range []string{"ws-a", "ws-b"} {
		if err := os.MkdirAll(filepath.Join(dir, ws), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeTestFile(t, filepath.Join(dir, "s.yaml"), "turns:\n  - text: hi\n")
	config := filepath.Join(dir, "server.yaml")
	writeTestFile(t, config, "tokens: tokens.yaml\nagents:\n  mine:\n    tenants: [acme]\n    model: script:s.yaml\n    workdir: ws-a\n  anyone:\n    model: script:s.yaml\n    workdir: ws-b\n")
	p := startServeCmd(t, exec.Command(tollgateBinary(t), "serve", "--config", config, "--addr", "127.0.0.1:0", "--state-dir", filepath.Join(dir, "state")))
	logs := p.logs.String()
	if !strings.Contains(logs, "warning: agent anyone has no tenants: list") || !strings.Contains(logs, `"acme", "globex"`) || strings.Contains(logs, "agent mine") {
		t.Fatalf("start-up logs:\n%s", logs)
	}
	var agents struct {
		Agents []serverapi.AgentInfo `json:"agents"`
	}
	if code := p.do(t, "GET", "/v1/agents", "tg_bob", nil, &agents); code != http.StatusOK || len(agents.Agents) != 1 || agents.Agents[0].Name != "anyone" {
		t.Fatalf("globex's agents: %d %+v", code, agents)
	}
}

// An agent whose policy file is missing or does not load, or whose script
// model is missing, stops the start with the file, line and field of
// server.yaml (never a flag of run), not the first run.
func TestServeRefusesAgentThatDoesNotBuild(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "s.yaml"), "turns:\n  - text: hi\n")
	config := filepath.Join(dir, "server.yaml")
	for name, tc := range map[string]struct{ policy, script, want string }{
		"missing":  {"", "s.yaml", ":6:13: agents.a.policy: "},
		"unloaded": {"rules: [{id: x, tools: [bash], decision: maybe}]\n", "s.yaml", ":6:13: agents.a.policy: "},
		"no model": {"rules: []\n", "nope.yaml", ":4:12: agents.a.model: "},
	} {
		os.Remove(filepath.Join(dir, "policy.yaml"))
		if tc.policy != "" {
			writeTestFile(t, filepath.Join(dir, "policy.yaml"), tc.policy)
		}
		writeTestFile(t, config, "agents:\n  a:\n    tenants: [acme]\n    model: script:"+tc.script+"\n    workdir: ws\n    policy: policy.yaml\naddr: 127.0.0.1:0\n")
		var out, errb bytes.Buffer
		// A server that starts anyway stops at the deadline, exit 0.
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		code := Main(ctx, []string{"serve", "--config", config, "--state-dir", filepath.Join(dir, "state")}, nil, &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), config+tc.want) || strings.Contains(errb.String(), "--policy") || strings.Contains(errb.String(), "--model") || strings.Contains(errb.String(), "listening") {
			t.Errorf("%s: exit %d: %s", name, code, errb.String())
		}
		// The refused start leaves no admin token behind.
		if _, err := os.Stat(filepath.Join(dir, "state", adminTokenFile)); err == nil {
			t.Errorf("%s: a refused start wrote %s", name, adminTokenFile)
		}
	}
}

// Every error of serve says "tollgate: serve: " once; a configuration error
// (the file, what it names, the environment) has no hint to read --help,
// which flag errors keep, naming serve's own help.
func TestServeErrorShape(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	good := filepath.Join(dir, "server.yaml")
	writeTestFile(t, good, "addr: 127.0.0.1:0\nagents:\n  a:\n    model: script:s.yaml\n    workdir: ws\n")
	noWorkdir := filepath.Join(dir, "noworkdir.yaml")
	writeTestFile(t, noWorkdir, "agents:\n  a:\n    model: script:s.yaml\n    workdir: nowhere\n")
	open := filepath.Join(dir, "open.yaml")
	writeTestFile(t, open, "addr: 0.0.0.0:7777\nagents:\n  a:\n    model: script:s.yaml\n    workdir: ws\n")
	for _, tc := range []struct {
		name, leaseTTL string
		args           []string
		want           string
		hint           bool
	}{
		{"missing file", "", []string{"--config", filepath.Join(dir, "nope.yaml")}, "nope.yaml: no such file", false},
		{"missing workdir", "", []string{"--config", noWorkdir}, "noworkdir.yaml:4:14: agents.a.workdir: ", false},
		{"open address", "", []string{"--config", open}, "refusing to listen on 0.0.0.0:7777", false},
		{"lease variable", "soon", []string{"--config", good}, "$TOLLGATE_LEASE_TTL=\"soon\"", false},
		{"no --config", "", nil, "--config is required", true},
		{"unknown flag", "", []string{"--config", good, "--nope"}, "unknown flag: --nope", true},
		{"bad --addr", "", []string{"--config", good, "--addr", "nope"}, `--addr "nope": want HOST:PORT`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := mainEnv(t.Context(), append([]string{"serve", "--state-dir", state}, tc.args...),
				&cliEnv{stdout: &out, stderr: &errb, getenv: testEnv(map[string]string{envLeaseTTL: tc.leaseTTL})})
			lines := strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n")
			if code != exitUsage || !strings.HasPrefix(lines[0], "tollgate: serve: ") || strings.HasPrefix(lines[0], "tollgate: serve: serve") ||
				!strings.Contains(lines[0], tc.want) {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit %d and one %q error line naming %q", code, errb.String(), exitUsage, "tollgate: serve: ", tc.want)
			}
			hint := len(lines) == 2 && lines[1] == "Run 'tollgate serve --help' for usage."
			if hint != tc.hint || (!tc.hint && len(lines) != 1) {
				t.Fatalf("stderr:\n%s\nwant the usage hint: %v", errb.String(), tc.hint)
			}
		})
	}
}

// The admin token replaces a link planted at serve.token instead of writing
// through it, and is the owner's only whatever file was there before.
func TestServeTokenReplacesPlantedLink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(dir, "victim.txt")
	writeTestFile(t, victim, "untouched\n")
	if err := os.Chmod(victim, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(state, adminTokenFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "s.yaml"), "turns:\n  - text: done\n")
	config := filepath.Join(dir, "server.yaml")
	writeTestFile(t, config, fmt.Sprintf("stateDir: %s\nagents:\n  a:\n    model: script:s.yaml\n    workdir: ws\n", state))
	startServe(t, config)
	if b, err := os.ReadFile(victim); err != nil || string(b) != "untouched\n" {
		t.Fatalf("the link's target was written: %q (%v)", b, err)
	}
	fi, err := os.Lstat(filepath.Join(state, adminTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s is %v, want a regular file of mode 0600", adminTokenFile, fi.Mode())
	}
	if b, _ := os.ReadFile(filepath.Join(state, adminTokenFile)); !strings.HasPrefix(string(b), "tg_") {
		t.Fatalf("%s holds %q, want the admin token", adminTokenFile, b)
	}
	if m, _ := filepath.Glob(filepath.Join(state, "."+adminTokenFile+".*")); len(m) != 0 {
		t.Fatalf("temporary files left: %v", m)
	}
}

// A store key file inside an agent's workspace is refused: the agent's
// tools could read it and seal their own decisions; none is made there.
func TestServeRefusesStoreKeyInWorkspace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "ws"), 0o700); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "server.yaml")
	writeTestFile(t, config, "addr: 127.0.0.1:0\nstoreKeyFile: ws/decision.key\nagents:\n  a:\n    model: script:s.yaml\n    workdir: ws\n")
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second) // a server that starts is stopped
	defer cancel()
	code := Main(ctx, []string{"serve", "--config", config, "--state-dir", filepath.Join(dir, "state")}, nil, &out, &errb)
	if code == exitDone || !strings.Contains(errb.String(), "store key file") || !strings.Contains(errb.String(), "inside the workspace of agent a") {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "ws", "decision.key")); err == nil {
		t.Fatal("a key was written inside the workspace")
	}
}
