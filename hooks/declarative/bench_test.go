package declarative

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/hooks"
)

// benchHooks returns 100 hooks, half PRE_TOOL_USE and half POST_TOOL_USE, with
// matchers of every shape (exact names, prefixes, suffixes, infixes); none of
// them matches "file_write" unless all is set.
func benchHooks(all bool) []Config {
	var cfgs []Config
	for i := range 100 {
		ev := PreToolUse
		if i%2 == 1 {
			ev = PostToolUse
		}
		var m Matcher
		switch i % 4 {
		case 0:
			m = Matcher(fmt.Sprintf("file_write_%d", i)) // same prefix, longer
		case 1:
			m = Matcher(fmt.Sprintf("file_%d_*", i)) // same prefix, then differs
		case 2:
			m = Matcher(fmt.Sprintf("*_write%d", i)) // suffix
		case 3:
			m = Matcher(fmt.Sprintf("mcp__srv%d__*", i)) // other prefix
		}
		if all {
			m = "FILE_*"
		}
		cfgs = append(cfgs, Config{Event: ev, Matcher: m, Action: Log("${tool} took ${latencyMs} ms")})
	}
	return cfgs
}

// benchCall is one tool call as the agent reports it: PreToolUse, then
// PostToolUse.
func benchCall(b *testing.B, r *Registry) {
	ctx := context.Background()
	pre := &hooks.ToolUse{Tool: "file_write", Args: json.RawMessage(`{"path":"a.txt"}`), CallID: "c1", Turn: 1, AgentID: "a", RunID: "r"}
	post := *pre
	post.Latency, post.Success, post.OutputSize = time.Millisecond, true, 10
	b.ReportAllocs()
	for b.Loop() {
		r.Listener().PreToolUse(ctx, pre)
		r.Listener().PostToolUse(ctx, &post)
	}
}

// Target: under 1 µs and 0 allocs per call.
func BenchmarkToolCall100HooksNoneMatch(b *testing.B) {
	benchCall(b, Of(benchHooks(false), nil))
}

// 100 log hooks that all match, to a logger that discards (slog.DiscardHandler):
// the registry sees that INFO is off and does no work per hook.
func BenchmarkToolCall100LogHooksAllMatchDiscardHandler(b *testing.B) {
	benchCall(b, Of(benchHooks(true), &Options{Logger: slog.New(slog.DiscardHandler)}))
}

// The same with a handler that formats every record and writes it to
// io.Discard: the real cost of 100 log actions.
func BenchmarkToolCall100LogHooksAllMatchTextToDiscard(b *testing.B) {
	benchCall(b, Of(benchHooks(true), &Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
}
