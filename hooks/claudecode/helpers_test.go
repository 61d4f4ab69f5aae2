package claudecode_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/hooks/claudecode"
	"github.com/tollgate-dev/tollgate/model/scripted"
	"github.com/tollgate-dev/tollgate/toolkit"
)

// hookbot is the Go fixture hook, built once for the whole package (on
// first use, so that fuzzing workers never build it).
var (
	hookbotOnce sync.Once
	hookbot     string
	hookbotErr  error
	hookbotDir  string
)

func buildHookbot(t *testing.T) string {
	t.Helper()
	hookbotOnce.Do(func() {
		hookbotDir, hookbotErr = os.MkdirTemp("", "claudecode-test")
		if hookbotErr != nil {
			return
		}
		hookbot = filepath.Join(hookbotDir, "hookbot")
		if out, err := exec.Command("go", "build", "-o", hookbot, "./testdata/hookbot").CombinedOutput(); err != nil {
			hookbotErr = fmt.Errorf("building testdata/hookbot: %v\n%s", err, out)
		}
	})
	if hookbotErr != nil {
		t.Fatal(hookbotErr)
	}
	return hookbot
}

func TestMain(m *testing.M) {
	code := m.Run()
	if hookbotDir != "" {
		os.RemoveAll(hookbotDir)
	}
	os.Exit(code)
}

// workspace returns a fresh workspace with a few files.
func workspace(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{"notes.txt": "hello\n", ".env": "TOKEN=x\n", "go.sum": "sum\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// settings parses a settings document after replacing $BOT (the Go fixture),
// $TD (this package's testdata directory) and $WS (the workspace).
func settings(t *testing.T, ws, doc string) *claudecode.Settings {
	t.Helper()
	td, _ := filepath.Abs("testdata")
	doc = strings.NewReplacer("$BOT", buildHookbot(t), "$TD", td, "$WS", ws).Replace(doc)
	s := claudecode.Parse([]byte(doc), "settings.json")
	for _, d := range s.Diagnostics {
		t.Logf("%s", d)
	}
	if len(s.Handlers()) == 0 {
		t.Fatalf("no handlers loaded from %s", doc)
	}
	return s
}

// logBuffer collects log lines.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// harness runs a scripted agent over the builtins of ws with the settings'
// hooks.
type harness struct {
	ws       string
	s        *claudecode.Settings
	opts     claudecode.Options
	policy   approval.Authorizer
	maxTurns int
	finals   int // final answers in the script (default 1)
	logs     logBuffer
}

func newHarness(t *testing.T, doc string) *harness {
	ws := workspace(t)
	return &harness{ws: ws, s: settings(t, ws, doc)}
}

// call is a tool call of a script turn.
func call(name string, args map[string]any) scripted.ToolCall {
	return scripted.ToolCall{Name: name, Args: args}
}

// run runs the agent on prompt with one turn per element of turns (each a
// list of calls), then the final answer "finished".
func (h *harness) run(t *testing.T, prompt string, turns ...[]scripted.ToolCall) (*agent.Result, error) {
	t.Helper()
	var s scripted.Script
	for i, calls := range turns {
		for j := range calls {
			calls[j].ID = fmt.Sprintf("call_%d_%d", i+1, j+1)
		}
		s.Turns = append(s.Turns, scripted.Turn{ToolCalls: calls})
	}
	for range max(h.finals, 1) {
		s.Turns = append(s.Turns, scripted.Turn{Text: "finished"})
	}
	tk, err := toolkit.New(&toolkit.Options{Workdir: h.ws, Unconfined: true})
	if err != nil {
		t.Fatal(err)
	}
	o := h.opts
	o.ProjectDir = h.ws
	o.Logger = slog.New(slog.NewTextHandler(&h.logs, nil))
	c, err := claudecode.New(h.s, &o)
	if err != nil {
		t.Fatal(err)
	}
	opts := agent.Options{Model: scripted.New("test", s), Tools: tk, Hooks: c.Register(&hooks.Hooks{}), MaxTurns: h.maxTurns}
	if h.policy != nil {
		opts.Authorizers = []approval.Authorizer{h.policy}
	}
	a, err := agent.New(&opts)
	if err != nil {
		t.Fatal(err)
	}
	return a.Run(context.Background(), prompt)
}

// bash is a bash tool call.
func bash(cmd string) []scripted.ToolCall {
	return []scripted.ToolCall{call("bash", map[string]any{"command": cmd})}
}

// exists reports whether the workspace file exists.
func (h *harness) exists(name string) bool {
	_, err := os.Stat(filepath.Join(h.ws, name))
	return err == nil
}

func (h *harness) read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(h.ws, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
