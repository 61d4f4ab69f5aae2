package mcptool

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The test binary doubles as a stdio MCP server: with MCPTOOL_TEST_HELPER set,
// TestMain runs helperServer instead of the tests.
func TestMain(m *testing.M) {
	if mode := os.Getenv("MCPTOOL_TEST_HELPER"); mode != "" {
		helperServer(mode)
		return
	}
	os.Exit(m.Run())
}

// helperServer serves one tool, "pids", over stdio after starting a grandchild
// (sleep) in its process group; the pids go to MCPTOOL_TEST_PIDS. In mode
// "stubborn" it ignores SIGTERM and keeps running after stdin closes (C35); in
// mode "polite" it exits when stdin closes, leaving the grandchild behind.
func helperServer(mode string) {
	if mode == "where" {
		whereServer()
		return
	}
	if mode == "env" {
		envServer()
		return
	}
	if mode == "noisy" {
		noisyServer()
		return
	}
	if mode == "crash" {
		crashServer()
		return
	}
	if mode == "rawbig" {
		rawBigServer()
		return
	}
	if mode == "once" {
		// Serves as crashServer the first time; every later start fails.
		marker := os.Getenv("MCPTOOL_TEST_MARKER")
		if _, err := os.Stat(marker); err == nil {
			fmt.Fprintln(os.Stderr, "once: refusing to start again")
			os.Exit(1)
		}
		_ = os.WriteFile(marker, nil, 0o600)
		crashServer()
		return
	}
	if mode == "stubborn" {
		signal.Ignore(syscall.SIGTERM)
	}
	gc := exec.Command("sleep", "300")
	if err := gc.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pids := fmt.Sprintf("%d %d", os.Getpid(), gc.Process.Pid)
	if err := os.WriteFile(os.Getenv("MCPTOOL_TEST_PIDS"), []byte(pids), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "helper", Version: "0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "pids", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: pids}}}, nil
	})
	_ = srv.Run(context.Background(), &mcp.StdioTransport{})
	fmt.Fprintln(os.Stderr, "helper: stdin closed")
	if mode == "stubborn" {
		select {}
	}
	os.Exit(0)
}

// whereServer serves one tool, "where", whose output is the server's working
// directory and then its arguments, one per line.
func whereServer() {
	srv := mcp.NewServer(&mcp.Implementation{Name: "where", Version: "0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "where", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		out := strings.Join(append([]string{wd}, os.Args[1:]...), "\n")
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out}}}, nil
	})
	_ = srv.Run(context.Background(), &mcp.StdioTransport{})
}

// noisyServer writes a banner to stdout before it serves, and serves one tool,
// "echo", that writes log lines to stdout (plain and JSON) before it answers
// with its "text" argument.
func noisyServer() {
	fmt.Println("noisy-server 1.0 starting on stdio")
	fmt.Println("")
	srv := mcp.NewServer(&mcp.Implementation{Name: "noisy", Version: "0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: objectSchema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		fmt.Println("[info] handling tools/call echo")
		fmt.Println(`{"level":"info","msg":"handling echo"}`)
		fmt.Println("[" + strings.Repeat("x", 100) + "]")
		var args struct{ Text string }
		_ = json.Unmarshal(req.Params.Arguments, &args)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: args.Text}}}, nil
	})
	_ = srv.Run(context.Background(), &mcp.StdioTransport{})
}

// crashServer serves "echo", which answers with the server's pid, and "crash",
// which makes the server exit (status 3) in the middle of the call.
func crashServer() {
	srv := mcp.NewServer(&mcp.Implementation{Name: "crash", Version: "0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(os.Getpid())}}}, nil
	})
	srv.AddTool(&mcp.Tool{Name: "crash", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		fmt.Fprintln(os.Stderr, "crash: exiting in the middle of a call")
		os.Exit(3)
		return nil, nil
	})
	_ = srv.Run(context.Background(), &mcp.StdioTransport{})
}

// envServer serves one tool, "env", whose output is the server's
// environment, one variable per line.
func envServer() {
	srv := mcp.NewServer(&mcp.Implementation{Name: "env", Version: "0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "env", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(os.Environ(), "\n")}}}, nil
	})
	_ = srv.Run(context.Background(), &mcp.StdioTransport{})
}

// A stdio server gets tollgate's environment scrubbed to the allowlist plus
// its configured env: a provider key reaches it only when named there.
// Options.Sandbox sees the command with the server's name and configuration.
func TestStdioServerEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test-secret")
	t.Setenv("TOLLGATE_INTERNAL", "internal")
	for _, tt := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{"MCPTOOL_TEST_HELPER": "env"}, false},
		{map[string]string{"MCPTOOL_TEST_HELPER": "env", "OPENAI_API_KEY": "${OPENAI_API_KEY}"}, true},
	} {
		var seen []string
		s := open(t, &Config{Servers: map[string]*ServerConfig{"envsrv": {Command: os.Args[0], Env: tt.env, Sandbox: "read-only"}}},
			&Options{Sandbox: func(cmd *exec.Cmd, server string, sc *ServerConfig) error {
				seen = append(seen, server+":"+sc.Sandbox)
				return nil
			}})
		if st := status(t, s, "envsrv"); st.State != StateReady {
			t.Fatalf("status = %+v", st)
		}
		res, err := s.Tools()[0].Call(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(res.Output, "OPENAI_API_KEY=sk-test-secret"); got != tt.want {
			t.Errorf("env %v: the key reached the server: %v\n%s", tt.env, got, res.Output)
		}
		if strings.Contains(res.Output, "TOLLGATE_INTERNAL") || !strings.Contains(res.Output, "PATH=") {
			t.Errorf("environment not scrubbed to the allowlist:\n%s", res.Output)
		}
		if len(seen) != 1 || seen[0] != "envsrv:read-only" {
			t.Errorf("Options.Sandbox calls: %q", seen)
		}
		s.Close()
	}
}

