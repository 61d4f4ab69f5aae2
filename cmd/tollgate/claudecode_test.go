package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// claudeBinary returns the pinned Claude Code CLI that scripts/test.sh
// installs with npm ci in testdata/claudecode.
func claudeBinary(t *testing.T) string {
	return pinnedCLI(t, "the Claude Code CLI", "claudecode", "claude")
}

// pinnedCLI returns the program bin of the npm packages pinned in
// testdata/dir, which scripts/test.sh installs with npm ci; the test fails,
// saying how to install it, when it is missing (with -short, it is skipped,
// as the tests on Node.js's MCP servers are: docs/testing.md).
func pinnedCLI(t *testing.T, what, dir, bin string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", dir, "node_modules", ".bin", bin))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		if testing.Short() {
			t.Skipf("-short: %s is not installed (npm ci --prefix cmd/tollgate/testdata/%s)", what, dir)
		}
		t.Fatalf("%s is not installed (%v): run npm ci --prefix cmd/tollgate/testdata/%s (scripts/test.sh does)", what, err, dir)
	}
	return p
}

// toolUse is one tool call the mock model makes.
type toolUse struct {
	Name  string
	Input string // JSON
}

// mockMessages is a local Anthropic Messages API that scripts the model:
// each agent turn (a request with tools) answers the next tool call of
// script, then, once the script is done, a final text. Requests without
// tools (Claude Code's side requests) get a short text. It keeps the text
// of every tool_result Claude Code sends back, in order.
type mockMessages struct {
	mu      sync.Mutex
	script  []toolUse
	next    int
	results map[string]string // tool_use_id -> the tool_result's text
	srv     *http.Server
	url     string
}

func newMockMessages(t *testing.T, script ...toolUse) *mockMessages {
	t.Helper()
	m := &mockMessages{script: script, results: map[string]string{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m.url = "http://" + ln.Addr().String()
	m.srv = &http.Server{Handler: m}
	go m.srv.Serve(ln)
	t.Cleanup(func() { m.srv.Close() })
	return m
}

// Results returns the tool results Claude Code sent the model, by the ID
// of the call ("toolu_01" for the script's first).
func (m *mockMessages) Results() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.results)
}

func (m *mockMessages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1/messages") {
		http.NotFound(w, r)
		return
	}
	if strings.HasSuffix(r.URL.Path, "/count_tokens") {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"input_tokens": 10}`)
		return
	}
	var req struct {
		Stream   bool              `json:"stream"`
		Tools    []json.RawMessage `json:"tools"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var tu *toolUse
	id := ""
	if len(req.Tools) > 0 {
		m.mu.Lock()
		for _, msg := range req.Messages {
			maps.Copy(m.results, toolResults(msg.Content))
		}
		if m.next < len(m.script) {
			tu = &m.script[m.next]
			m.next++
			id = fmt.Sprintf("toolu_%02d", m.next)
		}
		m.mu.Unlock()
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(message(tu, id))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	bw := bufio.NewWriter(w)
	send := func(ev string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(bw, "event: %s\ndata: %s\n\n", ev, b)
	}
	msg := message(nil, "")
	msg["stop_reason"] = nil
	send("message_start", map[string]any{"type": "message_start", "message": msg})
	stop := "end_turn"
	if tu != nil {
		stop = "tool_use"
		send("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "tool_use", "id": id, "name": tu.Name, "input": map[string]any{}}})
		send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": tu.Input}})
	} else {
		send("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": "done"}})
	}
	send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 5}})
	send("message_stop", map[string]any{"type": "message_stop"})
	bw.Flush()
}

// message is a whole (non-streamed) answer: tu's call, or the text "done".
func message(tu *toolUse, id string) map[string]any {
	content := []any{map[string]any{"type": "text", "text": "done"}}
	stop := "end_turn"
	if tu != nil {
		content = []any{map[string]any{"type": "tool_use", "id": id, "name": tu.Name, "input": json.RawMessage(tu.Input)}}
		stop = "tool_use"
	}
	return map[string]any{
		"id": "msg_" + id, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 5},
	}
}

