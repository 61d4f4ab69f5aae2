package mcptool

// Integration tests against real MCP servers that tollgate did not write:
// @modelcontextprotocol/server-filesystem and @modelcontextprotocol/server-everything,
// at the versions pinned in testdata/npm/package.json (and package-lock.json).
//
// They need Node.js and the servers installed under testdata/npm/node_modules:
//
//	npm ci --prefix mcptool/testdata/npm
//
// When the servers are missing these tests FAIL, saying so; `go test -short`
// skips them instead (for a quick run without Node).

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tollgate-dev/tollgate/tool"
)

const npmDir = "testdata/npm"

// npmServer returns node and the absolute path of the entry point of an
// installed npm server package, or stops the test.
func npmServer(t *testing.T, pkg string) (node, entry string) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test against a real MCP server; skipped with -short")
	}
	entry, err := filepath.Abs(filepath.Join(npmDir, "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(entry); err != nil {
		t.Fatalf("MCP server %s is not installed (%v).\nInstall the pinned test servers with:\n\tnpm ci --prefix mcptool/testdata/npm\n(or run go test -short to skip the integration tests)", pkg, err)
	}
	node, err = exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not in PATH (%v); the integration tests need Node.js 20 or later (or run go test -short)", err)
	}
	return node, entry
}

// hintsTable renders each tool's claimed annotations and effective hints.
func hintsTable(s *Set) string {
	var b strings.Builder
	for _, tl := range s.Tools() {
		m := tl.(*Tool)
		ann := "none"
		if a := m.Listed().Annotations; a != nil {
			raw, _ := json.Marshal(a)
			ann = string(raw)
		}
		claimed := HintsFor(m.Listed().Annotations, true)
		fmt.Fprintf(&b, "%-45s claimed=%-40s effective=%-40s annotations=%s\n",
			m.Spec().Name, claimed.String(), m.Spec().Hints.String(), ann)
	}
	return b.String()
}

// asksForDestructive is the documented policy example: ask before a
// tool that is not read-only and may destroy data.
func asksForDestructive(h *tool.Hints) bool { return h == nil || (!h.ReadOnly && h.Destructive) }

