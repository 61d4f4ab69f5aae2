package declarative_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/hooks/declarative"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// The Go twin of seed 000's ServerHooksExample.

// fromFile loads a hooks file and attaches it to the agent.
func fromFile(ctx context.Context, a *agent.Agent, hooksYAML string, opts *declarative.Options) (*declarative.Registry, error) {
	hooks, err := declarative.Load(hooksYAML, opts) // fails only when the file cannot be opened; bad entries are skipped
	if err != nil {
		return nil, err
	}
	hooks.ApplyTo(ctx, a) // replaces the agent's tool call listener
	return hooks, nil
}

// inCode builds the hooks in Go.
func inCode(ctx context.Context, a *agent.Agent, opts *declarative.Options) *declarative.Registry {
	hooks := declarative.Of([]declarative.Config{
		{Event: declarative.PreToolUse, Matcher: "file_*", Action: declarative.Log("${tool} starting")},
		{Event: declarative.PostToolUse, Matcher: declarative.MatchAll, Action: declarative.Log("${tool} took ${latencyMs} ms, success=${success}")},
		{Event: declarative.OnError, Action: declarative.Command("echo tool failed >> hooks.log")},
	}, opts)
	hooks.ApplyTo(ctx, a) // fires ON_START once
	return hooks
}

// stop fires ON_STOP: the registry never fires it.
func stop(ctx context.Context, hooks *declarative.Registry, a *agent.Agent) {
	hooks.FireEvent(ctx, declarative.OnStop, map[string]any{"agent": a.ID()})
}

// recorded sends every matching hook to sink instead of running it.
func recorded(sink *[]string) *declarative.Registry {
	return declarative.Of(
		[]declarative.Config{{Event: declarative.PostToolUse, Matcher: declarative.MatchAll, Action: declarative.Log("${tool}")}},
		&declarative.Options{Executor: declarative.ExecutorFunc(func(ctx context.Context, action declarative.Action, hctx map[string]any) {
			*sink = append(*sink, action.Type.String()+" "+format(hctx)) // your own executor
		})})
}

// format prints a context with sorted keys, leaving out the run ID and the
// latency, which change from run to run.
func format(hctx map[string]any) string {
	var parts []string
	for k, v := range hctx {
		if k != "runId" && k != "latencyMs" {
			parts = append(parts, k+"="+declarative.FormatValue(v))
		}
	}
	slices.Sort(parts)
	return "{" + strings.Join(parts, ", ") + "}"
}

func Example() {
	ctx := context.Background()
	newAgent := func() *agent.Agent {
		calls := 0
		m := model.Func(func(ctx context.Context, req *model.Request) (model.Reply, error) {
			if calls++; calls == 1 {
				return model.Reply{ToolCalls: []model.FuncCall{{ID: "c1", Name: "file_read", Arguments: map[string]string{"path": "notes.txt"}}}}, nil
			}
			return model.Reply{Content: "done"}, nil
		})
		read := tool.Must("file_read", "Read a file.", func(ctx context.Context, in struct {
			Path string `json:"path"`
		}) (string, error) {
			return "contents of " + in.Path, nil
		}, nil)
		a, _ := agent.New(&agent.Options{ID: "docs", Model: m, Tools: agent.ToolList{read}})
		return a
	}
	// Log records go to stdout without timestamps, and with the latency
	// masked, so that the output is stable.
	took := regexp.MustCompile(`took \d+ ms`)
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		switch a.Key {
		case slog.TimeKey, "logger":
			return slog.Attr{}
		case slog.MessageKey:
			return slog.String(a.Key, took.ReplaceAllString(a.Value.String(), "took N ms"))
		}
		return a
	}}))
	opts := &declarative.Options{Logger: logger}

	// From a file.
	dir, _ := os.MkdirTemp("", "hooks")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "hooks.yaml")
	_ = os.WriteFile(path, []byte(`hooks:
  - event: preToolUse
    matcher: "file_*"
    action:
      type: log
      message: "${tool} starting"
  - event: onStart
    action: {type: log, message: "hooks on ${agent}"}
`), 0o600)
	a := newAgent()
	fileHooks, _ := fromFile(ctx, a, path, opts)
	_, _ = a.Run(ctx, "read my notes")
	fmt.Println(len(fileHooks.Hooks()), "hooks from the file")

	// In code.
	a = newAgent()
	codeHooks := inCode(ctx, a, opts)
	_, _ = a.Run(ctx, "read my notes")
	stop(ctx, codeHooks, a)

	// Recorded by your own executor.
	var sink []string
	a = newAgent()
	recorded(&sink).ApplyTo(ctx, a)
	_, _ = a.Run(ctx, "read my notes")
	fmt.Println(strings.Join(sink, "\n"))
	// Output:
	// level=INFO msg="[HOOK] hooks on docs"
	// level=INFO msg="[HOOK] file_read starting"
	// 2 hooks from the file
	// level=INFO msg="[HOOK] file_read starting"
	// level=INFO msg="[HOOK] file_read took N ms, success=true"
	// log {agent=docs, args={"path":"notes.txt"}, callId=c1, error=, event=POST_TOOL_USE, outputSize=21, success=true, tool=file_read, turn=1}
}

func ExampleFromYAML() {
	hooks := declarative.FromYAML(strings.NewReader(`hooks:
  - event: preToolUse
    matcher: "file_*"
    action: {type: log, message: "${tool} starting"}
  - event: onError
    action:
      type: command
      command: echo failed #1
  - event: afterToolUse
    action: {type: log, message: hi}
`), &declarative.Options{File: "hooks.yaml"})
	for _, h := range hooks.Hooks() {
		fmt.Println("loaded:", h)
	}
	for _, d := range hooks.Diagnostics() {
		fmt.Println(d)
	}
	// Output:
	// loaded: hooks.yaml:2:5 PRE_TOOL_USE file_* log "${tool} starting"
	// loaded: hooks.yaml:5:5 ON_ERROR command "echo failed"
	// hooks.yaml:8:16: warning: hook 2: command is "echo failed": the rest of the line, "#1", is a YAML comment and was dropped; quote the whole value to keep it
	// hooks.yaml:9:12: warning: skipped hook 3: unknown event "afterToolUse" (want one of preToolUse, postToolUse, onStart, onStop, onError, or the same in UPPER_SNAKE case)
}
