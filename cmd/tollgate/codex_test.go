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

// codexBinary returns the pinned Codex CLI that scripts/test.sh installs
// with npm ci in testdata/codex.
func codexBinary(t *testing.T) string { return pinnedCLI(t, "the Codex CLI", "codex", "codex") }

// mockResponses is a local OpenAI Responses API that scripts the model:
// each turn (POST /v1/responses, streamed) answers the next shell command
// of script as an exec_command function call, then, once the script is
// done, the text "done". It keeps the output of every function call Codex
// sends back, by call ID ("call_01" for the script's first).
type mockResponses struct {
	mu      sync.Mutex
	script  []string
	next    int
	outputs map[string]string
	url     string
}

func newMockResponses(t *testing.T, script ...string) *mockResponses {
	t.Helper()
	m := &mockResponses{script: script, outputs: map[string]string{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m.url = "http://" + ln.Addr().String() + "/v1"
	srv := &http.Server{Handler: m}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return m
}

// Outputs returns the function call outputs Codex sent the model.
func (m *mockResponses) Outputs() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.outputs)
}

func (m *mockResponses) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		http.NotFound(w, r)
		return
	}
	var req struct {
		Input []struct {
			Type   string          `json:"type"`
			CallID string          `json:"call_id"`
			Output json.RawMessage `json:"output"`
		} `json:"input"`
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	for _, it := range req.Input {
		if it.Type == "function_call_output" {
			m.outputs[it.CallID] = outputText(it.Output)
		}
	}
	var item map[string]any
	if m.next < len(m.script) {
		cmd := m.script[m.next]
		m.next++
		args, _ := json.Marshal(map[string]string{"cmd": cmd})
		item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%02d", m.next), "call_id": fmt.Sprintf("call_%02d", m.next), "name": "exec_command", "arguments": string(args)}
	} else {
		item = map[string]any{"type": "message", "id": "msg_1", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": "done"}}}
	}
	id := fmt.Sprintf("resp_%d", m.next)
	m.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	bw := bufio.NewWriter(w)
	send := func(data map[string]any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(bw, "event: %s\ndata: %s\n\n", data["type"], b)
	}
	send(map[string]any{"type": "response.created", "response": map[string]any{"id": id}})
	send(map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	send(map[string]any{"type": "response.completed", "response": map[string]any{"id": id, "usage": map[string]any{
		"input_tokens": 10, "input_tokens_details": nil, "output_tokens": 5, "output_tokens_details": nil, "total_tokens": 15}}})
	bw.Flush()
}

// outputText is a function call output's text: a string, or the text
// parts of a list.
func outputText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var sb strings.Builder
		for _, p := range parts {
			sb.WriteString(p.Text)
		}
		return sb.String()
	}
	return string(raw)
}

// codexRun is one `codex exec` session against the mock, in a fresh
// workspace and CODEX_HOME.
type codexRun struct {
	Workspace string
	Records   string
	StateDir  string
	Home      string
	Outputs   map[string]string
	Stdout    string
}

// codexOpts are a test's flags of `tollgate codex settings` (beyond the
// policy, records and state directory), and whether Codex trusts the hook
// through the trust entry settings prints (else exec's
// --dangerously-bypass-hook-trust).
type codexOpts struct {
	Args  []string
	Trust bool
	// Only, if set, keeps these events' hooks alone.
	Only []string
}

const codexConfig = `model_provider = "mock"
model = "gpt-5"
check_for_update_on_startup = false

[model_providers.mock]
name = "mock"
base_url = "%s"
env_key = "MOCK_API_KEY"
wire_api = "responses"

[analytics]
enabled = false

[features]
plugins = false
apps = false
remote_plugin = false
`

