package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// notesServer serves, on stdio, the tools of the "notes" test server and
// exits: read_note {path} answers "note PATH: hello", and secret answers a
// token.
func notesServer(srv *mcp.Server) {
	type pathIn struct {
		Path string `json:"path"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "read_note", Description: "reads a note"}, func(_ context.Context, _ *mcp.CallToolRequest, in pathIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "note " + in.Path + ": hello"}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "secret", Description: "tells a secret"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "token=SECRET-123"}}}, nil, nil
	})
	_ = srv.Run(context.Background(), &mcp.StdioTransport{})
	os.Exit(0)
}

// Claude Code, a real MCP client, with `tollgate gateway` in its
// --mcp-config: the model asks for mcp__gw__read_note and mcp__gw__secret;
// the call the policy denies is refused with the rule's reason, which the
// model reads; the allowed one returns the upstream's answer; the
// redaction of a PostToolUse hook of the gateway's Claude Code settings
// (an AfterTool hook) reaches the model; the records name every call by
// its native name.
func TestClaudeCodeThroughTheGateway(t *testing.T) {
	claude, tg := claudeBinary(t), tollgateBinary(t)
	dir := t.TempDir()
	ws, home := filepath.Join(dir, "ws"), filepath.Join(dir, "home")
	for _, d := range []string{ws, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	upstream := mcpConfig(t, dir, map[string]any{
		"notes": map[string]any{"command": os.Args[0], "sandbox": "off", "env": map[string]string{"TOLLGATE_TEST_MCP_SERVER": "notes"}},
	})
	pol := apWrite(t, dir, "policy.yaml", `rules:
  - id: no-secret-notes
    tool: mcp__notes__read_note
    args: {path: {pathPrefix: secret}}
    decision: deny
    reason: secret notes are off limits
`)
	// The gateway's own Claude Code settings: a PostToolUse hook that
	// replaces the secret tool's answer.
	gwSettings := apWrite(t, dir, "gateway-settings.json", `{"hooks": {"PostToolUse": [{"matcher": "mcp__notes__secret", "hooks": [{"type": "command",
  "command": "echo '{\"hookSpecificOutput\":{\"hookEventName\":\"PostToolUse\",\"updatedToolOutput\":\"token=[redacted]\"}}'"}]}]}}`)
	recs := filepath.Join(dir, "records.jsonl")
	clientConfig, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"gw": map[string]any{
		"command": tg,
		"args":    []string{"gateway", "--mcp", upstream, "--policy", pol, "--claude-settings", gwSettings, "--records", recs},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	mcpFile := apWrite(t, dir, "client-mcp.json", string(clientConfig))

	mock := newMockMessages(t,
		toolUse{Name: "mcp__gw__read_note", Input: `{"path": "secret/plans.txt"}`},
		toolUse{Name: "mcp__gw__read_note", Input: `{"path": "todo.txt"}`},
		toolUse{Name: "mcp__gw__secret", Input: `{}`},
	)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, claude, "-p", "do the task", "--mcp-config", mcpFile, "--strict-mcp-config",
		"--output-format", "json", "--dangerously-skip-permissions", "--model", "claude-sonnet-4-5")
	cmd.Dir = ws
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "IS_SANDBOX=1",
		"ANTHROPIC_BASE_URL=" + mock.url, "ANTHROPIC_API_KEY=sk-ant-test",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1",
		"TOLLGATE_STATE_DIR=" + filepath.Join(dir, "state"),
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("claude: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	res := mock.Results()
	if got := res["toolu_01"]; !strings.Contains(got, "secret notes are off limits") || strings.Contains(got, "hello") {
		t.Errorf("denied call: the model read %q; want the rule's reason and no note", got)
	}
	if got := res["toolu_02"]; !strings.HasPrefix(got, "note todo.txt: hello") {
		t.Errorf("allowed call: the model read %q; want the upstream's answer", got)
	}
	if got := res["toolu_03"]; !strings.Contains(got, "token=[redacted]") || strings.Contains(got, "SECRET-123") {
		t.Errorf("redacted call: the model read %q; want the hook's replacement", got)
	}
	var outcomes []string
	for _, r := range recordLines(t, recs) {
		outcomes = append(outcomes, fmt.Sprint(r["tool"], " ", r["outcome"]))
	}
	want := "mcp__notes__read_note denied,mcp__notes__read_note allowed,mcp__notes__secret allowed"
	if strings.Join(outcomes, ",") != want {
		t.Errorf("records: %v\nwant %s", outcomes, want)
	}
}
