package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/claudegate"
	"github.com/tollgate-dev/tollgate/internal/serveconfig"
	"github.com/tollgate-dev/tollgate/server"
)

// hookSecret is a provider key in the process's environment that no hook
// command may see.
const hookSecret = "sk-hook-must-not-see-this"

// confinedHookCommand is a preToolUse command that writes hook-in.txt in
// its working directory, then tries outside/hook-out.txt, a file in the
// state directory state, and the files named in governing, and keeps its
// environment in hook-env.txt.
func confinedHookCommand(outside, state string, governing ...string) string {
	cmd := "echo in > hook-in.txt; echo out > " + outside + "/hook-out.txt; echo x > " + state + "/hook-state.txt"
	for _, g := range governing {
		cmd += "; echo '#x' >> " + g
	}
	cmd += "; env > hook-env.txt"
	return "hooks:\n  - event: preToolUse\n    matcher: \"*\"\n    action:\n      type: command\n      command: '" + strings.ReplaceAll(cmd, "'", "''") + "'\n"
}

// checkConfinedHook checks what confinedHookCommand did, run in ws: it
// wrote in ws, and the kernel refused the rest; its environment holds no
// provider key. before are the governing files' contents before.
func checkConfinedHook(t *testing.T, ws, outside, state string, before map[string]string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(ws, "hook-in.txt")); err != nil {
		t.Fatalf("the hook did not write in its workspace: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "hook-out.txt")); err == nil {
		t.Error("the hook wrote outside its workspace")
	}
	if _, err := os.Stat(filepath.Join(state, "hook-state.txt")); err == nil {
		t.Error("the hook wrote in the state directory")
	}
	for p, was := range before {
		if now, _ := os.ReadFile(p); string(now) != was {
			t.Errorf("the hook wrote %s:\n%s", p, now)
		}
	}
	env, err := os.ReadFile(filepath.Join(ws, "hook-env.txt"))
	if err != nil || strings.Contains(string(env), hookSecret) || !strings.Contains(string(env), "TOLLGATE_TOOL=read") {
		t.Errorf("the hook's environment (%v):\n%s\nwant TOLLGATE_TOOL and no provider key", err, env)
	}
}

// readFiles maps each of paths to its content.
func readFiles(t *testing.T, paths ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[p] = string(b)
	}
	return out
}

// The --hooks files' commands of `tollgate claude-code hook` and `tollgate
// codex hook` run as a run's: in the hooks sandbox on the session's cwd,
// writing there and nowhere else (not the hook's state directory, policy
// or hooks file, though they lie in the workspace), with the environment
// scrubbed.
func TestClaudeHookCommandsConfinedAsInARun(t *testing.T) {
	needSandbox(t)
	t.Setenv("OPENAI_API_KEY", hookSecret)
	for _, agent := range []string{"claude-code", "codex"} {
		t.Run(agent, func(t *testing.T) {
			dir := t.TempDir()
			ws, outside := filepath.Join(dir, "ws"), filepath.Join(dir, "outside")
			state := filepath.Join(ws, "state")
			for _, d := range []string{ws, outside, state} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			writeFile(t, ws, "a.txt", "hello\n")
			pol := writeFile(t, ws, "policy.yaml", "rules:\n  - {id: no-rm, tool: bash, command: {program: rm}, decision: deny, reason: no}\n")
			hooksFile := writeFile(t, ws, "hooks.yaml", confinedHookCommand(outside, "state", "policy.yaml", "hooks.yaml"))
			before := readFiles(t, pol, hooksFile)
			ev, _ := json.Marshal(map[string]any{"session_id": "s", "cwd": ws, "hook_event_name": "PreToolUse", "tool_name": "Read",
				"tool_input": map[string]string{"file_path": filepath.Join(ws, "a.txt")}, "tool_use_id": "t1"})
			var out, errb bytes.Buffer
			code := Main(context.Background(), []string{agent, "hook", "--policy", pol, "--hooks", hooksFile, "--state-dir", state}, bytes.NewReader(ev), &out, &errb)
			if code != 0 || strings.Contains(out.String(), "deny") {
				t.Fatalf("exit %d, stdout %s, stderr %s", code, out.String(), errb.String())
			}
			checkConfinedHook(t, ws, outside, state, before)
		})
	}
}

