package declarative

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tollgate-dev/tollgate/internal/bounded"
	"github.com/tollgate-dev/tollgate/internal/proc"
)

// Limits of the standard executor.
const (
	// logPrefix starts every message of a log action (seed 000: "prefixed
	// with [HOOK]").
	logPrefix = "[HOOK] "
	// maxOutputLines is how many lines of a failing command's output are
	// logged (seed 000: "up to 50 lines of output").
	maxOutputLines = 50
	// outputLimit is how many bytes of a command's combined stdout and stderr
	// are kept; the rest is read and dropped, so a command that prints without
	// end never blocks.
	outputLimit = 64 << 10
	// envValueLimit is the longest value, in bytes, put in a TOLLGATE_*
	// environment variable; a longer one is cut there (stdin has it up to
	// stdinValueLimit).
	envValueLimit = 32 << 10
	// logMessageLimit is the longest message a log action writes, in bytes
	// after expansion; a longer one is cut with a marker "…[N of M bytes cut]".
	logMessageLimit = 16 << 10
	// stdinValueLimit bounds each value of the JSON context on a command's
	// stdin, in bytes of JSON: a larger value (a model's huge arguments, a
	// long error) is replaced by its text, cut with the same marker, as a
	// JSON string.
	stdinValueLimit = 1 << 20
)

type executor struct {
	log     *slog.Logger
	passEnv []string
	sandbox func(cmd *exec.Cmd) (bool, error)
	// sandboxNote is said of a sandboxed command whose output shows a refusal.
	sandboxNote string
	dir         string // the commands' working directory; empty: the process's
}

func newExecutor(logger *slog.Logger) *executor {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &executor{log: logger.With("logger", executorLoggerName)}
}

// Execute implements [Executor].
func (x *executor) Execute(ctx context.Context, action Action, hctx map[string]any) {
	name := hookSource(ctx)
	if name == "" {
		name = action.describe()
	}
	x.execute(ctx, name, action, hctx)
}

func (x *executor) execute(ctx context.Context, name string, action Action, hctx map[string]any) {
	switch action.Type {
	case ActionLog:
		if x.log.Enabled(ctx, slog.LevelInfo) {
			x.log.InfoContext(ctx, logPrefix+bounded.Cut(Expand(action.Message, hctx), logMessageLimit))
		}
	case ActionCommand:
		x.command(ctx, name, action, hctx)
	default:
		x.log.WarnContext(ctx, "hook action of unknown type skipped", "hook", name, "type", action.Type.String())
	}
}

func (x *executor) command(ctx context.Context, name string, action Action, hctx map[string]any) {
	if err := ctx.Err(); err != nil {
		x.log.WarnContext(ctx, "hook command not started: the run is canceled", "hook", name, "err", err)
		return
	}
	timeout := action.timeout()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var cmd *exec.Cmd
	if action.Argv != nil {
		argv := make([]string, len(action.Argv))
		for i, a := range action.Argv {
			argv[i] = noNUL(Expand(a, hctx))
		}
		cmd = exec.CommandContext(cctx, argv[0], argv[1:]...)
	} else {
		cmd = exec.CommandContext(cctx, "sh", "-c", noNUL(Expand(action.Command, hctx)))
	}
	cmd.Dir = x.dir
	proc.PrepareSession(cmd)
	cmd.Env = append(proc.Env(os.Environ(), x.passEnv), environ(hctx)...)
	killed := "its process group was killed (processes that left it with setsid are not reached)"
	if x.sandbox != nil {
		tree, err := x.sandbox(cmd)
		if err != nil {
			x.log.WarnContext(ctx, "hook command not started: sandbox", "hook", name, "err", err.Error())
			return
		}
		if tree {
			killed = "it and every process it started were killed"
		}
	}
	cmd.Stdin = bytes.NewReader(stdinJSON(hctx))
	out := proc.NewLimitedBuffer(outputLimit)
	cmd.Stdout, cmd.Stderr = out, out
	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start)
	attrs := []any{"hook", name, "elapsed", elapsed.Round(time.Millisecond)}
	switch {
	case err == nil:
		x.log.DebugContext(ctx, "hook command finished", attrs...)
		return
	case ctx.Err() != nil:
		x.log.WarnContext(ctx, "hook command canceled with the run; "+killed, append(attrs, "output", outputLines(out))...)
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		x.log.WarnContext(ctx, fmt.Sprintf("hook command timed out after %s; %s", timeout, killed), append(attrs, "output", outputLines(out))...)
	default:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			msg := "hook command " + exitText(ee)
			if x.sandbox != nil && x.sandboxNote != "" && proc.Refused(out.String()) {
				msg += " (" + x.sandboxNote + ")"
			}
			x.log.WarnContext(ctx, msg, append(attrs, "output", outputLines(out))...)
		} else {
			x.log.WarnContext(ctx, "hook command failed to run", append(attrs, "err", err.Error())...)
		}
	}
}

