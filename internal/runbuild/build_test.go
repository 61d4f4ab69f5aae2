package runbuild_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/runbuild"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/tool"
)

func write(t *testing.T, path, body string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// calls is a model that asks for calls in its first turn, then ends.
func calls(fc ...model.FuncCall) model.Model {
	return model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
		if req.Messages[len(req.Messages)-1].Role == model.RoleTool {
			return model.Reply{Content: "finished"}, nil
		}
		return model.Reply{ToolCalls: fc}, nil
	})
}

func withModel(m model.Model, o *runbuild.Options) *runbuild.Builder {
	o.OpenModel = func(ctx context.Context, ref runs.ModelRef) (model.Model, string, error) { return m, ref.Name, nil }
	return runbuild.New(o)
}

func config(t *testing.T, dir string, c runs.RunConfig) runs.RunConfig {
	t.Helper()
	c.Model = runs.ModelRef{Provider: "func", Name: "test"}
	if c.Workdir == "" {
		c.Workdir = "ws"
	}
	if c.Sandbox == nil {
		c.Sandbox = &runs.SandboxConfig{Bash: "off"}
	}
	cfg, err := c.Resolve(dir)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func start(t *testing.T, b runs.Builder, cfg runs.RunConfig) *agent.Result {
	t.Helper()
	h, err := runs.New(memory.New(nil), b, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.Start(t.Context(), runs.StartRequest{Config: cfg, Prompt: "go"})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A policy's path rule denies a file however the model spells its path
// (relative, with ./, absolute), and through a link in the workspace that
// leads to it: the builder wires the policy to the workspace and the file
// tools' CheckFile to the run's authorizers.
func TestPolicyPathRulesHoldForEverySpelling(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	write(t, filepath.Join(ws, "secret", "key.txt"), "k3y\n")
	write(t, filepath.Join(ws, "public", "key.txt"), "open\n")
	if err := os.Symlink(filepath.Join(ws, "secret", "key.txt"), filepath.Join(ws, "hl.txt")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "policy.yaml"), `rules:
  - id: no-secret
    tool: [read, grep, glob]
    args: {path: {pathPrefix: secret}}
    decision: deny
    reason: secret is off limits
`)
	paths := []string{"hl.txt", "secret/key.txt", "./secret/key.txt", filepath.Join(ws, "secret", "key.txt"), "public/key.txt"}
	var fc []model.FuncCall
	for _, p := range paths {
		fc = append(fc, model.FuncCall{Name: "read", Arguments: map[string]string{"path": p}})
	}
	res := start(t, withModel(calls(fc...), &runbuild.Options{}), config(t, dir, runs.RunConfig{AgentConfig: runs.AgentConfig{PolicyFile: "policy.yaml"}}))
	if len(res.ToolCalls) != len(paths) {
		t.Fatalf("%d tool calls, want %d", len(res.ToolCalls), len(paths))
	}
	for i, tc := range res.ToolCalls {
		leaked := strings.Contains(tc.Output, "k3y")
		if i < 4 && leaked {
			t.Errorf("read %s: %s by %s, output %q: the secret leaked", paths[i], tc.Decision.Outcome, tc.Decision.By, tc.Output)
		}
		if i == 4 && !strings.Contains(tc.Output, "open") {
			t.Errorf("read %s: %s, output %q; want it read", paths[i], tc.Decision.Outcome, tc.Output)
		}
	}
}

// The deny globs, the hooks file and the records file of a configuration
// all take effect; the policy, hooks and records files cannot be written by
// the file tools even inside the workspace.
func TestBuildAppliesDenyHooksRecordsAndProtects(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	hooksFile := write(t, filepath.Join(ws, "hooks.yaml"), `hooks:
  - event: preToolUse
    matcher: "*"
    action: {type: log, message: "hook saw ${tool}"}
`)
	records := filepath.Join(ws, "records.jsonl")
	var ran sync.Map
	note := tool.Must("save_note", "Save a note.", func(ctx context.Context, in struct{}) (string, error) {
		ran.Store("save_note", true)
		return "saved", nil
	}, nil)
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))
	m := calls(
		model.FuncCall{Name: "save_note", Arguments: map[string]any{}},
		model.FuncCall{Name: "write", Arguments: map[string]string{"path": "hooks.yaml", "content": "hooks: []\n"}},
		model.FuncCall{Name: "write", Arguments: map[string]string{"path": "records.jsonl", "content": "forged\n"}},
	)
	b := withModel(m, &runbuild.Options{Tools: []tool.Tool{note}, Logger: logger})
	res := start(t, b, config(t, dir, runs.RunConfig{AgentConfig: runs.AgentConfig{Deny: []string{"SAVE_*"}, HooksFiles: []string{hooksFile}, RecordsFile: records}}))
	if _, ok := ran.Load("save_note"); ok {
		t.Error("save_note ran although deny lists SAVE_*")
	}
	if d := res.ToolCalls[0].Decision; d.Outcome != gate.OutcomeDenied || d.By.String() != "hook:deny" {
		t.Errorf("save_note: %s by %s, want denied by hook:deny", d.Outcome, d.By)
	}
	for _, tc := range res.ToolCalls[1:] {
		if !tc.IsError {
			t.Errorf("write %s succeeded: %q; a governing file must be protected", tc.Args, tc.Output)
		}
	}
	if b, _ := os.ReadFile(hooksFile); !strings.Contains(string(b), "hook saw") {
		t.Errorf("the hooks file was changed: %q", b)
	}
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	if !strings.Contains(out, "hook saw write") {
		t.Errorf("the hooks file's log action did not run; logs:\n%s", out)
	}
	rec, err := os.ReadFile(records)
	if err != nil || strings.Count(string(rec), "\n") != 3 || strings.Contains(string(rec), "forged") {
		t.Errorf("records: %q %v; want three records and nothing forged", rec, err)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// A field whose value does not load fails the build with a FieldError
// naming it, and nothing runs.
func TestBuildFieldErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "nohooks.yaml"), "hooks: []\n")
	write(t, filepath.Join(dir, "skipped.yaml"), "hooks:\n  - event: preToolUze\n    action: {type: log, message: x}\n  - event: onError\n    action: {type: comand, command: x}\n")
	write(t, filepath.Join(dir, "skipped.json"), `{"hooks": {"PostToolUse": [{"matcher": "(", "hooks": [{"type": "command", "command": "true"}]}]}}`)
	write(t, filepath.Join(dir, "gate.json"), `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "comand", "command": "true"}]}]}}`)
	write(t, filepath.Join(dir, "mcp.json"), `{"mcpServers": {"fs": {"comand": "mcp-server"}}}`)
	for _, tc := range []struct {
		cfg   runs.RunConfig
		field string
		want  string
	}{
		{runs.RunConfig{AgentConfig: runs.AgentConfig{PolicyFile: "missing.yaml"}}, runcore.FieldPolicyFile, "missing.yaml"},
		{runs.RunConfig{AgentConfig: runs.AgentConfig{Autonomy: "reckless"}}, runcore.FieldAutonomy, "reckless"},
		{runs.RunConfig{AgentConfig: runs.AgentConfig{Deny: []string{"a|b"}}}, runcore.FieldDeny, "a|b"},
		{runs.RunConfig{AgentConfig: runs.AgentConfig{HooksFiles: []string{"nohooks.yaml"}}}, runcore.FieldHooksFiles, "has no hooks"},
		// A file whose every entry was skipped says so, not that it has none.
		{runs.RunConfig{AgentConfig: runs.AgentConfig{HooksFiles: []string{"skipped.yaml"}}}, runcore.FieldHooksFiles, "no hook loaded: every entry (2) was skipped"},
		{runs.RunConfig{AgentConfig: runs.AgentConfig{Claude: &runs.ClaudeConfig{Files: []string{"skipped.json"}}}}, "claude.files", "loaded: every entry (1) was skipped"},
		// Claude Code settings for hooks that are not there do nothing: a
		// mistake, said even when the value itself is fine.
		{runs.RunConfig{AgentConfig: runs.AgentConfig{Claude: &runs.ClaudeConfig{FailModes: []string{"PreToolUse=maybe"}}}}, "claude.failModes", "maybe"},
		{runs.RunConfig{AgentConfig: runs.AgentConfig{Claude: &runs.ClaudeConfig{FailModes: []string{"PreToolUse=open"}}}}, "claude.failModes", "no Claude Code settings file is given"},
		{runs.RunConfig{AgentConfig: runs.AgentConfig{Claude: &runs.ClaudeConfig{Timeout: runs.Duration(5 * time.Second)}}}, "claude.timeout", "no Claude Code settings file is given"},
		// A skipped gate is named as such, even when nothing else loaded.
		{runs.RunConfig{AgentConfig: runs.AgentConfig{Claude: &runs.ClaudeConfig{Files: []string{"gate.json"}}}}, "claude.files", "a PreToolUse entry was skipped"},
		{runs.RunConfig{AgentConfig: runs.AgentConfig{MCPFiles: []string{"mcp.json"}}}, runcore.FieldMCPFiles, "comand"},
		{runs.RunConfig{AgentConfig: runs.AgentConfig{Sandbox: &runs.SandboxConfig{Bash: "loose"}}}, "sandbox.bash", "loose"},
		{runs.RunConfig{AgentConfig: runs.AgentConfig{Claude: &runs.ClaudeConfig{Files: []string{"missing.json"}}}}, "claude.files", "missing.json"},
	} {
		_, err := runbuild.New(&runbuild.Options{OpenModel: func(ctx context.Context, ref runs.ModelRef) (model.Model, string, error) {
			return calls(), "x", nil
		}}).Build(t.Context(), config(t, dir, tc.cfg))
		fe, ok := errors.AsType[*runs.FieldError](err)
		if !ok || fe.Field != tc.field || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want a FieldError on %s mentioning %q", tc.cfg, err, tc.field, tc.want)
		}
	}
}

