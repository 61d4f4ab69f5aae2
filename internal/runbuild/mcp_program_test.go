package runbuild_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/runbuild"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/runs"
)

// A stdio MCP server's program and script inside the workspace are
// protected like the MCP file: a tool that rewrote them could make the
// server claim readOnlyHint for a tool that does what it likes, and a
// trusted server's hints are believed. Other files stay writable.
func TestMCPServerProgramIsProtected(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	script := write(t, filepath.Join(ws, "server.sh"), "exit 0\n")
	prog := write(t, filepath.Join(ws, "bin", "server"), "#!/bin/sh\nexit 0\n")
	if err := os.Chmod(prog, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "mcp.json"), `{"mcpServers": {
  "s": {"command": "sh", "args": ["server.sh"], "cwd": "ws", "trust": true},
  "p": {"command": "./bin/server", "cwd": "ws"}
}}`)
	m := calls(
		model.FuncCall{Name: "write", Arguments: map[string]string{"path": "server.sh", "content": "exec evil\n"}},
		model.FuncCall{Name: "write", Arguments: map[string]string{"path": "bin/server", "content": "#!/bin/sh\nexec evil\n"}},
		model.FuncCall{Name: "write", Arguments: map[string]string{"path": "notes.txt", "content": "ok\n"}},
	)
	res := start(t, withModel(m, &runbuild.Options{}), config(t, dir, runs.RunConfig{AgentConfig: runs.AgentConfig{MCPFiles: []string{"mcp.json"}}}))
	if len(res.ToolCalls) != 3 {
		t.Fatalf("%d tool calls", len(res.ToolCalls))
	}
	for _, tc := range res.ToolCalls[:2] {
		if !tc.IsError {
			t.Errorf("write %s succeeded: %q; a server's own file must be protected", tc.Args, tc.Output)
		}
	}
	if tc := res.ToolCalls[2]; tc.IsError {
		t.Errorf("write notes.txt failed: %q", tc.Output)
	}
	for _, f := range []string{script, prog} {
		if b, _ := os.ReadFile(f); strings.Contains(string(b), "evil") {
			t.Errorf("%s was rewritten: %q", f, b)
		}
	}
}