// runCodex runs codex exec with the hooks `tollgate codex settings`
// prints, the model scripted to run the commands of script.
func runCodex(t *testing.T, policy string, o codexOpts, prepare func(ws string), script ...string) *codexRun {
	t.Helper()
	codex, tg := codexBinary(t), tollgateBinary(t)
	dir := t.TempDir()
	cr := &codexRun{
		Workspace: filepath.Join(dir, "ws"),
		Records:   filepath.Join(dir, "records.jsonl"),
		StateDir:  filepath.Join(dir, "state"),
		Home:      filepath.Join(dir, "codex-home"),
	}
	for _, d := range []string{cr.Workspace, cr.Home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if prepare != nil {
		prepare(cr.Workspace)
	}
	polFile := writeFile(t, dir, "policy.yaml", policy)
	mock := newMockResponses(t, script...)
	config := fmt.Sprintf(codexConfig, mock.url)
	args := append([]string{"codex", "settings", "--policy", polFile, "--records", cr.Records, "--state-dir", cr.StateDir}, o.Args...)
	hooks, err := exec.Command(tg, args...).Output()
	if err != nil {
		t.Fatalf("codex settings: %v", err)
	}
	if o.Only != nil {
		var h struct{ Hooks map[string]json.RawMessage }
		if err := json.Unmarshal(hooks, &h); err != nil {
			t.Fatal(err)
		}
		for ev := range h.Hooks {
			if !slices.Contains(o.Only, ev) {
				delete(h.Hooks, ev)
			}
		}
		hooks, _ = json.Marshal(map[string]any{"hooks": h.Hooks})
	}
	hooksFile := writeFile(t, cr.Home, "hooks.json", string(hooks))
	if o.Trust {
		trust, err := exec.Command(tg, append(args, "--trust", hooksFile)...).Output()
		if err != nil {
			t.Fatalf("codex settings --trust: %v", err)
		}
		config += "\n" + string(trust)
	}
	writeFile(t, cr.Home, "config.toml", config)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	execArgs := []string{"exec", "--skip-git-repo-check", "--json", "-s", "danger-full-access"}
	if !o.Trust {
		execArgs = append(execArgs, "--dangerously-bypass-hook-trust")
	}
	cmd := exec.CommandContext(ctx, codex, append(execArgs, "do the task")...)
	cmd.Dir = cr.Workspace
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "CODEX_HOME=" + cr.Home, "MOCK_API_KEY=sk-test", "TOLLGATE_STATE_DIR=" + cr.StateDir}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr, cmd.Stdin = &stdout, &stderr, nil
	if err := cmd.Run(); err != nil {
		t.Fatalf("codex: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	cr.Outputs, cr.Stdout = mock.Outputs(), stdout.String()
	if testing.Verbose() {
		t.Logf("codex stdout: %s\nstderr: %s", stdout.String(), stderr.String())
	}
	return cr
}

const codexPolicy = `rules:
  - id: no-rm
    tool: bash
    command: {program: rm}
    decision: deny
    reason: deleting files with rm is not allowed here
  - id: ask-touch
    tool: bash
    command: {program: touch}
    decision: ask
    reason: touching is reviewed
`

// rm in several spellings is denied by a command rule: Codex does not run
// it, the model reads the rule's reason, the records name the rule.
func TestCodexDeniesRm(t *testing.T) {
	t.Parallel()
	r := runCodex(t, codexPolicy, codexOpts{}, func(ws string) {
		writeFile(t, ws, "keep.txt", "kept")
	}, "rm -f keep.txt", "/bin/rm -f keep.txt", "env rm -f keep.txt", "(cd . && rm -f keep.txt)")
	for i := 1; i <= 4; i++ {
		id := fmt.Sprintf("call_%02d", i)
		if !strings.Contains(r.Outputs[id], "denied by rule:no-rm: deleting files with rm is not allowed here") {
			t.Errorf("%s: the model did not read the rule's reason: %q", id, r.Outputs[id])
		}
	}
	if _, err := os.Stat(filepath.Join(r.Workspace, "keep.txt")); err != nil {
		t.Errorf("keep.txt was removed: %v", err)
	}
	recs := recordLines(t, r.Records)
	if len(recs) != 4 {
		t.Fatalf("records = %v, want 4", recs)
	}
	for _, rec := range recs {
		if rec["outcome"] != "denied" || fmt.Sprint(rec["by"]) != "map[kind:rule name:no-rm]" || rec["ran"] != false || rec["tool"] != "bash" {
			t.Errorf("record %v: want bash denied by rule:no-rm, not run", rec)
		}
	}
}

// A command no rule speaks of runs, and its record says who let it run
// and holds its result.
func TestCodexAllowedCommandRuns(t *testing.T) {
	t.Parallel()
	r := runCodex(t, codexPolicy, codexOpts{}, nil, "echo made > made.txt && echo ok")
	if b, err := os.ReadFile(filepath.Join(r.Workspace, "made.txt")); err != nil || string(b) != "made\n" {
		t.Errorf("made.txt = %q, %v: the command did not run", b, err)
	}
	if !strings.Contains(r.Outputs["call_01"], "ok") {
		t.Errorf("the model read %q", r.Outputs["call_01"])
	}
	recs := recordLines(t, r.Records)
	if len(recs) != 1 || recs[0]["outcome"] != "allowed" || recs[0]["ran"] != true || fmt.Sprint(recs[0]["by"]) != "map[kind:runtime name:default]" || recs[0]["tool"] != "bash" {
		t.Errorf("records = %v, want one bash call allowed by runtime:default that ran", recs)
	}
}

// Codex cannot ask: without a server, a call the policy asks about is
// denied with a reason that says a person must approve it, and recorded
// as declined by runtime:codex.
func TestCodexAskWithoutServerDenies(t *testing.T) {
	t.Parallel()
	r := runCodex(t, codexPolicy, codexOpts{}, nil, "touch asked.txt")
	if _, err := os.Stat(filepath.Join(r.Workspace, "asked.txt")); err == nil {
		t.Error("the asked call ran with nobody to answer")
	}
	if out := r.Outputs["call_01"]; !strings.Contains(out, "a person must approve this call") || !strings.Contains(out, "rule:ask-touch") {
		t.Errorf("the model read %q", out)
	}
	recs := recordLines(t, r.Records)
	if len(recs) != 1 || recs[0]["outcome"] != "declined" || fmt.Sprint(recs[0]["by"]) != "map[kind:runtime name:codex]" || recs[0]["ran"] != false {
		t.Errorf("records %v", recs)
	}
}

// With the trust entries `tollgate codex settings --trust` prints in
// config.toml, Codex runs the hook without --dangerously-bypass-hook-trust:
// rm is denied.
func TestCodexTrustedHooks(t *testing.T) {
	t.Parallel()
	r := runCodex(t, codexPolicy, codexOpts{Trust: true}, func(ws string) {
		writeFile(t, ws, "keep.txt", "kept")
	}, "rm -f keep.txt")
	if _, err := os.Stat(filepath.Join(r.Workspace, "keep.txt")); err != nil {
		t.Errorf("keep.txt was removed: Codex did not run the hook (%v)", err)
	}
	if !strings.Contains(r.Outputs["call_01"], "denied by rule:no-rm") {
		t.Errorf("the model read %q", r.Outputs["call_01"])
	}
}

// The hook never fails open: input it cannot read, a policy that does not
// load, a server it cannot reach and a missing token all deny, with exit
// status 2 and the reason on stderr, each of which Codex reads as a block.
func TestCodexHookFailsClosed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	badPolicy := writeFile(t, dir, "bad.yaml", "rules: [{id: x, decision: maybe}]\n")
	tokenFile := writeFile(t, dir, "token", "tg_x\n")
	ev := `{"session_id":"s","cwd":"` + dir + `","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"c1","turn_id":"t1"}`
	for _, c := range []struct {
		name, stdin, reason string
		args                []string
	}{
		{"bad input", `{"hook_event_name":`, "could not read the hook event", nil},
		{"bad policy", ev, "misconfigured", []string{"--policy", badPolicy}},
		{"server down", ev, "could not be reached", []string{"--server", "http://127.0.0.1:1", "--token-file", tokenFile}},
		{"no token", ev, "no token for the server", []string{"--server", "http://127.0.0.1:1"}},
	} {
		var out, errb bytes.Buffer
		args := append([]string{"codex", "hook", "--state-dir", filepath.Join(dir, "state")}, c.args...)
		code := mainEnv(context.Background(), args, &cliEnv{stdin: strings.NewReader(c.stdin), stdout: &out, stderr: &errb,
			getenv: testEnv(map[string]string{envToken: ""})})
		var o struct {
			Specific struct{ PermissionDecision, PermissionDecisionReason string } `json:"hookSpecificOutput"`
		}
		_ = json.Unmarshal(out.Bytes(), &o)
		if code != 2 || o.Specific.PermissionDecision != "deny" || !strings.Contains(o.Specific.PermissionDecisionReason, c.reason) || !strings.Contains(errb.String(), c.reason) {
			t.Errorf("%s: exit %d, stdout %s, stderr %s", c.name, code, out.String(), errb.String())
		}
	}
}