// OpenModel opens a script model, and names the field of a bad reference;
// no error holds the key.
func TestOpenModel(t *testing.T) {
	script := write(t, filepath.Join(t.TempDir(), "s.yaml"), "turns:\n  - text: hi\n")
	if _, name, err := runbuild.OpenModel(runs.ModelRef{Provider: "script", Name: script}, nil); err != nil || name != script {
		t.Fatalf("script model: %q %v", name, err)
	}
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("TOLLGATE_TEST_UNSET", "")
	for _, tc := range []struct {
		ref   runs.ModelRef
		field string
	}{
		{runs.ModelRef{Provider: "gemini", Name: "pro"}, "model"},
		{runs.ModelRef{Provider: "openai", Name: "gpt-4.1"}, "model"},
		{runs.ModelRef{Provider: "openai", Name: "m", BaseURL: "http://127.0.0.1:1/v1", APIKeyEnv: "TOLLGATE_TEST_UNSET"}, "model.apiKeyEnv"},
		{runs.ModelRef{Provider: "openai", Name: "m", BaseURL: "ftp://x/v1"}, "model.baseUrl"},
	} {
		_, _, err := runbuild.OpenModel(tc.ref, &runbuild.ModelOptions{APIKey: map[bool]string{true: "sk-secret-key"}[tc.field == "model.baseUrl"]})
		fe, ok := errors.AsType[*runs.FieldError](err)
		if !ok || fe.Field != tc.field || strings.Contains(err.Error(), "sk-secret-key") {
			t.Errorf("%+v: %v, want a FieldError on %s without the key", tc.ref, err, tc.field)
		}
	}
}

