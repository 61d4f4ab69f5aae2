package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/serveconfig"
)

// `tollgate gateway --server` asks on the server in the tenant of its one
// server token: a --tokens file whose clients belong to several tenants
// would put every tenant's asks before one tenant's approvers, so the
// combination is refused at start, saying why.
func TestGatewayServerRefusesSeveralTenants(t *testing.T) {
	dir := t.TempDir()
	file := gatewayMCPFile(t, dir)
	tokenFile := apWrite(t, dir, "server.token", "tg_gateway_agent\n")
	var b strings.Builder
	for i, tn := range []string{"acme", "globex"} {
		fmt.Fprintf(&b, "  - name: bot%d\n    tenant: %q\n    roles: [agent]\n    sha256: %s\n", i, tn, serveconfig.HashToken(fmt.Sprintf("tg_bot%d", i)))
	}
	several := apWrite(t, dir, "several.yaml", "tokens:\n"+b.String())

	// Run until it exits, or says it serves (then it is stopped: a failure).
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	errR, errW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"gateway", "--mcp", file, "--addr", "127.0.0.1:0", "--tokens", several, "--server", "http://127.0.0.1:1", "--token-file", tokenFile}, strings.NewReader(""), io.Discard, errW)
		_ = errW.Close()
	}()
	var stderr strings.Builder
	sc := bufio.NewScanner(errR)
	for sc.Scan() {
		stderr.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "serving MCP at") {
			cancel()
			go func() { _, _ = io.Copy(io.Discard, errR) }()
			break
		}
	}
	code := <-done
	if code != exitUsage || !strings.Contains(stderr.String(), `tenants "acme" and "globex"`) || !strings.Contains(stderr.String(), "--server") {
		t.Errorf("--server with tokens of two tenants: exit %d, %q; want a usage error naming the tenants", code, stderr.String())
	}
}
