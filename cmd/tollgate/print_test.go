package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

func TestSafeText(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain\ttext\n":             "plain\ttext\n",
		"hi\x1b[2K\r\x1b[1Afake":    `hi\x1b[2K\x0d\x1b[1Afake`,
		"bell\x07 del\x7f c1\u009b": `bell\x07 del\x7f c1\x9b`,
		"é ✓":                       "é ✓",
		"a\u200bb\u200cc\u200dd\u200ee\u200ff\u2060g\ufeffh": `a\u{200b}b\u{200c}c\u{200d}d\u{200e}e\u{200f}f\u{2060}g\u{feff}h`,
	} {
		if got := safeText(in); got != want {
			t.Errorf("safeText(%q) = %q, want %q", in, got, want)
		}
	}
}

// Model text and tool output reach the terminal without control sequences,
// and arguments are shown as written ("&&", not "\u0026\u0026").
func TestRunOutputIsTerminalSafe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "s.yaml")
	os.WriteFile(script, []byte("turns:\n  - text: \"hello\\e[2K\\r\\e[1A\\e[31mFAKE\"\n    toolCalls:\n      - name: bash\n        args: {command: \"printf '\\\\033[31mred' && true\"}\n  - text: done\n"), 0o644)
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"run", "--model", "script:" + script, "--workdir", dir, "x"}, strings.NewReader(""), &out, &errb)
	if code != exitDone {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	if strings.ContainsAny(out.String(), "\x1b\r") {
		t.Errorf("control characters reached the terminal: %q", out.String())
	}
	for _, want := range []string{`hello\x1b[2K\x0d\x1b[1A\x1b[31mFAKE`, `&& true`, `<- ok (8 bytes): \x1b[31mred`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// A policy's relative pathPrefix covers the absolute spelling of the same
// workspace file: run gives the policy its --workdir.
func TestPolicyPathsResolveAgainstWorkdir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(filepath.Join(ws, "secret"), 0o755)
	os.WriteFile(filepath.Join(ws, "secret", "a.txt"), []byte("s"), 0o644)
	pol := filepath.Join(dir, "p.yaml")
	os.WriteFile(pol, []byte("rules:\n  - id: no-secret\n    args: {path: {pathPrefix: secret}}\n    decision: deny\n    reason: no\n"), 0o644)
	script := filepath.Join(dir, "s.yaml")
	os.WriteFile(script, []byte("turns:\n  - toolCalls:\n      - name: read\n        args: {path: "+filepath.Join(ws, "secret", "a.txt")+"}\n  - text: done\n"), 0o644)
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"run", "--model", "script:" + script, "--workdir", ws, "--policy", pol, "x"}, strings.NewReader(""), &out, &errb)
	if code != exitDone || !strings.Contains(out.String(), "denied by rule:no-secret") {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	// The workspace given through a symbolic link: every spelling is denied.
	link := filepath.Join(dir, "link")
	os.Symlink(ws, link)
	os.WriteFile(script, []byte("turns:\n  - toolCalls:\n"+
		"      - {name: read, args: {path: "+filepath.Join(link, "secret", "a.txt")+"}}\n"+
		"      - {name: read, args: {path: "+filepath.Join(ws, "secret", "a.txt")+"}}\n"+
		"      - {name: read, args: {path: secret/a.txt}}\n  - text: done\n"), 0o644)
	out.Reset()
	code = Main(context.Background(), []string{"run", "--model", "script:" + script, "--workdir", link, "--policy", pol, "x"}, strings.NewReader(""), &out, &errb)
	if n := strings.Count(out.String(), "denied by rule:no-secret"); code != exitDone || n != 6 { // decision and result line for each
		t.Fatalf("exit %d, %d denial lines, want 6:\n%s", code, n, out.String())
	}
}