func TestFilesystemServer(t *testing.T) {
	node, entry := npmServer(t, "server-filesystem")
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hello from tollgate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := open(t, &Config{Servers: map[string]*ServerConfig{
		"fs":        {Command: node, Args: []string{entry, root}, Trusted: true},
		"untrusted": {Command: node, Args: []string{entry, root}},
	}}, nil)
	for _, st := range s.Servers() {
		if st.State != StateReady {
			t.Fatalf("server %s: %s: %v (stderr %q)", st.Name, st.State, st.Err, st.Stderr)
		}
		if st.ServerInfo == nil || st.ServerInfo.Name != "secure-filesystem-server" {
			t.Errorf("server %s: info %+v", st.Name, st.ServerInfo)
		}
	}
	t.Logf("server-filesystem tools:\n%s", hintsTable(s))
	tools := toolsByName(s)

	// Trusted: the real annotations. read_file is read-only, write_file destructive.
	want := map[string]tool.Hints{
		"mcp__fs__read_file":        {ReadOnly: true, Destructive: true, OpenWorld: false},
		"mcp__fs__read_text_file":   {ReadOnly: true, Destructive: true, OpenWorld: false},
		"mcp__fs__list_directory":   {ReadOnly: true, Destructive: true, OpenWorld: false},
		"mcp__fs__write_file":       {ReadOnly: false, Destructive: true, Idempotent: true, OpenWorld: false},
		"mcp__fs__edit_file":        {ReadOnly: false, Destructive: true, Idempotent: false, OpenWorld: false},
		"mcp__fs__create_directory": {ReadOnly: false, Destructive: false, Idempotent: true, OpenWorld: false},
	}
	for name, h := range want {
		tl := tools[name]
		if tl == nil {
			t.Errorf("no tool %s", name)
			continue
		}
		if diff := cmp.Diff(h, *tl.Spec().Hints); diff != "" {
			t.Errorf("%s hints (-want +got):\n%s", name, diff)
		}
	}
	if !asksForDestructive(tools["mcp__fs__write_file"].Spec().Hints) {
		t.Error("a policy asking for destructive tools does not ask for write_file")
	}
	if asksForDestructive(tools["mcp__fs__read_file"].Spec().Hints) {
		t.Error("a policy asking for destructive tools asks for read_file")
	}
	// Untrusted: the same claims, all disbelieved.
	for name, tl := range tools {
		if !strings.HasPrefix(name, "mcp__untrusted__") {
			continue
		}
		if diff := cmp.Diff(strictHints(), *tl.Spec().Hints); diff != "" {
			t.Errorf("%s (untrusted) hints (-want +got):\n%s", name, diff)
		}
		trustedTwin := tools["mcp__fs__"+tl.Listed().Name]
		if trustedTwin == nil || HintsFor(trustedTwin.Listed().Annotations, true) != HintsFor(tl.Listed().Annotations, true) {
			t.Errorf("%s: claimed hints differ from the trusted twin's", name)
		}
		if tl.Spec().Source != "mcp:untrusted" {
			t.Errorf("%s: source %q", name, tl.Spec().Source)
		}
	}
	if !asksForDestructive(tools["mcp__untrusted__read_file"].Spec().Hints) {
		t.Error("read_file of an untrusted server is believed read-only")
	}

	// Calls: write a file, read it back, fail on a path outside the root.
	ctx := context.Background()
	target := filepath.Join(root, "out.txt")
	args, _ := json.Marshal(map[string]string{"path": target, "content": "written by tollgate"})
	res, err := tools["mcp__fs__write_file"].Call(ctx, args)
	if err != nil || res.IsError {
		t.Fatalf("write_file = %+v, %v", res, err)
	}
	if data, err := os.ReadFile(target); err != nil || string(data) != "written by tollgate" {
		t.Errorf("file content = %q, %v", data, err)
	}
	args, _ = json.Marshal(map[string]string{"path": filepath.Join(root, "hello.txt")})
	res, err = tools["mcp__fs__read_text_file"].Call(ctx, args)
	if err != nil || res.IsError || res.Output != "hello from tollgate\n" {
		t.Errorf("read_text_file = %+v, %v", res, err)
	}
	args, _ = json.Marshal(map[string]string{"path": "/etc/passwd"})
	res, err = tools["mcp__fs__read_text_file"].Call(ctx, args)
	if err != nil || !res.IsError || !strings.Contains(res.Output, "outside allowed directories") {
		t.Errorf("read outside the root = %+v, %v; want an error result", res, err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// checkEverything checks the tools of server-everything under server name srv.
func checkEverything(t *testing.T, s *Set, srv string) {
	t.Helper()
	tools := toolsByName(s)
	if len(tools) < 10 {
		t.Fatalf("only %d tools", len(tools))
	}
	var unannotated []string
	for name, tl := range tools {
		if tl.Listed().Annotations == nil {
			unannotated = append(unannotated, name)
		}
	}
	sort.Strings(unannotated)
	t.Logf("server-everything tools without annotations: %v", unannotated)
	for _, name := range []string{"echo", "get-sum", "get-tiny-image", "get-structured-content", "get-resource-links", "get-env"} {
		tl := tools["mcp__"+srv+"__"+name]
		if tl == nil {
			t.Errorf("no tool %s", name)
			continue
		}
		a := tl.Listed().Annotations
		if a == nil || a.DestructiveHint == nil || a.OpenWorldHint == nil || !a.ReadOnlyHint || !a.IdempotentHint || *a.DestructiveHint || *a.OpenWorldHint {
			t.Errorf("%s: annotations %+v, want explicit read-only, non-destructive, idempotent, closed world", name, a)
		}
		if diff := cmp.Diff(tool.Hints{ReadOnly: true, Idempotent: true}, *tl.Spec().Hints); diff != "" {
			t.Errorf("%s hints (trusted) (-want +got):\n%s", name, diff)
		}
	}
	ctx := context.Background()
	call := func(name, args string) tool.Result {
		t.Helper()
		res, err := tools["mcp__"+srv+"__"+name].Call(ctx, json.RawMessage(args))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	if res := call("echo", `{"message":"hi there"}`); res.IsError || res.Output != "Echo: hi there" {
		t.Errorf("echo = %+v", res)
	}
	if res := call("get-sum", `{"a":2,"b":40}`); res.IsError || !strings.Contains(res.Output, "42") {
		t.Errorf("get-sum = %+v", res)
	}
	res := call("get-tiny-image", `{}`)
	infos, _ := res.Metadata[metaContent].([]contentInfo)
	if res.IsError || len(infos) != 1 || infos[0].Type != "image" || infos[0].MIMEType != "image/png" || infos[0].Size <= 0 ||
		!strings.Contains(res.Output, "[image: image/png, ") {
		t.Errorf("get-tiny-image = %q, %+v", res.Output, infos)
	}
	res = call("get-structured-content", `{"location":"New York"}`)
	if res.IsError || res.Metadata[metaStructuredContent] == nil || !strings.Contains(res.Output, "temperature") {
		t.Errorf("get-structured-content = %+v", res)
	}
	res = call("get-resource-links", `{"count":2}`)
	infos, _ = res.Metadata[metaContent].([]contentInfo)
	if res.IsError || len(infos) != 2 || infos[0].Type != "resource_link" || !strings.Contains(res.Output, "[resource link: ") {
		t.Errorf("get-resource-links = %q, %+v", res.Output, infos)
	}
	// A call that the server rejects is an error result, and the session lives on.
	if res := call("get-sum", `{"a":"two"}`); !res.IsError || res.Output == "" {
		t.Errorf("get-sum with bad arguments = %+v, want an error result", res)
	}
	if res := call("echo", `{"message":"still here"}`); res.Output != "Echo: still here" {
		t.Errorf("echo after an error = %+v", res)
	}
	// Cancelling a long-running call returns promptly.
	cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := tools["mcp__"+srv+"__trigger-long-running-operation"].Call(cctx, json.RawMessage(`{"duration":30,"steps":5}`))
	if err == nil || time.Since(start) > 25*time.Second { // the operation takes 30 s
		t.Errorf("cancelled long call: err %v after %s", err, time.Since(start))
	}
	if res := call("echo", `{"message":"after cancel"}`); res.Output != "Echo: after cancel" {
		t.Errorf("echo after a cancelled call = %+v", res)
	}
}

func TestEverythingServerStdio(t *testing.T) {
	node, entry := npmServer(t, "server-everything")
	s := open(t, &Config{Servers: map[string]*ServerConfig{
		"every": {Command: node, Args: []string{entry, "stdio"}, Trusted: true},
	}}, nil)
	st := status(t, s, "every")
	if st.State != StateReady {
		t.Fatalf("status %+v", st)
	}
	t.Logf("server-everything tools (stdio):\n%s", hintsTable(s))
	checkEverything(t, s, "every")
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	t.Logf("Close took %s", time.Since(start))
}

// freePort returns a TCP port that was free on 127.0.0.1 a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestEverythingServerStreamableHTTP(t *testing.T) {
	node, entry := npmServer(t, "server-everything")
	preload, err := filepath.Abs(filepath.Join(npmDir, "listen-localhost.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	cmd := exec.Command(node, "--import", "file://"+preload, entry, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	out := &tailBuffer{n: 4096}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything did not listen on %s: %v\n%s", addr, err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	s := open(t, &Config{Servers: map[string]*ServerConfig{
		"every": {URL: "http://" + addr + "/mcp", Trusted: true, Headers: map[string]string{"X-Client": "${USER:-tollgate}"}},
	}}, nil)
	st := status(t, s, "every")
	if st.State != StateReady || st.Transport != "http" {
		t.Fatalf("status %+v\nserver output:\n%s", st, out)
	}
	checkEverything(t, s, "every")
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