// alive reports whether pid is a live process (a zombie counts as gone).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// The state follows the parenthesized command name.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) && s[i+2] == 'Z' {
		return false
	}
	return true
}

func waitGone(t *testing.T, pids []int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var left []int
		for _, p := range pids {
			if alive(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range left {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
			t.Fatalf("processes %v still alive %s after Close", left, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func openHelper(t *testing.T, mode string, grace time.Duration) (*Set, []int) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "pids")
	s := open(t, &Config{Servers: map[string]*ServerConfig{"helper": {
		Command: os.Args[0],
		Env:     map[string]string{"MCPTOOL_TEST_HELPER": mode, "MCPTOOL_TEST_PIDS": pidFile},
	}}}, &Options{ShutdownGrace: grace})
	if st := status(t, s, "helper"); st.State != StateReady || st.Transport != "stdio" {
		t.Fatalf("status = %+v", st)
	}
	res, err := s.Tools()[0].Call(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(res.Output) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pids %q: %v", res.Output, err)
		}
		pids = append(pids, n)
	}
	if len(pids) != 2 || !alive(pids[0]) || !alive(pids[1]) {
		t.Fatalf("helper pids %v not both alive", pids)
	}
	return s, pids
}

// TestCloseStubbornServer is C35: a stdio server that ignores stdin closing
// and SIGTERM, and has a child of its own. Close returns within a bounded time
// and neither the server nor its child is left.
func TestCloseStubbornServer(t *testing.T) {
	const grace = 300 * time.Millisecond
	s, pids := openHelper(t, "stubborn", grace)
	start := time.Now()
	err := s.Close()
	elapsed := time.Since(start)
	if err != nil {
		t.Errorf("Close: %v", err)
	}
	// stdin closed, wait; SIGTERM (ignored), wait; SIGKILL: about 2 grace
	// periods (the bound above them is for a loaded machine: it only says
	// Close does not wait for the server).
	if elapsed < 2*grace || elapsed > 3*grace+30*time.Second {
		t.Errorf("Close took %s; want between %s and %s", elapsed, 2*grace, 3*grace+30*time.Second)
	}
	waitGone(t, pids, 30*time.Second)
}

// TestClosePoliteServer: a server that exits when its stdin closes goes
// without a signal, and the child it left behind is killed too.
func TestClosePoliteServer(t *testing.T) {
	const grace = 30 * time.Second // far above a call's time on a loaded machine
	s, pids := openHelper(t, "polite", grace)
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if elapsed := time.Since(start); elapsed > grace {
		t.Errorf("Close took %s; the server exits at once when its stdin closes", elapsed)
	}
	waitGone(t, pids, 30*time.Second)
}

// rawBigServer is a stdio MCP server written by hand, as a Node.js server
// writes its messages (the ID last), so that a result over the SDK's limit
// for one message costs it no encoding: "echo" answers with the server's
// pid, "big" with a text of mcp.DefaultMaxLineLength+1 bytes, or
// MCPTOOL_TEST_BIG bytes when set. Every start is appended to
// MCPTOOL_TEST_STARTS.
func rawBigServer() {
	if f := os.Getenv("MCPTOOL_TEST_STARTS"); f != "" {
		if fh, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
			fmt.Fprintln(fh, os.Getpid())
			fh.Close()
		}
	}
	big := mcp.DefaultMaxLineLength + 1
	if n, err := strconv.Atoi(os.Getenv("MCPTOOL_TEST_BIG")); err == nil {
		big = n
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := bufio.NewWriter(os.Stdout)
	answer := func(id json.RawMessage, result string) {
		out.WriteString(`{"jsonrpc":"2.0","result":` + result + `,"id":` + string(id) + "}\n")
		out.Flush()
	}
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil || req.ID == nil {
			continue // a notification
		}
		switch req.Method {
		case "initialize":
			answer(req.ID, `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"rawbig","version":"0"}}`)
		case "tools/list":
			answer(req.ID, `{"tools":[{"name":"echo","inputSchema":{"type":"object"}},{"name":"big","inputSchema":{"type":"object"}}]}`)
		case "tools/call":
			if req.Params.Name == "big" {
				out.WriteString(`{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"`)
				out.Write(bytes.Repeat([]byte("b"), big))
				out.WriteString(`"}]},"id":` + string(req.ID) + "}\n")
				out.Flush()
				continue
			}
			answer(req.ID, `{"content":[{"type":"text","text":"`+strconv.Itoa(os.Getpid())+`"}]}`)
		default:
			out.WriteString(`{"jsonrpc":"2.0","error":{"code":-32601,"message":"no"},"id":` + string(req.ID) + "}\n")
			out.Flush()
		}
	}
}