// --approval-ttl makes approval requests expire: an approval given too late is
// refused, and resume gives the model the expiry instead of running the call.
func TestApprovalTTL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := func(name string) string { return filepath.Join(dir, name) }
	os.WriteFile(in("p.yaml"), []byte("rules:\n  - id: ask-bash\n    tool: bash\n    decision: ask\n    reason: r\n"), 0o644)
	os.WriteFile(in("s.yaml"), []byte("turns:\n  - toolCalls:\n      - name: bash\n        args: {command: \"echo ran >> ran.txt\"}\n  - text: done\n"), 0o644)
	run := func(args ...string) (int, string) {
		code, out, errOut := tgMainIn(t, dir, nil, args...)
		return code, out + errOut
	}
	code, out := run("run", "--model", "script:s.yaml", "--workdir", ".", "--policy", "p.yaml", "--approval-ttl", "1ns", "x")
	if code != exitPending {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	req := regexp.MustCompile(`approvals approve (req_[0-9a-f]+)`).FindStringSubmatch(out)
	runID := regexp.MustCompile(`resume (run_[0-9a-f]+)`).FindStringSubmatch(out)
	if req == nil || runID == nil {
		t.Fatalf("no request or run ID in:\n%s", out)
	}
	if code, out := run("approvals", "approve", req[1]); code == 0 || !strings.Contains(out, "expired") {
		t.Fatalf("late approval: exit %d\n%s", code, out)
	}
	code, out = run("resume", runID[1])
	if code != exitDone || !strings.Contains(out, "expired") {
		t.Fatalf("resume: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(in("ran.txt")); err == nil {
		t.Error("the expired request's call ran")
	}
	if code, _ := run("approvals", "list", "--status", "bogus"); code != exitUsage {
		t.Errorf("approvals list --status bogus: exit %d, want %d", code, exitUsage)
	}
}

// policy check warns about rules that can never match a tool or an argument
// tollgate run offers.
func TestPolicyCheckLint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := filepath.Join(dir, "p.yaml")
	os.WriteFile(f, []byte("rules:\n  - id: typo\n    tool: bassh\n    decision: deny\n    reason: x\n  - id: wrong-arg\n    tool: bash\n    args: {cmd: {regex: rm}}\n    decision: deny\n    reason: x\n  - id: fine\n    tool: [edit, \"mcp__*\"]\n    args: {path: {prefix: /etc}}\n    decision: deny\n    reason: x\n"), 0o644)
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"policy", "check", f}, strings.NewReader(""), &out, &errb)
	want := []string{
		f + `:2:5: warning: rule "typo": tool "bassh" matches no builtin tool`,
		f + `:6:5: warning: rule "wrong-arg": argument "cmd" is not an argument of bash`,
		"ok: 3 rule(s)",
	}
	for _, w := range want {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, out.String())
		}
	}
	if code != 0 || strings.Contains(out.String(), `rule "fine"`) {
		t.Errorf("exit %d (warnings only: want 0); output:\n%s", code, out.String())
	}
}