// exitText says how a command ended: "exited with status 3", "was killed
// by signal SIGKILL", or "exited with status 137 (128+9: signal SIGKILL)"
// for the status a shell or the sandbox's helper gives a command that a
// signal killed (ExitCode alone says -1 for a signal).
func exitText(ee *exec.ExitError) string {
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "was killed by signal " + signalName(ws.Signal())
	}
	code := ee.ExitCode()
	if code > 128 && code < 128+65 {
		return fmt.Sprintf("exited with status %d (128+%d: signal %s)", code, code-128, signalName(syscall.Signal(code-128)))
	}
	return fmt.Sprintf("exited with status %d", code)
}

// signalName is the signal's name ("SIGKILL"), or its number when it has
// none.
func signalName(s syscall.Signal) string {
	if n := unix.SignalName(s); n != "" {
		return n
	}
	return fmt.Sprintf("%d", int(s))
}

// outputLines returns up to maxOutputLines lines of what was captured, with a
// note of what was left out.
func outputLines(b *proc.LimitedBuffer) string {
	s := strings.TrimRight(b.String(), "\n")
	lines := strings.Split(s, "\n")
	var note string
	if len(lines) > maxOutputLines {
		note = fmt.Sprintf("\n… %d more lines", len(lines)-maxOutputLines)
		lines = lines[:maxOutputLines]
	}
	if d := b.Dropped(); d > 0 {
		note += fmt.Sprintf("\n… %d more bytes not kept", d)
	}
	return strings.Join(lines, "\n") + note
}

// noNUL replaces NUL bytes, which no argument or environment value can carry.
func noNUL(s string) string {
	if strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

// environ returns the context as environment variables, "NAME=value", sorted
// by key: each key becomes TOLLGATE_ and the key in upper snake case
// (callId: TOLLGATE_CALL_ID, latencyMs: TOLLGATE_LATENCY_MS; '-' and '.' become
// '_'), and each value is formatted by [FormatValue], with NUL bytes replaced
// by U+FFFD and cut at envValueLimit bytes. A key with any other character is
// left out (stdin still has it). Values are data: the command reads them from
// its environment, and no shell parses them unless the command asks it to.
func environ(hctx map[string]any) []string {
	keys := make([]string, 0, len(hctx))
	for k := range hctx {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		name, ok := envName(k)
		if !ok {
			continue
		}
		v := noNUL(FormatValue(hctx[k]))
		if len(v) > envValueLimit {
			v = v[:envValueLimit]
		}
		out = append(out, name+"="+v)
	}
	return out
}

// envName returns the environment variable that carries the context key
// ("runId": "TOLLGATE_RUN_ID"), and false when the key has a character other
// than ASCII letters, digits, '_', '-' and '.', or is empty.
func envName(key string) (string, bool) {
	if key == "" {
		return "", false
	}
	var b strings.Builder
	b.WriteString("TOLLGATE_")
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case 'A' <= c && c <= 'Z':
			if i > 0 {
				if p := key[i-1]; 'a' <= p && p <= 'z' || '0' <= p && p <= '9' {
					b.WriteByte('_')
				}
			}
			b.WriteByte(c)
		case 'a' <= c && c <= 'z':
			b.WriteByte(c - 'a' + 'A')
		case '0' <= c && c <= '9', c == '_':
			b.WriteByte(c)
		case c == '-' || c == '.':
			b.WriteByte('_')
		default:
			return "", false
		}
	}
	return b.String(), true
}

// stdinJSON encodes the context as one JSON object. A json.RawMessage value
// (args) is embedded as JSON when it is valid; any value that does not encode
// is given as its FormatValue string.
func stdinJSON(hctx map[string]any) []byte {
	m := make(map[string]json.RawMessage, len(hctx))
	for k, v := range hctx {
		b, err := json.Marshal(v)
		if err != nil {
			b, _ = json.Marshal(FormatValue(v))
		}
		if len(b) > stdinValueLimit {
			b, _ = json.Marshal(bounded.Cut(FormatValue(v), stdinValueLimit))
		}
		m[k] = b
	}
	b, err := json.Marshal(m)
	if err != nil {
		return []byte("{}")
	}
	return b
}
