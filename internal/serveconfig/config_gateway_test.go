package serveconfig_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/serveconfig"
)

// A gateway: section alone is a configuration: its paths are resolved
// against the file's directory (workdir defaults to it), and its errors
// name the key.
func TestLoadConfigGateway(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "server.yaml", "gateway:\n  mcp: [mcp.json]\n  policy: gw.yaml\n  hooks: [audit.yaml]\n  records: calls.jsonl\n  pins: pins.json\n  approvalTtl: 5m\n  pageUrl: https://tg.example/\n  tenants: [acme]\n  hooksSandbox: read-only\n")
	c, err := serveconfig.LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	g := c.Gateway
	if g == nil || len(g.MCPFiles) != 1 || g.MCPFiles[0] != filepath.Join(dir, "mcp.json") || g.PolicyFile != filepath.Join(dir, "gw.yaml") ||
		len(g.HooksFiles) != 1 || g.RecordsFile != filepath.Join(dir, "calls.jsonl") || g.PinsFile != filepath.Join(dir, "pins.json") ||
		g.Workdir != dir || g.ApprovalTTL != 5*time.Minute || g.PageURL != "https://tg.example/" || len(g.Tenants) != 1 || len(c.Agents) != 0 || g.HooksSandbox != "read-only" {
		t.Fatalf("gateway %+v", g)
	}
	for body, want := range map[string]string{
		"gateway:\n  approvalTtl: soon\n":   ":2:16: gateway.approvalTtl: want a duration",
		"gateway:\n  pageUrl: tg.example\n": ":2:12: gateway.pageUrl: want an http or https URL",
		"gateway:\n  mpc: [m.json]\n":       ":2:3: ",
		"gateway:\n  hooksSandbox: none\n":  `:2:17: gateway.hooksSandbox: sandbox mode "none": want off, workspace or read-only`,
	} {
		p := writeFile(t, t.TempDir(), "server.yaml", body)
		if _, err := serveconfig.LoadConfig(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
}