// An unusable --state-dir is a usage error before any call runs.
func TestStateDirCheckedFirst(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := func(name string) string { return filepath.Join(dir, name) }
	os.Mkdir(in("ws"), 0o755)
	os.WriteFile(in("afile"), []byte("x"), 0o644)
	// One turn: an allowed call with a side effect, and a call that asks.
	os.WriteFile(in("s.yaml"), []byte("turns:\n  - toolCalls:\n      - {name: bash, args: {command: \"echo x > side.txt\"}}\n      - {name: write, args: {path: w.txt, content: x}}\n  - text: done\n"), 0o644)
	os.WriteFile(in("p.yaml"), []byte("rules:\n  - id: ask-write\n    tool: write\n    decision: ask\n"), 0o644)
	run := func(stateDir string) (int, string) {
		code, out, errOut := tgMainIn(t, dir, nil, "run", "--model", "script:s.yaml", "--workdir", "ws", "--policy", "p.yaml", "--state-dir", stateDir, "x")
		return code, out + errOut
	}
	if code, out := run("afile"); code != exitUsage || !strings.Contains(out, "not a directory") {
		t.Fatalf("state dir is a file: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(in("ws/side.txt")); err == nil {
		t.Fatal("a call ran before the state dir was found unusable")
	}
	os.MkdirAll(in("bad"), 0o755)
	os.WriteFile(in(filepath.Join("bad", "tollgate.db")), []byte("this is not a database, not at all, no"), 0o644)
	if code, out := run("bad"); code != exitUsage {
		t.Fatalf("corrupt store: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(in("ws/side.txt")); err == nil {
		t.Fatal("a call ran before the store was found unusable")
	}
	if code, out := run(filepath.Join("fresh", "state")); code != exitPending {
		t.Fatalf("fresh state dir: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(in("ws/side.txt")); err != nil {
		t.Fatal("with a usable state dir the allowed call should have run")
	}
}

// A question given up on (its context ended) does not swallow the answer
// typed for the next one.
func TestTerminalWaitAfterCancel(t *testing.T) {
	t.Parallel()
	pr, pw := io.Pipe()
	var prompts bytes.Buffer
	wait := terminalWait(pr, &prompts, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := wait(ctx, tool.Request{ID: "r1", Prompt: "first?"}); err == nil {
		t.Fatal("a cancelled question was answered")
	}
	go pw.Write([]byte("a\n"))
	ans, err := wait(context.Background(), tool.Request{ID: "r2", Prompt: "second?"})
	if err != nil || !ans.OK || ans.ID != "r2" {
		t.Fatalf("second question: %+v, %v", ans, err)
	}
	pw.Close()
}

func TestOneLineKeepsCharactersWhole(t *testing.T) {
	t.Parallel()
	s := strings.Repeat("日本語", 100)
	got := oneLine(s, 200)
	if !utf8.ValidString(got) || len(got) > 200+len("…") {
		t.Errorf("oneLine cut a character or overran: %q", got)
	}
}

// While the terminal asks about one call, the event lines of the calls
// running beside it wait, and follow the answer in their order: they never
// break into the prompt.
func TestEventLinesWaitForThePrompt(t *testing.T) {
	t.Parallel()
	var term syncBuffer // the terminal: prompts and event lines together
	hold := &termHold{}
	p := &printer{w: &term, hold: hold}
	pr, pw := io.Pipe()
	wait := terminalWait(pr, &term, hold)
	asked := make(chan struct{})
	answered := make(chan tool.Answer, 1)
	go func() {
		ans, err := wait(context.Background(), tool.Request{ID: "r1", Kind: tool.KindApproval, Prompt: "Allow write?"})
		if err != nil {
			t.Error(err)
		}
		answered <- ans
	}()
	go func() {
		for !strings.Contains(term.String(), "[a]pprove") {
			runtime.Gosched()
		}
		close(asked)
	}()
	<-asked
	p.event(agent.Event{Kind: agent.EventToolCall, Call: &model.ToolCall{ID: "call_2", Name: "read", Arguments: json.RawMessage(`{"path":"x"}`)}})
	if strings.Contains(term.String(), "-> read") {
		t.Fatalf("an event line was printed into the open prompt:\n%s", term.String())
	}
	pw.Write([]byte("a\n"))
	if ans := <-answered; !ans.OK {
		t.Fatalf("answer %+v", ans)
	}
	out := term.String()
	if i, j := strings.Index(out, "[a]pprove"), strings.Index(out, "-> read"); j < 0 || j < i {
		t.Fatalf("the held line should follow the prompt once answered:\n%s", out)
	}
	pw.Close()
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A notice (an MCP server restarted during a call) is printed under its
// call, every field escaped.
func TestPrintNotice(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	p := &printer{w: &b}
	p.event(agent.Event{Kind: agent.EventToolCall, Call: &model.ToolCall{ID: "c1", Name: "mcp__x__t", Arguments: []byte("{}")}})
	p.event(agent.Event{Kind: agent.EventNotice, CallID: "c1", Notice: &tool.Notice{Kind: "restart", Source: "mcp:x", Message: "MCP server \"x\" was started again\x1b[2J"}})
	want := "   [mcp__x__t c1] restart mcp:x: MCP server \"x\" was started again\\x1b[2J\n"
	if got := b.String(); !strings.HasSuffix(got, want) {
		t.Fatalf("printed %q, want it to end with %q", got, want)
	}
}
