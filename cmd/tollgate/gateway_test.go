package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// gatewayOverStdio runs `tollgate gateway` in this process with args, its
// stdin and stdout an MCP connection, and returns a client session on it
// and a function that closes it and returns the exit code and stderr.
func gatewayOverStdio(t *testing.T, args ...string) (*mcp.ClientSession, func() (int, string)) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr strings.Builder
	done := make(chan int, 1)
	go func() {
		code := Main(context.Background(), append([]string{"gateway"}, args...), inR, outW, &stderr)
		_ = outW.Close()
		done <- code
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "0"}, nil).
		Connect(t.Context(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		_ = inW.Close()
		t.Fatalf("connect: %v\nstderr: %s", err, stderr.String())
	}
	return cs, func() (int, string) {
		_ = cs.Close()
		_ = inW.Close()
		return <-done, stderr.String()
	}
}

// gatewayMCPFile writes an mcp.json whose one server, app, is this test
// binary serving the tool good (mcpTestServer, mode badtool), unconfined.
func gatewayMCPFile(t *testing.T, dir string) string {
	return mcpConfig(t, dir, map[string]any{
		"app": map[string]any{"command": os.Args[0], "sandbox": "off", "env": map[string]string{"TOLLGATE_TEST_MCP_SERVER": "badtool"}},
	})
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// A client of `tollgate gateway` over stdio calls the upstream's tool by
// its own name; the records file names the call mcp__app__good and who
// decided.
func TestGatewayStdioAllowsAndRecords(t *testing.T) {
	dir := t.TempDir()
	recs := filepath.Join(dir, "records.jsonl")
	cs, stop := gatewayOverStdio(t, "--mcp", gatewayMCPFile(t, dir), "--records", recs)
	if names := toolNames(t, cs); strings.Join(names, ",") != "good" {
		t.Errorf("tools/list = %v, want [good]", names)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "good", Arguments: map[string]any{}})
	if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "fine" {
		t.Fatalf("good: %+v, %v", res, err)
	}
	code, stderr := stop()
	if code != 0 {
		t.Errorf("exit %d; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "mcp: server app") {
		t.Errorf("stderr lacks the server's status:\n%s", stderr)
	}
	b, err := os.ReadFile(recs)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"tool":"mcp__app__good"`) || !regexp.MustCompile(`"by":\{"kind":"runtime","name":"default"\}`).Match(b) {
		t.Errorf("records:\n%s\nwant a record of mcp__app__good allowed by runtime:default", b)
	}
}

// The policy governs the gateway's clients by the native names: a tool it
// denies is not listed, and a call to it is refused and recorded.
func TestGatewayStdioPolicyDenies(t *testing.T) {
	dir := t.TempDir()
	recs := filepath.Join(dir, "records.jsonl")
	pol := apWrite(t, dir, "policy.yaml", "rules:\n  - id: no-good\n    tool: mcp__app__good\n    decision: deny\n    reason: not today\n")
	cs, stop := gatewayOverStdio(t, "--mcp", gatewayMCPFile(t, dir), "--policy", pol, "--records", recs)
	if names := toolNames(t, cs); len(names) != 0 {
		t.Errorf("tools/list = %v, want none", names)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "good", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "not today") {
		t.Fatalf("good: %+v, %v; want refused saying not today", res, err)
	}
	if code, stderr := stop(); code != 0 {
		t.Errorf("exit %d; stderr:\n%s", code, stderr)
	}
	b, _ := os.ReadFile(recs)
	if !strings.Contains(string(b), `"by":{"kind":"rule","name":"no-good"}`) {
		t.Errorf("records:\n%s\nwant the call denied by rule:no-good", b)
	}
}

// --addr serves streamable HTTP at /mcp on a loopback address, and refuses
// any other address.
func TestGatewayHTTP(t *testing.T) {
	dir := t.TempDir()
	file := gatewayMCPFile(t, dir)
	if code, _, stderr := runMain(t, "gateway", "--mcp", file, "--addr", "0.0.0.0:0"); code != exitUsage || !strings.Contains(stderr, "loopback addresses only") {
		t.Errorf("--addr 0.0.0.0:0: exit %d, stderr %q; want a usage error", code, stderr)
	}
	ctx, cancel := context.WithCancel(t.Context())
	errR, errW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"gateway", "--mcp", file, "--addr", "127.0.0.1:0"}, strings.NewReader(""), io.Discard, errW)
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
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-client", Version: "0"}, nil).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "good", Arguments: map[string]any{}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "fine" {
		t.Errorf("good over HTTP: %+v, %v", res, err)
	}
	_ = cs.Close()
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d after cancel", code)
	}
}

// --tokens is for HTTP, and a tokens file that does not load is a usage
// error.
func TestGatewayTokensFlag(t *testing.T) {
	dir := t.TempDir()
	file := gatewayMCPFile(t, dir)
	tokens := apWrite(t, dir, "tokens.yaml", "tokens: []\n")
	if code, _, stderr := runMain(t, "gateway", "--mcp", file, "--tokens", tokens); code != exitUsage || !strings.Contains(stderr, "--tokens is for --addr") {
		t.Errorf("--tokens without --addr: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runMain(t, "gateway", "--mcp", file, "--tokens", tokens, "--addr", "127.0.0.1:0"); code != exitUsage || !strings.Contains(stderr, "lists no token") {
		t.Errorf("empty tokens file: exit %d, %q", code, stderr)
	}
}

// A policy with several problems is refused with one line per problem, as
// `run` prints them: the gateway printed them on one line, with "\n" escaped.
func TestGatewayPolicyProblemsOneALine(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	mcpFile := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(bad, []byte("rules:\n  - name: x\n    tool: bash\n    decison: allow\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mcpFile, []byte(`{"mcpServers": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runMain(t, "gateway", "--mcp", mcpFile, "--policy", bad)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if code != exitUsage || strings.Contains(stderr, `\n`) || len(lines) < 3 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	for _, l := range lines[:len(lines)-1] { // the last says to read --help
		if !strings.HasPrefix(l, "tollgate: gateway: --policy "+bad+": "+bad+":") {
			t.Errorf("line %q does not name the flag and the file's position", l)
		}
	}
}