// The claudeCode: and codex: sections' hooks of `tollgate serve` run their
// commands as a run's: in the hooks sandbox whose workspace is the
// directory of server.yaml, never writing server.yaml, the tokens file or
// the hooks file there, nor the state directory or anything outside it,
// with the environment scrubbed.
func TestServeClaudeCodeHookCommandsConfined(t *testing.T) {
	needSandbox(t)
	t.Setenv("OPENAI_API_KEY", hookSecret)
	for _, section := range []string{"claudeCode", "codex"} {
		t.Run(section, func(t *testing.T) {
			dir, outside, state := t.TempDir(), t.TempDir(), t.TempDir()
			tok := hookServerFiles(t, dir, confinedHookCommand(outside, state, "server.yaml", "tokens.yaml", "hooks.yaml"))
			writeTestFile(t, filepath.Join(dir, "server.yaml"), "tokens: tokens.yaml\nstateDir: "+state+"\n"+section+":\n  hooks: [hooks.yaml]\n")
			p := startServe(t, filepath.Join(dir, "server.yaml"))
			before := readFiles(t, filepath.Join(dir, "server.yaml"), filepath.Join(dir, "tokens.yaml"), filepath.Join(dir, "hooks.yaml"))
			route := map[string]string{"claudeCode": "/v1/hooks/claude-code", "codex": "/v1/hooks/codex"}[section]
			ev := map[string]any{"session_id": "s", "cwd": "/w", "hook_event_name": "PreToolUse", "tool_name": "Read",
				"tool_input": map[string]string{"file_path": "/w/a.txt"}, "tool_use_id": "t1"}
			var ans claudegate.Output
			if code := p.do(t, "POST", route, tok, ev, &ans); code != http.StatusOK {
				t.Fatalf("%s: %d", route, code)
			}
			if s := ans.Specific; s != nil && s.PermissionDecision == "deny" {
				t.Fatalf("denied: %+v\n%s", s, p.logs)
			}
			checkConfinedHook(t, dir, outside, state, before)
		})
	}
}

// hookServerFiles writes tokens.yaml (an agent's token, returned) and
// hooks.yaml (hooks) in dir.
func hookServerFiles(t *testing.T, dir, hooks string) string {
	t.Helper()
	tok, hash, err := serveconfig.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "tokens.yaml"), fmt.Sprintf("tokens:\n  - name: ci-bot\n    roles: [%s]\n    sha256: %s\n", server.RoleAgent, hash))
	writeTestFile(t, filepath.Join(dir, "hooks.yaml"), hooks)
	return tok
}

// A workspace that holds the server's state directory would let the
// hooks' commands read its store and decision key (the sandbox hides them
// only outside the tree a command writes): serve does not start with the
// hooks of claudeCode: or gateway: there, and names the workdir: that
// moves them elsewhere; with it, it starts.
func TestServeHooksRefuseTheStateDir(t *testing.T) {
	for _, section := range []string{"claudeCode", "gateway"} {
		dir := t.TempDir()
		hookServerFiles(t, dir, "hooks:\n  - {event: preToolUse, action: {type: command, command: 'true'}}\n")
		writeTestFile(t, filepath.Join(dir, "mcp.json"), `{"mcpServers": {"x": {"command": "true", "sandbox": "off"}}}`)
		body := "tokens: tokens.yaml\nstateDir: state\n" + section + ":\n  hooks: [hooks.yaml]\n"
		if section == "gateway" {
			body += "  mcp: [mcp.json]\n"
		}
		writeTestFile(t, filepath.Join(dir, "server.yaml"), body)
		out, err := exec.Command(tollgateBinary(t), "serve", "--config", filepath.Join(dir, "server.yaml"), "--addr", "127.0.0.1:0").CombinedOutput()
		if err == nil || !strings.Contains(string(out), section+".workdir") || !strings.Contains(string(out), filepath.Join(dir, "state")) {
			t.Fatalf("%s: serve: %v\n%s", section, err, out)
		}
	}
	dir := t.TempDir()
	hookServerFiles(t, dir, "hooks:\n  - {event: preToolUse, action: {type: command, command: 'true'}}\n")
	if err := os.Mkdir(filepath.Join(dir, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "server.yaml"), "tokens: tokens.yaml\nstateDir: state\nclaudeCode:\n  hooks: [hooks.yaml]\n  workdir: hooks\n")
	needSandbox(t)
	startServe(t, filepath.Join(dir, "server.yaml"))
}

// Under Claude Code itself, the --hooks files' commands of the hook it
// runs are confined as in a run: an allowed Bash call runs, its
// preToolUse command writes in the session's cwd and is refused outside
// it, and it never sees Claude Code's API key.
func TestClaudeCodeHookCommandsConfined(t *testing.T) {
	needSandbox(t)
	outside := t.TempDir()
	hooksFile := writeFile(t, t.TempDir(), "hooks.yaml", confinedHookCommand(outside, outside))
	r := runClaude(t, claudePolicy, claudeOpts{Args: []string{"--hooks", hooksFile}}, nil,
		toolUse{"Bash", `{"command":"echo ran > ran.txt","description":"x"}`})
	if _, err := os.Stat(filepath.Join(r.Workspace, "ran.txt")); err != nil {
		t.Fatalf("the allowed call did not run: %v; the model read %q", err, r.Results["toolu_01"])
	}
	if _, err := os.Stat(filepath.Join(r.Workspace, "hook-in.txt")); err != nil {
		t.Fatalf("the hook did not write in the session's cwd: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "hook-out.txt")); err == nil {
		t.Error("the hook wrote outside the session's cwd")
	}
	if env, err := os.ReadFile(filepath.Join(r.Workspace, "hook-env.txt")); err != nil || strings.Contains(string(env), "sk-ant-test") || !strings.Contains(string(env), "TOLLGATE_TOOL=bash") {
		t.Errorf("the hook's environment (%v):\n%s\nwant TOLLGATE_TOOL and no API key", err, env)
	}
}
