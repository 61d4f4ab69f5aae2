package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkGatewayStdio measures a tools/call of a trivial tool (good, of
// the test server) as a client that starts its servers makes it: direct to
// the server, a process on stdio; through a relay, a process that starts
// the server and copies the bytes both ways (the floor of any process in
// between); and through `tollgate gateway` (no policy), a process on stdio
// that starts the server on stdio. The three are called in turn; each
// reports its median latency, the gateway's overhead, the target (10 % of
// direct + 200 µs), the ratio and the relay's cost (hop-µs). "default" runs the
// gateway as it starts; "GOGC=100" with the garbage collector's default
// target instead of the gateway's own. TOLLGATE_BENCH_BINARY names another
// build of tollgate to measure instead of this tree's (to compare two in
// alternation):
//
//	go test -run '^$' -bench GatewayStdio -benchtime 2000x ./cmd/tollgate
func BenchmarkGatewayStdio(b *testing.B) {
	tg := os.Getenv("TOLLGATE_BENCH_BINARY")
	if tg == "" {
		tg = tollgateBinary(b)
	}
	dir := b.TempDir()
	file := apWriteB(b, dir)
	server := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "TOLLGATE_TEST_MCP_SERVER=badtool")
		return cmd
	}
	for _, env := range []string{"default", "GOGC=100"} {
		b.Run(env, func(b *testing.B) {
			direct := commandClient(b, server())
			gw := exec.Command(tg, "gateway", "--mcp", file)
			gw.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return len(kv) > 5 && kv[:5] == "GOGC=" })
			if env != "default" {
				gw.Env = append(gw.Env, env)
			}
			gateway := commandClient(b, gw)
			rcmd := exec.Command(os.Args[0])
			rcmd.Env = append(os.Environ(), "TOLLGATE_TEST_MCP_SERVER=relay")
			relay := commandClient(b, rcmd)
			params := &mcp.CallToolParams{Name: "good", Arguments: map[string]any{}}
			var ld, lr, lg []time.Duration
			cpu0 := processCPU(b, gw.Process.Pid)
			b.ResetTimer()
			for range b.N {
				for _, c := range []struct {
					cs  *mcp.ClientSession
					lat *[]time.Duration
				}{{direct, &ld}, {relay, &lr}, {gateway, &lg}} {
					start := time.Now()
					res, err := c.cs.CallTool(b.Context(), params)
					*c.lat = append(*c.lat, time.Since(start))
					if err != nil || res.IsError {
						b.Fatalf("good: %+v, %v", res, err)
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(float64((processCPU(b, gw.Process.Pid)-cpu0).Microseconds())/float64(b.N), "gateway-cpu-µs")
			p50 := func(l []time.Duration) float64 {
				slices.Sort(l)
				return float64(l[len(l)/2].Nanoseconds()) / 1e3
			}
			d, r, g := p50(ld), p50(lr), p50(lg)
			b.ReportMetric(d, "direct-µs")
			b.ReportMetric(r, "relay-µs")
			b.ReportMetric(r-d, "hop-µs")
			b.ReportMetric(g, "gateway-µs")
			b.ReportMetric(g-d, "overhead-µs")
			b.ReportMetric(0.1*d+200, "target-µs")
			b.ReportMetric(g/d, "gateway/direct")
		})
	}
}

// apWriteB writes the mcp.json of one server, app: this test binary
// serving good (mcpTestServer, mode badtool), unconfined.
func apWriteB(b *testing.B, dir string) string {
	p := dir + "/mcp.json"
	src := `{"mcpServers": {"app": {"command": "` + os.Args[0] + `", "sandbox": "off", "env": {"TOLLGATE_TEST_MCP_SERVER": "badtool"}}}}`
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		b.Fatal(err)
	}
	return p
}

// processCPU is the CPU time (user and system) process pid has used, from
// /proc/PID/stat, in clock ticks of 10 ms.
func processCPU(b *testing.B, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command's name, which ends with the last ')':
	// state is the first, utime the 12th and stime the 13th.
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%d/stat: %q", pid, data)
	}
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// commandClient starts cmd as a stdio MCP server and connects to it.
func commandClient(b *testing.B, cmd *exec.Cmd) *mcp.ClientSession {
	cmd.Stderr = io.Discard
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(b.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.Close() })
	return cs
}

// relayProcess makes the test binary a relay (TOLLGATE_TEST_MCP_SERVER=relay):
// it starts itself as the test server (mode badtool) and copies its stdin
// to the server's and the server's stdout to its own, then exits with it.
func relayProcess() {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "TOLLGATE_TEST_MCP_SERVER=badtool")
	in, err := cmd.StdinPipe()
	if err != nil {
		os.Exit(1)
	}
	out, err := cmd.StdoutPipe()
	if err != nil || cmd.Start() != nil {
		os.Exit(1)
	}
	go func() { _, _ = io.Copy(in, os.Stdin); _ = in.Close() }()
	_, _ = io.Copy(os.Stdout, out)
	_ = cmd.Wait()
	os.Exit(0)
}