// toolResults returns the text of each tool_result block of a message's
// content, by its tool_use_id.
func toolResults(content json.RawMessage) map[string]string {
	var blocks []struct {
		Type      string          `json:"type"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
	}
	if json.Unmarshal(content, &blocks) != nil {
		return nil
	}
	out := map[string]string{}
	for _, b := range blocks {
		if b.Type != "tool_result" {
			continue
		}
		var s string
		if json.Unmarshal(b.Content, &s) == nil {
			out[b.ToolUseID] = s
			continue
		}
		var parts []struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(b.Content, &parts)
		var sb strings.Builder
		for _, p := range parts {
			sb.WriteString(p.Text)
		}
		out[b.ToolUseID] = sb.String()
	}
	return out
}

// claudeRun is one `claude -p` session against the mock, in a fresh
// workspace and HOME.
type claudeRun struct {
	Workspace string
	Records   string
	StateDir  string
	Results   map[string]string
	Output    map[string]any
}

// claudeOpts are a test's flags of `tollgate claude-code settings` (beyond
// the policy, records and state directory) and Claude Code's extra
// environment.
type claudeOpts struct {
	Args []string
	Env  []string
}

// runClaude runs Claude Code on a prompt with the hooks that
// `tollgate claude-code settings` prints (o.Args added), the model
// scripted to make the calls of script, and returns what happened.
func runClaude(t *testing.T, policy string, o claudeOpts, prepare func(ws string), script ...toolUse) *claudeRun {
	t.Helper()
	cr, wait := startClaude(t, policy, o, prepare, script...)
	wait()
	return cr
}

// startClaude starts what runClaude runs; wait waits for Claude Code to
// end and fills in the results.
func startClaude(t *testing.T, policy string, o claudeOpts, prepare func(ws string), script ...toolUse) (cr *claudeRun, wait func()) {
	t.Helper()
	claude, tg := claudeBinary(t), tollgateBinary(t)
	dir := t.TempDir()
	cr = &claudeRun{
		Workspace: filepath.Join(dir, "ws"),
		Records:   filepath.Join(dir, "records.jsonl"),
		StateDir:  filepath.Join(dir, "state"),
	}
	home := filepath.Join(dir, "home")
	for _, d := range []string{cr.Workspace, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if prepare != nil {
		prepare(cr.Workspace)
	}
	// WS in a scripted call's input is the workspace.
	for i := range script {
		script[i].Input = strings.ReplaceAll(script[i].Input, "WS", cr.Workspace)
	}
	polFile := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(polFile, []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	// The settings are what `tollgate claude-code settings` prints.
	args := append([]string{"claude-code", "settings", "--policy", polFile, "--records", cr.Records, "--state-dir", cr.StateDir}, o.Args...)
	sb, err := exec.Command(tg, args...).Output()
	if err != nil {
		t.Fatalf("claude-code settings: %v", err)
	}
	setFile := filepath.Join(dir, "settings.json")
	if err := os.WriteFile(setFile, sb, 0o644); err != nil {
		t.Fatal(err)
	}
	mock := newMockMessages(t, script...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	cmd := exec.CommandContext(ctx, claude, "-p", "do the task", "--settings", setFile, "--output-format", "json",
		"--dangerously-skip-permissions", "--model", "claude-sonnet-4-5")
	cmd.Dir = cr.Workspace
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "IS_SANDBOX=1",
		"ANTHROPIC_BASE_URL=" + mock.url, "ANTHROPIC_API_KEY=sk-ant-test",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1",
		"TOLLGATE_STATE_DIR=" + cr.StateDir,
	}
	cmd.Env = append(cmd.Env, o.Env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	return cr, func() {
		t.Helper()
		defer cancel()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("claude: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
		}
		if err := json.Unmarshal(stdout.Bytes(), &cr.Output); err != nil {
			t.Fatalf("claude's output is not JSON: %v\n%s\nstderr: %s", err, stdout.String(), stderr.String())
		}
		cr.Results = mock.Results()
	}
}

// recordLines reads the decision records.
func recordLines(t *testing.T, file string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("record %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

const claudePolicy = `rules:
  - id: no-rm
    tool: bash
    command: {program: rm}
    decision: deny
    reason: deleting files with rm is not allowed here
  - id: no-secrets
    tool: [write, edit]
    args:
      path: {pathPrefix: secret}
    decision: deny
    reason: the secret directory is off limits
`

// Bash /bin/rm and env rm are denied by a command rule; the model reads the
// rule's reason; the file stays; the records name the rule.
func TestClaudeCodeDeniesRm(t *testing.T) {
	t.Parallel()
	r := runClaude(t, claudePolicy, claudeOpts{}, func(ws string) {
		writeFile(t, ws, "keep.txt", "kept")
	},
		toolUse{"Bash", `{"command":"/bin/rm -f keep.txt","description":"remove"}`},
		toolUse{"Bash", `{"command":"env rm -f keep.txt","description":"remove"}`},
	)
	for _, id := range []string{"toolu_01", "toolu_02"} {
		if !strings.Contains(r.Results[id], "denied by rule:no-rm: deleting files with rm is not allowed here") {
			t.Errorf("%s: the model did not read the rule's reason: %q", id, r.Results[id])
		}
	}
	if _, err := os.Stat(filepath.Join(r.Workspace, "keep.txt")); err != nil {
		t.Errorf("keep.txt was removed: %v", err)
	}
	if d, _ := r.Output["permission_denials"].([]any); len(d) != 2 {
		t.Errorf("permission_denials = %v, want the two calls", r.Output["permission_denials"])
	}
	recs := recordLines(t, r.Records)
	if len(recs) != 2 {
		t.Fatalf("records = %v, want 2", recs)
	}
	for _, rec := range recs {
		if rec["outcome"] != "denied" || fmt.Sprint(rec["by"]) != "map[kind:rule name:no-rm]" || rec["ran"] != false || rec["tool"] != "bash" {
			t.Errorf("record %v: want bash denied by rule:no-rm, not run", rec)
		}
	}
}

// A command no rule speaks of runs, and its result is recorded with who
// let it run.
func TestClaudeCodeAllowedCommandRuns(t *testing.T) {
	t.Parallel()
	r := runClaude(t, claudePolicy, claudeOpts{}, nil,
		toolUse{"Bash", `{"command":"echo made > made.txt && echo ok","description":"make"}`},
	)
	if b, err := os.ReadFile(filepath.Join(r.Workspace, "made.txt")); err != nil || string(b) != "made\n" {
		t.Errorf("made.txt = %q, %v: the command did not run", b, err)
	}
	if strings.Contains(r.Results["toolu_01"], "denied") {
		t.Errorf("result %q", r.Results["toolu_01"])
	}
	recs := recordLines(t, r.Records)
	if len(recs) != 1 || recs[0]["outcome"] != "allowed" || recs[0]["ran"] != true || fmt.Sprint(recs[0]["by"]) != "map[kind:runtime name:default]" {
		t.Errorf("records = %v, want one bash call allowed by runtime:default that ran", recs)
	}
}

// A path rule on write governs Write's file_path: the secret file is not
// written, the other one is.
func TestClaudeCodeWritePathRule(t *testing.T) {
	t.Parallel()
	r := runClaude(t, claudePolicy, claudeOpts{}, func(ws string) {
		if err := os.MkdirAll(filepath.Join(ws, "secret"), 0o755); err != nil {
			t.Fatal(err)
		}
	},
		toolUse{"Write", `{"file_path":"WS/secret/key.txt","content":"leak"}`},
		toolUse{"Write", `{"file_path":"WS/notes.txt","content":"hello"}`},
	)
	if _, err := os.Stat(filepath.Join(r.Workspace, "secret", "key.txt")); err == nil {
		t.Error("secret/key.txt was written")
	}
	if !strings.Contains(r.Results["toolu_01"], "denied by rule:no-secrets: the secret directory is off limits") {
		t.Errorf("the model did not read the reason: %q", r.Results["toolu_01"])
	}
	if b, err := os.ReadFile(filepath.Join(r.Workspace, "notes.txt")); err != nil || string(b) != "hello" {
		t.Errorf("notes.txt = %q, %v", b, err)
	}
	recs := recordLines(t, r.Records)
	if len(recs) != 2 {
		t.Fatalf("records = %v", recs)
	}
	if recs[0]["tool"] != "write" || recs[0]["outcome"] != "denied" || fmt.Sprint(recs[0]["by"]) != "map[kind:rule name:no-secrets]" {
		t.Errorf("first record %v", recs[0])
	}
	if recs[1]["tool"] != "write" || recs[1]["outcome"] != "allowed" || recs[1]["ran"] != true {
		t.Errorf("second record %v", recs[1])
	}
}

// BenchmarkClaudeHookCommand is a PreToolUse decision with a local policy
// through the command hook, process start included, as Claude Code runs
// it; it reports the median (p50-ns).
func BenchmarkClaudeHookCommand(b *testing.B) {
	tg := tollgateBinary(b)
	dir := b.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte(claudePolicy), 0o644); err != nil {
		b.Fatal(err)
	}
	ev := []byte(`{"session_id":"s","cwd":"` + dir + `","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"env rm -rf /srv"},"tool_use_id":"t1"}`)
	var times []time.Duration
	for b.Loop() {
		start := time.Now()
		cmd := exec.Command(tg, "claude-code", "hook", "--policy", pol, "--state-dir", filepath.Join(dir, "state"))
		cmd.Stdin = bytes.NewReader(ev)
		out, err := cmd.Output()
		if err != nil || !bytes.Contains(out, []byte(`"deny"`)) {
			b.Fatalf("%v %s", err, out)
		}
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns")
}

// The hook fails closed: input it cannot read, a policy that does not
// load, a hooks sandbox mode it does not know, a session's cwd that holds
// the state directory (its hooks' commands could read its key there), a server it cannot reach and a missing token all deny, with exit
// status 2 and the reason on stderr, so that Claude Code blocks the call
// even without reading the JSON.
func TestClaudeHookFailsClosed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	badPolicy := writeFile(t, dir, "bad.yaml", "rules: [{id: x, decision: maybe}]\n")
	tokenFile := writeFile(t, dir, "token", "tg_x\n")
	hooksFile := writeFile(t, dir, "hooks.yaml", "hooks:\n  - {event: preToolUse, action: {type: command, command: 'true'}}\n")
	ev := `{"session_id":"s","cwd":"` + dir + `","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"t1"}`
	for _, c := range []struct {
		name, stdin, reason string
		args                []string
	}{
		{"bad input", `{"hook_event_name":`, "could not read the hook event", nil},
		{"bad policy", ev, "misconfigured", []string{"--policy", badPolicy}},
		{"bad hooks sandbox", ev, "misconfigured", []string{"--hooks", hooksFile, "--hooks-sandbox", "none"}},
		{"state dir in the workspace", ev, "holds " + filepath.Join(dir, "tgstate"), []string{"--hooks", hooksFile}},
		{"server down", ev, "could not be reached", []string{"--server", "http://127.0.0.1:1", "--token-file", tokenFile}},
		{"no token", ev, "no token for the server", []string{"--server", "http://127.0.0.1:1"}},
	} {
		var out, errb bytes.Buffer
		args := append([]string{"claude-code", "hook", "--state-dir", filepath.Join(dir, "state")}, c.args...)
		code := mainEnv(context.Background(), args, &cliEnv{stdin: strings.NewReader(c.stdin), stdout: &out, stderr: &errb,
			getenv: testEnv(map[string]string{envToken: "", envStateDir: filepath.Join(dir, "tgstate")})})
		var o struct {
			Specific struct{ PermissionDecision, PermissionDecisionReason string } `json:"hookSpecificOutput"`
		}
		_ = json.Unmarshal(out.Bytes(), &o)
		if code != 2 || o.Specific.PermissionDecision != "deny" || !strings.Contains(o.Specific.PermissionDecisionReason, c.reason) || !strings.Contains(errb.String(), c.reason) {
			t.Errorf("%s: exit %d, stdout %s, stderr %s", c.name, code, out.String(), errb.String())
		}
	}
}

// An ask without a server is Claude Code's own prompt; in -p mode nobody
// is there to answer, so the call does not run, and at the session's end
// its record says it was declined.
func TestClaudeCodeAskWithoutServer(t *testing.T) {
	t.Parallel()
	policy := claudePolicy + `  - id: ask-touch
    tool: bash
    command: {program: touch}
    decision: ask
    reason: touching is reviewed
`
	r := runClaude(t, policy, claudeOpts{}, nil, toolUse{"Bash", `{"command":"touch asked.txt","description":"x"}`})
	if _, err := os.Stat(filepath.Join(r.Workspace, "asked.txt")); err == nil {
		t.Error("the asked call ran with nobody to answer")
	}
	if !strings.Contains(r.Results["toolu_01"], "rule:ask-touch") {
		t.Errorf("the model read %q", r.Results["toolu_01"])
	}
	recs := recordLines(t, r.Records)
	if len(recs) != 1 || recs[0]["outcome"] != "declined" || fmt.Sprint(recs[0]["by"]) != "map[kind:runtime name:claude-code]" || recs[0]["ran"] != false {
		t.Errorf("records %v", recs)
	}
}

// The agent's Write and Edit may not change what governs it: a write to
// the hook's policy file or to the workspace's .claude settings is
// denied by rule:governing-files; a write elsewhere is left to the policy.
func TestClaudeHookProtectsGoverningFiles(t *testing.T) {
	dir := t.TempDir()
	pol := writeFile(t, dir, "policy.yaml", "rules:\n  - {id: no-rm, tool: bash, command: {program: rm}, decision: deny, reason: no}\n")
	for _, c := range []struct {
		path, want string
	}{
		{pol, "deny"},
		{filepath.Join(dir, ".claude", "settings.json"), "deny"},
		{filepath.Join(dir, "notes.txt"), ""},
	} {
		ev, _ := json.Marshal(map[string]any{"session_id": "s", "cwd": dir, "hook_event_name": "PreToolUse", "tool_name": "Write",
			"tool_input": map[string]string{"file_path": c.path, "content": "rules: []"}, "tool_use_id": "t1"})
		var out, errb bytes.Buffer
		code := Main(context.Background(), []string{"claude-code", "hook", "--policy", pol, "--state-dir", filepath.Join(t.TempDir(), "state")}, bytes.NewReader(ev), &out, &errb)
		var o struct {
			Specific struct{ PermissionDecision, PermissionDecisionReason string } `json:"hookSpecificOutput"`
		}
		_ = json.Unmarshal(out.Bytes(), &o)
		if o.Specific.PermissionDecision != c.want || (c.want == "deny" && !strings.Contains(o.Specific.PermissionDecisionReason, "governing-files")) {
			t.Errorf("write %s: exit %d, %+v, stderr %s", c.path, code, o.Specific, errb.String())
		}
	}
}