// A missing key is a KeyError inside the FieldError, naming the variable
// that was to hold it and the server's host, so that a host can say how its
// users give a key; its text is the same as before for hosts that only
// print it.
func TestOpenModelKeyError(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENROUTER_API_KEY", "")
	t.Setenv("TOLLGATE_TEST_UNSET", "")
	for _, tc := range []struct {
		ref   runs.ModelRef
		field string
		want  runbuild.KeyError
		text  string
	}{
		{runs.ModelRef{Provider: "openai", Name: "gpt-4.1"}, "model",
			runbuild.KeyError{Host: "api.openai.com", Variable: "OPENAI_API_KEY"}, "model: no API key for api.openai.com: set OPENAI_API_KEY"},
		{runs.ModelRef{Provider: "openai", Name: "m", BaseURL: "https://openrouter.ai/api/v1"}, "model",
			runbuild.KeyError{Host: "openrouter.ai", Variable: "OPENROUTER_API_KEY"}, "model: no API key for openrouter.ai: set OPENROUTER_API_KEY"},
		{runs.ModelRef{Provider: "anthropic", Name: "m", BaseURL: "http://127.0.0.1:1", APIKeyEnv: "TOLLGATE_TEST_UNSET"}, "model.apiKeyEnv",
			runbuild.KeyError{Host: "127.0.0.1", Variable: "TOLLGATE_TEST_UNSET", Named: true}, "model.apiKeyEnv: TOLLGATE_TEST_UNSET: the variable is unset or empty"},
	} {
		_, _, err := runbuild.OpenModel(tc.ref, nil)
		fe, _ := errors.AsType[*runs.FieldError](err)
		ke, ok := errors.AsType[*runbuild.KeyError](err)
		if fe == nil || fe.Field != tc.field || !ok || *ke != tc.want || err.Error() != tc.text {
			t.Errorf("%+v: %v (%#v), want a FieldError on %s holding %#v, %q", tc.ref, err, ke, tc.field, tc.want, tc.text)
		}
	}
}

// The host's tools are checked as the toolkit checks them: two with one
// name fail the build, naming the option, not a configuration field.
func TestBuildRefusesDuplicateHostTools(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	a := tool.Must("note", "a", func(ctx context.Context, in struct{}) (string, error) { return "a", nil }, nil)
	b := tool.Must("note", "b", func(ctx context.Context, in struct{}) (string, error) { return "b", nil }, nil)
	_, err := withModel(calls(), &runbuild.Options{Tools: []tool.Tool{a, b}}).Build(t.Context(), config(t, dir, runs.RunConfig{}))
	if _, isField := errors.AsType[*runs.FieldError](err); err == nil || isField || !strings.Contains(err.Error(), "Options.Tools") {
		t.Fatalf("Build with two tools named note: %v, want an error naming Options.Tools", err)
	}
}
